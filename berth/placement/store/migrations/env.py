"""Alembic environment for the placement database; run through ``berth.placement.store.migrate``."""

from berth.common.migrations import run_environment
from berth.placement.store.schema import metadata

run_environment(metadata)
