"""Alembic environment for the compute API database; run through ``berth.compute.db.migrate``."""

from berth.common.migrations import run_environment
from berth.compute.db.api_schema import metadata

run_environment(metadata)
