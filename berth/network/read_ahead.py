"""A port write's reads of what other requests change, made before its write transaction.

A port's create and its binding read much they never write: the network and the RBAC entries
sharing it, the network's segments and subnets, the QoS rules in effect. Inside the write
transaction every such read holds the database's write lock longer (SQLite has one writer per
file, and its driver gives up the interpreter lock on each statement, which other threads then
hold for a while), and every other port write waits. ``for_create`` and ``for_binding`` make
those reads in a read transaction first, through the same functions the write calls, so that
``remembered`` keeps them for the request. ``check``, first in the write transaction, reads
their revisions again in one statement: every change to a network, to an RBAC entry of it
(which marks the network changed), to a segment, a subnet or a QoS policy, or to a policy's
rules (which mark the policy changed) bumps a revision or adds or removes a row. If anything
changed in between, ``check`` forgets what was read ahead and the write reads it again, inside,
as it always did: it decides on what is there when it runs, never on what was.

What a read ahead read is kept for later requests too (``recall``), with the revisions it was
read at: the next read ahead of the same networks for the same project recalls it instead of
reading it (a port's create reads nothing ahead then; a binding only its port and the port's
groups), and its write checks those revisions as it checks its own. A write that finds them
changed forgets what was kept, reads inside as before, and the next request reads ahead again.

A binding also reads ahead the port's security groups, for its answer: every change of a port's
groups is a port update, which bumps the port's revision, so when the port the write locks has
the revision read ahead, its groups are those read with it (``groups_of``), and the binding's
answer is built from what its write knows (``bindings.Rebound``) without reading the port back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from berth.common.context import RequestContext
from berth.common.db import Database
from berth.network import exceptions, networks, ports, recall, validate
from berth.network.model import FixedIp
from berth.network.store import networks as network_store
from berth.network.store import ports as port_store
from berth.network.store import qos as qos_store
from berth.network.store import remembered
from berth.network.store import security_groups as group_store


@dataclass(frozen=True, slots=True)
class ReadAhead:
    """The networks and QoS policies read ahead, and their revisions when they were read."""

    network_ids: tuple[str, ...]
    policy_ids: tuple[str, ...]
    revisions: network_store.Revisions
    # A binding's port: its revision and its security groups, as read ahead.
    port_revision: int | None = None
    groups: tuple[str, ...] = ()
    # Where what was read is kept for later requests (``recall``).
    kept_as: tuple[Database, recall.Key] | None = None
    # A binding's port: its addresses, as read ahead.
    fixed_ips: tuple[FixedIp, ...] = ()

    def fixed_ips_of(self, row: Mapping[str, Any]) -> tuple[FixedIp, ...] | None:
        """The port's addresses if ``row`` is the revision read ahead and ``check`` found its
        network as read ahead (every change of a port's addresses is a port update, but for an
        auto-addressed subnet's deletion, which changes the network's revisions); else None."""
        if self.port_revision is None or row["revision_number"] != self.port_revision:
            return None
        return self.fixed_ips

    def groups_of(self, row: Mapping[str, Any]) -> list[str] | None:
        """The port's groups if ``row`` (the port as the write found it) is the revision read
        ahead; None when the port changed in between, or none was read."""
        if self.port_revision is None or row["revision_number"] != self.port_revision:
            return None
        return list(self.groups)


def for_create(db: Database, context: RequestContext, bodies: Sequence[Any]) -> ReadAhead | None:
    """What creating these ports reads of their networks: each network as the caller sees it
    (with the grants that share it) and its segments and subnets. Nothing is refused here: the
    write judges, on what it finds."""
    named = {_network_id(body) for body in bodies}
    network_ids = sorted(network_id for network_id in named if network_id is not None)
    if not network_ids:
        return None
    # What the reads depend on: the grants are the caller's project's.
    key = ("create", context.project_id, tuple(network_ids))
    found = recall.find(db, key)
    if found is not None:
        remembered.recall(found.reads)
        return ReadAhead(tuple(network_ids), (), found.revisions, kept_as=(db, key))
    with db.read() as conn:
        # First: on a server database each statement of a read transaction sees what is
        # committed when it runs, so a change made after this shows in ``check``.
        revisions = network_store.revisions(conn, network_ids, ())
        for network_id in network_ids:
            try:
                network = networks.get_visible(conn, context, network_id)
            except exceptions.NetworkNotFound:
                continue
            ports.layout_of(conn, network_id)
            if network["qos_policy_id"] is not None:
                # The rules a new port's answer follows when it names no policy of its own
                # (``ports.resource_requests``); the revisions cover the network's policy.
                qos_store.rules_of_policies(conn, [network["qos_policy_id"]])
    recall.keep(db, key, revisions)
    return ReadAhead(tuple(network_ids), (), revisions, kept_as=(db, key))


def for_binding(db: Database, port_id: str) -> ReadAhead | None:
    """What binding the port reads of its network: its segments and subnets, and the network
    and QoS rules its resource request follows. None when there is no such port (the write
    says so)."""
    # Outside a transaction when the network's reads are recalled (the port, its groups and
    # its addresses are each a statement on the driver's cursor); a read that misses begins
    # one. Either way no statement reads a state older than the ones before it saw, as in a
    # server's read transaction: the order of the reads below is what makes them safe to use.
    with db.one_statement() as conn:
        row = port_store.get(conn, port_id)
        if row is None:
            return None
        # After the port: a change of its groups committed in between shows in its revision.
        groups = group_store.groups_of_ports(conn, [port_id]).get(port_id, [])
        # A port's network never changes; its QoS policy may, which the port's revision shows
        # (a binding of the port with another policy reads that policy's rules again).
        network_id = row["network_id"]
        policy_ids = () if row["qos_policy_id"] is None else (row["qos_policy_id"],)
        key = ("binding", network_id, policy_ids)
        found = recall.find(db, key)
        if found is not None:
            remembered.recall(found.reads)
            revisions = found.revisions
        else:
            revisions = network_store.revisions(conn, [network_id], policy_ids)
        # After the revisions: a subnet deleted since (which takes its addresses from the
        # ports on an auto-addressed one) shows in them.
        held = ports.fixed_ips(conn, port_id)
        if found is None:
            ports.layout_of(conn, network_id)
            ports.resource_requests(conn, [row])
            recall.keep(db, key, revisions)
    return ReadAhead(
        (network_id,), policy_ids, revisions, row["revision_number"], tuple(groups), (db, key),
        held,
    )  # fmt: skip


def check(conn: Connection, ahead: ReadAhead | None) -> bool:
    """First in the write transaction: forget what was read ahead if any of it changed since,
    so that the write reads it again. True when nothing changed (and something was read)."""
    if ahead is None:
        return False
    if network_store.revisions(conn, ahead.network_ids, ahead.policy_ids) != ahead.revisions:
        remembered.forget()
        if ahead.kept_as is not None:
            recall.drop(*ahead.kept_as)
        return False
    return True


def _network_id(body: Any) -> str | None:
    """The network a port body names, if it names one well (else the write refuses it)."""
    if not isinstance(body, Mapping) or "network_id" not in body:
        return None
    try:
        return validate.uuid_value("network_id", body["network_id"])
    except exceptions.InvalidInput:
        return None
