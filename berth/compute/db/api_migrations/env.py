"""Alembic environment for the compute API database; run through ``berth.compute.db.migrate``."""

from alembic import context

from berth.compute.db.api_schema import metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=True,
    version_table=context.config.attributes["version_table"],
)
with context.begin_transaction():
    context.run_migrations()
