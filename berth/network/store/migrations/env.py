"""Alembic environment for the network database; run through ``berth.network.store.migrate``."""

from berth.common.migrations import run_environment
from berth.network.store.schema import metadata

run_environment(metadata)
