"""Provider trees: which providers hang below a given one.

Every provider records its tree's root, so one query reads a whole tree and the walk happens here.
"""

from __future__ import annotations

from collections import defaultdict

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from berth.placement.store.schema import resource_providers


def descendant_ids(conn: Connection, root_id: int, provider_id: int) -> set[int]:
    """Ids of every provider below ``provider_id`` in the tree rooted at ``root_id``."""
    rp = resource_providers
    rows = conn.execute(
        sa.select(rp.c.id, rp.c.parent_provider_id).where(rp.c.root_provider_id == root_id)
    )
    children: dict[int, list[int]] = defaultdict(list)
    for child, parent in rows:
        if parent is not None:
            children[parent].append(child)
    found: set[int] = set()
    waiting = list(children[provider_id])
    while waiting:
        current = waiting.pop()
        if current not in found:
            found.add(current)
            waiting.extend(children[current])
    return found
