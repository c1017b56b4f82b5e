"""The compute RPC contract: typed clients and endpoints over a real (in-process) bus, versions."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from berth.bus import RemoteError
from berth.bus.runtime import BusRuntime
from berth.compute import rpc
from berth.compute.cells import Cell
from berth.compute.objects.build import BuildAttempt, PortEntry
from berth.compute.objects.diagnosis import Diagnosis, StageOutcome
from berth.compute.objects.request_spec import Destination, PortRequest, RequestSpec, ServerGroup
from berth.compute.objects.selection import Selection
from berth.compute.objects.wire import IncompatibleVersion
from berth.compute.wiring import Wiring
from tests.unit.compute.factories import spec

CELL = Cell(
    1, "c0ffee00-0000-4000-8000-000000000001", "cell1", "sqlite://", "memory://cell1", False
)


def selection(host: str, instance: str = "inst-0") -> Selection:
    return Selection(
        instance_uuid=instance,
        host=host,
        node=host,
        node_uuid=f"rp-{host}",
        cell_uuid=CELL.uuid,
        allocation_request={"allocations": {f"rp-{host}": {"resources": {"VCPU": 2}}}},
        allocation_request_version="1.36",
        mappings={"": (f"rp-{host}",), "port1": (f"bw-{host}",)},
        port_allocations={"port1": {"group1": f"bw-{host}"}},
        weight=1.5,
    )


class Recorder:
    """Every receiver's interface at once; remembers what arrived, typed."""

    def __init__(self, answer: Any = None) -> None:
        self.answer = answer
        self.received: list[tuple[str, tuple[Any, ...]]] = []
        self.arrived = threading.Event()

    def _note(self, method: str, *args: Any) -> Any:
        self.received.append((method, args))
        self.arrived.set()
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer

    def build_instances(self, instance_uuids: Sequence[str], request_id: str) -> None:
        self._note("build_instances", list(instance_uuids), request_id)

    def select_destinations(
        self, spec: RequestSpec, deadline: float | None = None
    ) -> list[list[Selection]]:
        return self._note("select_destinations", spec)  # type: ignore[no-any-return]

    def reschedule(self, *args: Any) -> None:
        self._note("reschedule", *args)

    def build_and_run_instance(self, *args: Any) -> None:
        self._note("build_and_run_instance", *args)

    def terminate_instance(self, instance_uuid: str) -> None:
        self._note("terminate_instance", instance_uuid)


@pytest.fixture
def wiring() -> Iterator[Wiring]:
    runtime = BusRuntime()
    yield Wiring(runtime, "memory://", rpc_timeout=2.0)
    runtime.close()


def test_a_spec_and_its_selections_cross_the_bus_as_values(wiring: Wiring) -> None:
    chosen = [[selection("h1"), selection("h2")]]
    scheduler = Recorder(answer=chosen)
    wiring.serve_scheduler(scheduler)
    asked = spec(ports=(PortRequest("port1", {"request_groups": [{"id": "group1"}]}),))
    assert wiring.scheduler().select_destinations(asked) == chosen
    assert scheduler.received == [("select_destinations", (asked,))]


def test_no_valid_host_arrives_with_its_diagnosis_as_data(wiring: Wiring) -> None:
    diagnosis = Diagnosis(4, 3, 0, (StageOutcome("AvailabilityZoneFilter", 3, (("wrong-az", 3),)),))
    wiring.serve_scheduler(Recorder(answer=rpc.NoValidHost("No valid host was found.", diagnosis)))
    with pytest.raises(rpc.NoValidHost) as refused:
        wiring.scheduler().select_destinations(spec())
    assert refused.value.message == "No valid host was found."
    assert refused.value.diagnosis == diagnosis


def test_a_scheduler_that_does_not_answer_in_time_is_unreachable(wiring: Wiring) -> None:
    held = threading.Event()

    class Stuck(Recorder):
        def select_destinations(
            self, spec: RequestSpec, deadline: float | None = None
        ) -> list[list[Selection]]:
            held.wait(5)
            return []

    wiring.serve_scheduler(Stuck())
    wiring.rpc_timeout = 0.2
    with pytest.raises(rpc.ServiceUnreachable, match=r"did not answer within 0\.2 s"):
        wiring.scheduler().select_destinations(spec())
    held.set()


def test_a_request_that_reaches_the_scheduler_past_its_deadline_is_dropped(
    wiring: Wiring,
) -> None:
    scheduler = Recorder(answer=[[selection("h1")]])
    wiring.serve_scheduler(scheduler)
    client = wiring.runtime.client("memory://")
    late = time.time() - 1
    answer = client.call(
        rpc.SCHEDULER, "select_destinations", version="1.0", spec=spec().to_json(), deadline=late
    )
    assert answer == {"expired": True} and scheduler.received == []


def test_no_scheduler_at_all_is_unreachable_at_once(wiring: Wiring) -> None:
    with pytest.raises(rpc.ServiceUnreachable, match="No scheduler"):
        wiring.scheduler().select_destinations(spec())


