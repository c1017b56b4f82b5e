"""Builds that stopped half way: found by the audit, ended by the recovery."""
