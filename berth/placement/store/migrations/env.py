"""Alembic environment for the placement database; run through ``berth.placement.store.migrate``."""

from alembic import context

from berth.placement.store.schema import metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=True,
    version_table=context.config.attributes["version_table"],
)
with context.begin_transaction():
    context.run_migrations()