def test_casts_reach_the_cells_conductor_and_hosts_typed(wiring: Wiring) -> None:
    conductor, host = Recorder(), Recorder()
    wiring.serve_cell_conductor(CELL, conductor)
    wiring.serve_host(CELL, "h1", host)
    alternates = [selection("h2")]
    attempts = [BuildAttempt("h0", "spawn failed")]
    wiring.cells().conductor(CELL).reschedule("inst-0", "h1", "boom", alternates, attempts)
    wiring.cells().host(CELL, "h1").build_and_run_instance("inst-0", alternates, attempts)
    assert conductor.arrived.wait(2) and host.arrived.wait(2)
    assert conductor.received == [("reschedule", ("inst-0", "h1", "boom", alternates, attempts))]
    assert host.received == [("build_and_run_instance", ("inst-0", alternates, attempts))]


def test_a_build_cast_reaches_the_super_conductor(wiring: Wiring) -> None:
    conductor = Recorder()
    wiring.serve_super_conductor(conductor)
    wiring.super_conductor().build_instances(("a", "b"), "req-1")
    assert conductor.arrived.wait(2)
    assert conductor.received == [("build_instances", (["a", "b"], "req-1"))]


def test_a_newer_minor_version_with_unknown_arguments_is_served(wiring: Wiring) -> None:
    wiring.serve_scheduler(Recorder(answer=[[selection("h1")]]))
    client = wiring.runtime.client("memory://")
    document = {**spec().to_json(), "v": "1.7", "priority": "high"}
    answer = client.call(
        rpc.SCHEDULER, "select_destinations", version="1.3", spec=document, priority="high"
    )
    assert [[Selection.from_json(s) for s in answer["selections"][0]]] == [[selection("h1")]]


def test_a_newer_major_version_is_refused_with_a_clear_error(wiring: Wiring) -> None:
    wiring.serve_scheduler(Recorder(answer=[]))
    client = wiring.runtime.client("memory://")
    with pytest.raises(RemoteError) as refused:
        client.call(rpc.SCHEDULER, "select_destinations", version="2.0", spec=spec().to_json())
    assert refused.value.exc_type == "IncompatibleVersion"
    assert "scheduler API 2.0 cannot be read" in refused.value.message
    with pytest.raises(RemoteError, match=r"RequestSpec 2\.1 cannot be read"):
        client.call(
            rpc.SCHEDULER, "select_destinations", version="1.0",
            spec={**spec().to_json(), "v": "2.1"},
        )  # fmt: skip


# -- the values --------------------------------------------------------------------------------


def test_every_value_survives_its_json_form() -> None:
    full = spec(
        n=2,
        ports=(PortRequest("p", {"request_groups": [{"id": "g"}]}, ("seg",), "direct"),),
        availability_zone="az1",
        server_group=ServerGroup("g1", "anti-affinity", ("h1",), ("m1",), 2),
        ignore_hosts=frozenset({"h9", "h8"}),
        destination=Destination(host="h1", aggregates=(("a1", "a2"),)),
        boot_from_volume=True,
    )
    assert RequestSpec.from_json(full.to_json()) == full
    assert Selection.from_json(selection("h1").to_json()) == selection("h1")
    attempt = BuildAttempt("h1", "no room")
    assert BuildAttempt.from_json(attempt.to_json()) == attempt
    entry = PortEntry(
        "p1", "n1", "fa:16:3e:00:00:01", ({"ip_address": "10.0.0.3"},), "net", "direct", True
    )
    assert PortEntry.from_json(entry.to_json()) == entry
    diagnosis = Diagnosis(
        3, 2, 0, (StageOutcome("F", 2, (("r", 2),)),), (("VCPU", 1),), (("T", 1),), 7
    )
    assert Diagnosis.from_json(diagnosis.to_json()) == diagnosis


def test_a_spec_document_is_its_every_field_in_order() -> None:
    # to_json is written out field by field: a field added and not written out fails here.
    full = spec(
        n=2,
        ports=(
            PortRequest(
                "p", {"request_groups": [{"id": "g", "required": ["T"]}]}, ("s",), "direct"
            ),
            PortRequest("q"),
        ),
        availability_zone="az1",
        server_group=ServerGroup("g1", "anti-affinity", ("h1",), ("m1",), 2),
        ignore_hosts=frozenset({"h9", "h8"}),
        destination=Destination("h1", "n1", "rp1", "c1", (("a1", "a2"), ("b1",))),
        boot_from_volume=True,
    )
    for value in (full, spec()):
        expected = {**dataclasses.asdict(value), "ignore_hosts": sorted(value.ignore_hosts)}
        document = value.to_json()
        assert json.dumps(document) == json.dumps({"v": "1.1", **_as_lists(expected)})


def _as_lists(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _as_lists(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_as_lists(v) for v in value]
    return value


def test_a_document_from_before_versions_reads_as_1_0() -> None:
    document = spec().to_json()
    del document["v"]
    assert RequestSpec.from_json(document) == spec()


def test_a_newer_minor_document_keeps_its_unknown_fields_unread() -> None:
    document = {**selection("h1").to_json(), "v": "1.4", "numa_cell": 1}
    assert Selection.from_json(document) == selection("h1")
    flavor = spec().to_json()
    flavor["flavor"]["vgpus"] = 1
    assert RequestSpec.from_json(flavor) == spec()


def test_another_major_or_a_malformed_version_is_refused() -> None:
    with pytest.raises(IncompatibleVersion, match=r"Selection 2\.0 cannot be read"):
        Selection.from_json({**selection("h1").to_json(), "v": "2.0"})
    with pytest.raises(IncompatibleVersion, match="not a version"):
        BuildAttempt.from_json({"v": "one", "host": "h", "reason": "r"})
