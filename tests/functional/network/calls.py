"""What the network service's functional tests send and check, in one place."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import httpx
from sqlalchemy import event

from berth.common.db import Database


def post_made(client: httpx.Client, path: str, kind: str, **body: Any) -> dict[str, Any]:
    """POST one ``kind`` to ``path``; the resource made (201)."""
    answer = client.post(path, json={kind: body})
    assert answer.status_code == 201, answer.text
    return answer.json()[kind]  # type: ignore[no-any-return]


def neutron_error(answer: httpx.Response, status: int, kind: str) -> str:
    """The message of a refusal with this status and NeutronError type."""
    assert answer.status_code == status, answer.text
    error = answer.json()["NeutronError"]
    assert error["type"] == kind, answer.text
    return str(error["message"])


def two_racks(
    client: httpx.Client, segmentation_id: int = 7, **network: Any
) -> tuple[dict[str, Any], dict[str, str]]:
    """A routed network of two VLAN segments, on physical networks rack1 and rack2: the network
    made, and each physical network's segment id."""
    segments = [
        {"provider:network_type": "vlan", "provider:physical_network": rack,
         "provider:segmentation_id": segmentation_id}
        for rack in ("rack1", "rack2")
    ]  # fmt: skip
    net = post_made(client, "/v2.0/networks", "network", segments=segments, **network)
    found = client.get("/v2.0/segments", params={"network_id": net["id"]}).json()["segments"]
    return net, {s["physical_network"]: s["id"] for s in found}


def bound_answer(client: httpx.Client, port_id: str, host: str) -> dict[str, Any]:
    """Bind the port to ``host``; the answer, which must be the port as read back."""
    bound = client.put(f"/v2.0/ports/{port_id}", json={"port": {"binding:host_id": host}})
    assert bound.status_code == 200, bound.text
    answer: dict[str, Any] = bound.json()["port"]
    assert answer == client.get(f"/v2.0/ports/{port_id}").json()["port"]
    return answer


@contextmanager
def _recorded(db: Database, name: str, pick: Callable[..., Any]) -> Iterator[list[Any]]:
    seen: list[Any] = []

    def record(*args: Any) -> None:
        seen.append(pick(*args))

    event.listen(db.engine, name, record)
    try:
        yield seen
    finally:
        event.remove(db.engine, name, record)


def transactions_begun(db: Database) -> AbstractContextManager[list[Any]]:
    """The connections of the transactions begun meanwhile, one per transaction."""
    return _recorded(db, "begin", lambda conn: conn)


def statements_run(db: Database) -> AbstractContextManager[list[str]]:
    """The SQL of the statements SQLAlchemy ran meanwhile."""
    return _recorded(db, "before_cursor_execute", lambda _conn, _cursor, statement, *_: statement)
