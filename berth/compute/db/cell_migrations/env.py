"""Alembic environment for the compute cell databases; run through ``berth.compute.db.migrate``."""

from berth.common.migrations import run_environment
from berth.compute.db.cell_schema import metadata

run_environment(metadata)
