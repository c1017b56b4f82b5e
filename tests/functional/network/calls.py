"""What the network service's functional tests send and check, in one place."""

from __future__ import annotations

from typing import Any

import httpx


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
