"""The build queue, worked by the super-conductor: servers that asked to wait for room
(``berth.compute.queueing``) instead of going to ERROR when no host fits.

A queued server is its BuildRequest (the API shows it in BUILD, task ``scheduling``) and a row
of ``build_queue`` with its deadline and the last NoValidHost. It holds nothing while it waits:
no allocation, no port (the ports Berth made are deleted, the user's handed back), so the wait
takes no room from anyone. Every ``queue_retry_interval`` seconds each super-conductor goes
through the queue, first queued first: a server whose deadline passed goes to ERROR with the
last NoValidHost as its fault; any other is built again as a new build is (its ports made, one
scheduler call); one that still fits nowhere waits on with one more attempt counted. Whether it
fits is asked first as a what-if (``SchedulerAPI.what_if``) with the spec of its last try, which
claims nothing and makes no port: a server that still fits nowhere costs one Placement query a
pass, and nothing is made and given back again each time. A server
that fits goes ahead of older ones that do not (nobody waits behind a server that needs more
than the fleet has free).

The state is in the API database, so the queue outlives a conductor's restart; one conductor at
a time retries a server (``build_queue.take_turn``), and a conductor that died at it is taken
over after ``STALE_TURN``.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from typing import Protocol

from berth.common.db import Database
from berth.common.timeutils import utcnow
from berth.compute.db import build_queue, build_requests
from berth.compute.objects.diagnosis import Diagnosis
from berth.compute.rpc import NoValidHost

LOG = logging.getLogger(__name__)

# A retry mark this old belongs to a conductor that died during the retry.
STALE_TURN = dt.timedelta(minutes=10)


class Builder(Protocol):
    """The super-conductor, as the queue uses it."""

    api_db: Database

    def build_instances(self, instance_uuids: Sequence[str], request_id: str = "") -> None: ...

    def give_up(self, uuid: str, message: str, diagnosis: Diagnosis | None) -> None: ...

    def refusal(self, uuid: str) -> NoValidHost | None: ...


def work(builder: Builder, now: dt.datetime | None = None) -> list[str]:
    """One pass over the queue; one line per server it ended or built, for the log."""
    now = now or utcnow()
    with builder.api_db.read() as conn:
        queued = build_queue.list_queued(conn)
    done = []
    for row in queued:
        uuid = row["instance_uuid"]
        with builder.api_db.write() as conn:
            if build_requests.get(conn, uuid) is None:
                build_queue.remove(conn, uuid)  # deleted by its user while it waited
                continue
            if not build_queue.take_turn(conn, uuid, now, STALE_TURN):
                continue
        if row["expires_at"] <= now:
            waited = int((now - row["queued_at"]).total_seconds())
            message = f"{row['message']} (waited {waited} s in the queue, {row['attempts']} tries)"
            diagnosis = row["diagnosis"]
            builder.give_up(
                uuid, message, None if diagnosis is None else Diagnosis.from_json(diagnosis)
            )
            _forget(builder.api_db, uuid)
            done.append(f"{uuid}: waited past its deadline, in ERROR")
            continue
        refused = builder.refusal(uuid)
        if refused is not None:
            diagnosis = None if refused.diagnosis is None else refused.diagnosis.to_json()
            with builder.api_db.write() as conn:
                build_queue.tried(conn, uuid, refused.message, diagnosis)
            continue
        builder.build_instances([uuid])
        if _forget_if_left(builder.api_db, uuid):
            done.append(f"{uuid}: left the queue after {row['attempts']} tries")
    return done


def _forget(api_db: Database, uuid: str) -> None:
    with api_db.write() as conn:
        build_queue.remove(conn, uuid)


def _forget_if_left(api_db: Database, uuid: str) -> bool:
    """Whether the server left the queue: it has no BuildRequest (it was built, or ended).
    Its row is removed here when what ended it had not (it was deleted before it was built)."""
    with api_db.write() as conn:
        if build_requests.get(conn, uuid) is not None:
            return False
        build_queue.remove(conn, uuid)
        return True
