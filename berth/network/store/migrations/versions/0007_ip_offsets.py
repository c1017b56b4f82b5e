"""Each allocated address's offset in its subnet, so the lowest free address is found in SQL.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27
"""

import ipaddress

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# The offsets a BIGINT holds (berth.network.ipam.OFFSET_LIMIT, written out: a migration stays
# as it was written).
_LIMIT = 2**63


def upgrade() -> None:
    op.add_column("ip_allocations", sa.Column("ip_offset", sa.BigInteger(), nullable=True))
    op.create_index(
        op.f("ix_ip_allocations_subnet_id_ip_offset"), "ip_allocations", ["subnet_id", "ip_offset"]
    )
    conn = op.get_bind()
    rows = conn.execute(
        sa.text(
            "SELECT a.id, a.ip_address, s.cidr FROM ip_allocations a "
            "JOIN subnets s ON s.id = a.subnet_id"
        )
    ).all()
    offsets = [
        {"id": row_id, "offset": offset}
        for row_id, address, cidr in rows
        if (offset := _offset(cidr, address)) is not None
    ]
    if offsets:
        conn.execute(
            sa.text("UPDATE ip_allocations SET ip_offset = :offset WHERE id = :id"), offsets
        )


def _offset(cidr: str, address: str) -> int | None:
    network = ipaddress.ip_network(cidr)
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return None
    if parsed.version != network.version:
        return None
    offset = int(parsed) - int(network.network_address)
    return offset if 0 <= offset < min(network.num_addresses, _LIMIT) else None


def downgrade() -> None:
    op.drop_index(op.f("ix_ip_allocations_subnet_id_ip_offset"), table_name="ip_allocations")
    op.drop_column("ip_allocations", "ip_offset")
