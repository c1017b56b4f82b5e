"""Focused cases taken from upstream's gabbi stories, plus parsing, rendering and loading."""

from __future__ import annotations

import datetime
import json
import random
import sys
from unittest import mock

import jsonschema
import numpy as np
import orjson
import pytest
import sqlalchemy as sa

from berth.placement import errors
from berth.placement.api.request import dumps
from berth.placement.candidates import (
    Inventory,
    Provider,
    ProviderIndex,
    allocation_candidates,
    matching_providers,
    parse_candidates_request,
    parse_provider_filters,
    qsschema,
    render,
)
from berth.placement.candidates.index import SHARING_TRAIT, Usage
from berth.placement.candidates.listing import ListedAnswers
from berth.placement.candidates.loading import load_index, load_names, load_providers
from berth.placement.candidates.slices import TreeSlice
from berth.placement.candidates.templates import summary_texts
from berth.placement.exceptions import InvalidInput
from berth.placement.store import schema

CLASSES = ["VCPU", "MEMORY_MB", "DISK_GB", "SRIOV_NET_VF"]
TRAITS = [SHARING_TRAIT, "HW_NUMA_ROOT", "CUSTOM_PHYSNET1", "HW_CPU_X86_SSE"]


def rp(uuid: str, parent: Provider | None = None, **kw: object) -> Provider:
    return Provider(
        uuid=uuid,
        name=uuid,
        parent_uuid=parent.uuid if parent else None,
        root_uuid=parent.root_uuid if parent else uuid,
        **kw,  # type: ignore[arg-type]
    )


def solve(snap: ProviderIndex, query: str, version: tuple[int, int] = (1, 39)) -> dict:
    pairs = [tuple(p.split("=", 1)) for p in query.split("&")]
    req = parse_candidates_request(pairs, version)  # type: ignore[arg-type]
    body = render(
        allocation_candidates(snap, req, randomize=False, rng=random.Random()), snap, version
    )
    return orjson.loads(orjson.dumps(body))  # type: ignore[no-any-return]


@pytest.fixture
def sharing() -> ProviderIndex:
    """cn1 (no disk), cn2 (with disk) and a shared disk ss, all in one aggregate."""
    agg = frozenset({"agg"})
    return ProviderIndex.build(
        [
            rp(
                "cn1",
                inventories={"VCPU": Inventory(8), "MEMORY_MB": Inventory(2048)},
                aggregates=agg,
            ),
            rp(
                "cn2",
                inventories={
                    "VCPU": Inventory(8),
                    "MEMORY_MB": Inventory(2048),
                    "DISK_GB": Inventory(500),
                },
                aggregates=agg,
            ),
            rp(
                "ss",
                inventories={"DISK_GB": Inventory(2000)},
                traits=frozenset({SHARING_TRAIT}),
                aggregates=agg,
            ),
        ],
        CLASSES,
        TRAITS,
    )


@pytest.fixture
def numa() -> ProviderIndex:
    """cn with two NUMA nodes, each with a PF offering VFs; pf1 on physnet1."""
    cn = rp("cn", traits=frozenset())
    numa0 = rp("numa0", cn, inventories={"VCPU": Inventory(4)}, traits=frozenset({"HW_NUMA_ROOT"}))
    numa1 = rp("numa1", cn, inventories={"VCPU": Inventory(4)}, traits=frozenset({"HW_NUMA_ROOT"}))
    pf0 = rp("pf0", numa0, inventories={"SRIOV_NET_VF": Inventory(8)})
    pf1 = rp(
        "pf1",
        numa1,
        inventories={"SRIOV_NET_VF": Inventory(8)},
        traits=frozenset({"CUSTOM_PHYSNET1"}),
    )
    return ProviderIndex.build([cn, numa0, numa1, pf0, pf1], CLASSES, TRAITS)


def test_kept_summaries_follow_changes_to_their_rows_and_trees(numa: ProviderIndex) -> None:
    """Summaries are kept per tree and per row, and which entries' units allow an amount per
    column: after a claim, inventory changes (one of them to units refusing the amount asked)
    and a new provider in the tree, each body is the one an index built afresh gives."""
    render_json = sys.modules["berth.placement.candidates.render"].render_json

    def body(index: ProviderIndex, version: tuple[int, int]) -> bytes:
        req = parse_candidates_request([("resources", "VCPU:1")], version)
        found = allocation_candidates(index, req, randomize=False, rng=random.Random())
        rendered = render_json(found, index, version)
        assert rendered is not None
        return rendered  # type: ignore[no-any-return]

    def agrees() -> None:
        fresh = ProviderIndex.build(numa.providers(), CLASSES, TRAITS)
        for version in [(1, 27), (1, 39)]:
            assert body(numa, version) == body(fresh, version)

    agrees()
    numa0 = numa.row_of["numa0"]
    numa.apply_usage([Usage(int(numa.ids[numa0]), 1, None, {"VCPU": 3})])
    agrees()
    numa.apply([rp("numa1", rp("cn"), inventories={"VCPU": Inventory(6)})])
    agrees()
    numa.apply([rp("numa1", rp("cn"), inventories={"VCPU": Inventory(6, min_unit=2)})])
    agrees()
    assert b'"numa1":{"resources"' not in body(numa, (1, 39)).split(b"provider_summaries")[0]
    numa.apply([rp("numa2", rp("cn"), inventories={"VCPU": Inventory(2)})])
    agrees()
    assert b'"numa2"' in body(numa, (1, 39))


def test_shared_disk_gives_one_candidate_per_way(sharing: ProviderIndex) -> None:
    body = solve(sharing, "resources=VCPU:1,MEMORY_MB:1024,DISK_GB:100")
    got = sorted(sorted(a["allocations"]) for a in body["allocation_requests"])
    assert got == [["cn1", "ss"], ["cn2"], ["cn2", "ss"]]
    assert set(body["provider_summaries"]) == {"cn1", "cn2", "ss"}


def test_only_shared_resource_is_returned_once(sharing: ProviderIndex) -> None:
    body = solve(sharing, "resources=DISK_GB:1000")
    assert [list(a["allocations"]) for a in body["allocation_requests"]] == [["ss"]]


def test_nested_granular_with_isolate_and_mappings(numa: ProviderIndex) -> None:
    body = solve(numa, "resources_A=VCPU:1&resources_B=VCPU:1&group_policy=isolate")
    maps = sorted((a["mappings"]["_A"], a["mappings"]["_B"]) for a in body["allocation_requests"])
    assert maps == [(["numa0"], ["numa1"]), (["numa1"], ["numa0"])]
    body = solve(numa, "resources_A=VCPU:1&resources_B=VCPU:1&group_policy=none")
    assert len(body["allocation_requests"]) == 4
    same = [a for a in body["allocation_requests"] if a["mappings"]["_A"] == a["mappings"]["_B"]]
    assert [a["allocations"][a["mappings"]["_A"][0]]["resources"] for a in same] == [
        {"VCPU": 2}
    ] * 2


def test_same_subtree_with_resourceless_numa_group(numa: ProviderIndex) -> None:
    query = (
        "resources_VF=SRIOV_NET_VF:1&required_VF=CUSTOM_PHYSNET1&required_NUMA=HW_NUMA_ROOT"
        "&resources_CPU=VCPU:1&same_subtree=_VF,_NUMA,_CPU&group_policy=none"
    )
    body = solve(numa, query)
    assert [a["mappings"] for a in body["allocation_requests"]] == [
        {"_VF": ["pf1"], "_NUMA": ["numa1"], "_CPU": ["numa1"]}
    ]


def test_before_1_29_one_provider_per_tree(numa: ProviderIndex) -> None:
    assert solve(numa, "resources=VCPU:1,SRIOV_NET_VF:1", (1, 28))["allocation_requests"] == []
    assert len(solve(numa, "resources=VCPU:1,SRIOV_NET_VF:1", (1, 29))["allocation_requests"]) == 4


def test_unnamed_group_traits_count_on_the_providers_used(numa: ProviderIndex) -> None:
    body = solve(numa, "resources=VCPU:1,SRIOV_NET_VF:1&required=CUSTOM_PHYSNET1")
    assert sorted(sorted(a["allocations"]) for a in body["allocation_requests"]) == [
        ["numa0", "pf1"],
        ["numa1", "pf1"],
    ]


def test_limit_spreads_over_trees(sharing: ProviderIndex) -> None:
    body = solve(sharing, "resources=VCPU:1&limit=2")
    assert sorted(u for a in body["allocation_requests"] for u in a["allocations"]) == [
        "cn1",
        "cn2",
    ]


def test_a_slice_never_anchors_on_a_sharing_root_of_another_slice() -> None:
    """A slice of cn0's tree alone also holds ss1 and ss2 (a sharing provider may serve any
    tree), and ss2 serves ss1's tree through ss1-child's aggregate: ss1 must still not be one
    of the slice's anchors (its tree is not in the slice)."""
    agg = frozenset({"agg"})
    vcpu = {"VCPU": Inventory(total=2)}
    sharing = frozenset({SHARING_TRAIT})
    ss1 = rp("ss1", inventories=vcpu, traits=sharing)
    index = ProviderIndex.build(
        [
            rp("cn0", inventories=vcpu),
            ss1,
            rp("ss1-child", ss1, inventories=vcpu, aggregates=agg),
            rp("ss2", inventories=vcpu, traits=sharing, aggregates=agg),
        ],
        CLASSES,
        TRAITS,
    )
    trees = TreeSlice(index, np.asarray([index.row_of["cn0"]]))
    assert [index.uuids[r] for r in trees.rows[trees.sharing()]] == ["ss1", "ss2"]
    for row in trees.sharing().tolist():
        assert set(np.flatnonzero(trees.sharing_anchor_mask(row))) <= set(trees.roots())


def test_summaries_are_kept_per_row_up_to_the_kept_size(
    sharing: ProviderIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the kept size the summaries are written afresh and none is kept; within it each
    row's is kept, and kept or not they are the same summaries, in one piece of JSON text."""
    rendering = sys.modules["berth.placement.candidates.render"]
    req = parse_candidates_request([("resources", "VCPU:1")], (1, 39))
    found = allocation_candidates(sharing, req, randomize=False, rng=random.Random())
    expected = rendering.summaries(sharing, found.summaries, found.requested_classes, (1, 39))

    def rendered() -> object:
        whole = render(found, sharing, (1, 39))["provider_summaries"]
        assert isinstance(whole, orjson.Fragment)
        return orjson.loads(orjson.dumps(whole))

    monkeypatch.setattr(sharing.fragments, "most", len(found.summaries) - 1)
    assert rendered() == expected
    assert not len(sharing.fragments)
    monkeypatch.setattr(sharing.fragments, "most", len(found.summaries))
    assert rendered() == expected
    assert len(sharing.fragments) == len(found.summaries)
    assert rendered() == expected


@pytest.mark.parametrize("asked", ["MEMORY_MB:1,DISK_GB:1", "DISK_GB:1,MEMORY_MB:1"])
def test_listed_combinations_keep_the_search_s_order_of_classes(asked: str) -> None:
    """A group of two classes on one provider: listed as combinations or found by the
    depth-first search, its classes come in the order the search puts them."""
    cn1 = rp("cn1", inventories={"VCPU": Inventory(total=4)})
    index = ProviderIndex.build(
        [
            cn1,
            rp(
                "pf1",
                cn1,
                inventories={"MEMORY_MB": Inventory(total=8), "DISK_GB": Inventory(total=8)},
            ),
        ],
        CLASSES,
        TRAITS,
    )
    req = parse_candidates_request([("resources", "VCPU:1"), ("resources_P", asked)], (1, 39))

    def written() -> list[list[tuple[str, list[str]]]]:
        found = allocation_candidates(index, req, randomize=False, rng=random.Random())
        return [
            [(uuid, list(amounts)) for uuid, amounts in a.resources.items()]
            for a in found.allocation_requests
        ]

    listed = written()
    with mock.patch("berth.placement.candidates.solver._compete", return_value=True):
        assert written() == listed
    assert listed == [[("cn1", ["VCPU"]), ("pf1", [c.split(":")[0] for c in asked.split(",")])]]


def test_render_formats_per_version(sharing: ProviderIndex) -> None:
    old = solve(sharing, "resources=VCPU:1", (1, 10))
    assert old["allocation_requests"][0] == {
        "allocations": [{"resource_provider": {"uuid": "cn1"}, "resources": {"VCPU": 1}}]
    }
    assert old["provider_summaries"]["cn1"] == {"resources": {"VCPU": {"capacity": 8, "used": 0}}}
    new = solve(sharing, "resources=VCPU:1", (1, 34))
    assert new["allocation_requests"][0] == {
        "allocations": {"cn1": {"resources": {"VCPU": 1}}},
        "mappings": {"": ["cn1"]},
    }
    assert new["provider_summaries"]["cn1"] == {
        "resources": {
            "VCPU": {"capacity": 8, "used": 0},
            "MEMORY_MB": {"capacity": 2048, "used": 0},
        },
        "traits": [],
        "parent_provider_uuid": None,
        "root_provider_uuid": "cn1",
    }


@pytest.mark.parametrize(
    ("query", "version", "code", "phrase"),
    [
        ("resources=", (1, 10), errors.DEFAULT, "Badly formed resources parameter"),
        ("resources=VCPU:0", (1, 10), errors.DEFAULT, "requires amount >= 1"),
        ("resources=VCPU:1&limit=5", (1, 15), errors.DEFAULT, "'limit' was unexpected"),
        ("resources=VCPU:1&limit=0", (1, 16), errors.DEFAULT, "Failed validating 'pattern'"),
        ("resources=VCPU:1&required=!X", (1, 21), errors.DEFAULT, "HW_CPU_X86_VMX,CUSTOM_MAGIC"),
        ("resources=VCPU:1&required=in:A,B", (1, 38), errors.DEFAULT, "only supported since"),
        ("resources=VCPU:1&member_of=x", (1, 21), errors.DEFAULT, "valid UUID(s)"),
        ("resources=VCPU:1&member_of=!" + "a" * 32, (1, 31), errors.DEFAULT, "Forbidden member_of"),
        ("resources_X=VCPU:1", (1, 32), errors.DEFAULT, "does not match any of the regexes"),
        (
            "resources1=VCPU:1&resources2=VCPU:1",
            (1, 25),
            errors.DEFAULT,
            '"group_policy" parameter',
        ),
        ("required=HW_CPU_X86_SSE", (1, 25), errors.DEFAULT, "orphaned traits keys"),
        (
            "resources1=VCPU:1&required2=A&group_policy=none",
            (1, 36),
            errors.QUERYPARAM_BAD_VALUE,
            "Resourceless",
        ),
        ("required1=A", (1, 36), errors.QUERYPARAM_MISSING_VALUE, "at least one resources"),
        ("resources=VCPU:1&same_subtree=_A", (1, 36), errors.QUERYPARAM_BAD_VALUE, "Real suffixes"),
        (
            "resources=VCPU:1&root_required=A&root_required=B",
            (1, 35),
            errors.ILLEGAL_DUPLICATE_QUERYPARAM,
            "only once",
        ),
        (
            "resources=VCPU:1&root_required=A,!A",
            (1, 35),
            errors.QUERYPARAM_BAD_VALUE,
            "Conflicting",
        ),
        (
            "resources=VCPU:1&required=A,!A",
            (1, 22),
            errors.DEFAULT,
            "Conflicting required and forbidden",
        ),
        ("resources=VCPU:1&in_tree=nope", (1, 31), errors.DEFAULT, "format of uuid"),
    ],
)
def test_bad_queries(query: str, version: tuple[int, int], code: str, phrase: str) -> None:
    pairs = [tuple(p.split("=", 1)) for p in query.split("&")]
    with pytest.raises(InvalidInput) as info:
        parse_candidates_request(pairs, version)  # type: ignore[arg-type]
    assert info.value.code == code
    assert phrase in str(info.value)


def test_unknown_names_are_400_unless_an_earlier_group_matches_nothing(
    sharing: ProviderIndex,
) -> None:
    with pytest.raises(InvalidInput, match="Invalid resource class"):
        solve(sharing, "resources=MCPU:1")
    with pytest.raises(InvalidInput, match=r"No such trait\(s\): CUSTOM_NOPE"):
        solve(sharing, "resources=VCPU:1&required=CUSTOM_NOPE")
    body = solve(
        sharing, "resources1=VCPU:99&resources2=VCPU:1&required2=CUSTOM_NOPE&group_policy=none"
    )
    assert body["allocation_requests"] == []


def test_provider_list_filters(numa: ProviderIndex) -> None:
    filters = parse_provider_filters(
        [("resources", "VCPU:4"), ("required", "HW_NUMA_ROOT")], (1, 39)
    )
    assert [numa.uuids[row] for row in matching_providers(numa, filters)] == ["numa0", "numa1"]
    with pytest.raises(InvalidInput):  # in_tree must look like a uuid
        parse_provider_filters([("in_tree", "pf1")], (1, 14))
    with pytest.raises(InvalidInput, match="Invalid trait"):
        matching_providers(numa, parse_provider_filters([("required", "CUSTOM_NOPE")], (1, 18)))


def test_loading_reads_everything() -> None:
    engine = sa.create_engine("sqlite://")
    schema.metadata.create_all(engine)
    now = datetime.datetime(2024, 1, 1)
    with engine.begin() as conn:
        conn.execute(
            sa.insert(schema.resource_classes), [{"id": 1, "name": "VCPU", "created_at": now}]
        )
        conn.execute(
            sa.insert(schema.traits), [{"id": 1, "name": "HW_NUMA_ROOT", "created_at": now}]
        )
        rows = [
            {
                "id": 1,
                "uuid": "r",
                "name": "r",
                "generation": 3,
                "root_provider_id": 1,
                "parent_provider_id": None,
                "created_at": now,
            },
            {
                "id": 2,
                "uuid": "c",
                "name": "c",
                "generation": 0,
                "root_provider_id": 1,
                "parent_provider_id": 1,
                "created_at": now,
            },
        ]
        conn.execute(sa.insert(schema.resource_providers), rows)
        conn.execute(
            sa.insert(schema.inventories),
            [
                {
                    "resource_provider_id": 2,
                    "resource_class_id": 1,
                    "total": 10,
                    "reserved": 1,
                    "min_unit": 1,
                    "max_unit": 4,
                    "step_size": 1,
                    "allocation_ratio": 1.5,
                    "created_at": now,
                }
            ],
        )
        conn.execute(
            sa.insert(schema.allocations),
            [
                {
                    "resource_provider_id": 2,
                    "consumer_id": "x",
                    "resource_class_id": 1,
                    "used": 2,
                    "created_at": now,
                },
                {
                    "resource_provider_id": 2,
                    "consumer_id": "y",
                    "resource_class_id": 1,
                    "used": 1,
                    "created_at": now,
                },
            ],
        )
        conn.execute(
            sa.insert(schema.resource_provider_traits), [{"resource_provider_id": 2, "trait_id": 1}]
        )
        conn.execute(sa.insert(schema.placement_aggregates), [{"id": 1, "uuid": "agg"}])
        conn.execute(
            sa.insert(schema.resource_provider_aggregates),
            [{"resource_provider_id": 1, "aggregate_id": 1}],
        )
    with engine.connect() as conn:
        root, child = load_providers(conn)
        assert load_providers(conn, [2, 99]) == [child]
        assert load_names(conn) == (["VCPU"], ["HW_NUMA_ROOT"])
        bulk = load_index(conn)
    assert (child.parent_uuid, child.root_uuid, root.generation) == ("r", "r", 3)
    assert child.inventories["VCPU"].capacity == 13 and child.inventories["VCPU"].used == 3
    assert child.traits == {"HW_NUMA_ROOT"} and root.aggregates == {"agg"}
    assert (root.id, child.id, child.modified) == (1, 2, now)
    index = ProviderIndex.build([root, child], ["VCPU"], ["HW_NUMA_ROOT"])
    assert index.has_trees and index.providers() == [root, child] == bulk.providers()


@pytest.mark.parametrize("minor", range(0, 40))
def test_query_string_schemas_are_valid_schemas(minor: int) -> None:
    """Requests skip checking these schemas against the metaschema; this checks them once."""
    for query in (qsschema.candidates_schema((1, minor)), qsschema.providers_schema((1, minor))):
        jsonschema.validators.validator_for(query).check_schema(query)


def test_summary_texts_write_capacities_past_64_bits_exactly() -> None:
    """The index holds capacities up to a ceiling; the summary says the exact figure."""
    huge = Inventory(total=2**62, allocation_ratio=16.0)
    index = ProviderIndex.build(
        [rp("cn1", inventories={"VCPU": huge, "MEMORY_MB": Inventory(total=8)})], CLASSES, TRAITS
    )
    rows = np.asarray([0], np.int64)
    (text,) = summary_texts(index, rows, (1, 39), False)
    assert text.startswith('{"resources":{"VCPU":{"capacity":' + str(2**66) + ',"used":0}')


def shared_disk(uuid: str, *traits: str) -> Provider:
    """A sharing provider of DISK_GB in the aggregate ``agg``."""
    return rp(
        uuid,
        inventories={"DISK_GB": Inventory(total=100)},
        traits=frozenset({SHARING_TRAIT, *traits}),
        aggregates=frozenset({"agg"}),
    )


def test_listed_answers_come_round_robin_with_sorted_mappings() -> None:
    """Without a limit, answers of hosts that can each take the request two ways (own disk or
    shared) come first answers first, and a group spread over two providers maps them in
    uuid order, not in the order its classes took them (the shared disk's uuid sorts between
    the hosts')."""
    agg = frozenset({"agg"})
    both = {"VCPU": Inventory(total=8), "DISK_GB": Inventory(total=100)}
    index = ProviderIndex.build(
        [
            rp("a-host", inventories=both, aggregates=agg),
            rp("z-host", inventories=both, aggregates=agg),
            shared_disk("m-disk"),
        ],
        CLASSES,
        TRAITS,
    )
    req = parse_candidates_request([("resources", "VCPU:1,DISK_GB:1")], (1, 39))
    found = allocation_candidates(index, req, randomize=False, rng=random.Random())
    assert isinstance(found.answers, ListedAnswers)
    body = solve(index, "resources=VCPU:1,DISK_GB:1")
    # Dicts compare without their order; the body's order is the search's.
    assert [list(a["allocations"]) for a in body["allocation_requests"]] == [
        ["a-host"],
        ["z-host"],
        ["a-host", "m-disk"],
        ["z-host", "m-disk"],
    ]
    assert body["allocation_requests"] == [
        {
            "allocations": {"a-host": {"resources": {"VCPU": 1, "DISK_GB": 1}}},
            "mappings": {"": ["a-host"]},
        },
        {
            "allocations": {"z-host": {"resources": {"VCPU": 1, "DISK_GB": 1}}},
            "mappings": {"": ["z-host"]},
        },
        {
            "allocations": {
                "a-host": {"resources": {"VCPU": 1}},
                "m-disk": {"resources": {"DISK_GB": 1}},
            },
            "mappings": {"": ["a-host", "m-disk"]},
        },
        {
            "allocations": {
                "z-host": {"resources": {"VCPU": 1}},
                "m-disk": {"resources": {"DISK_GB": 1}},
            },
            "mappings": {"": ["m-disk", "z-host"]},
        },
    ]


def test_listed_answers_under_a_limit_interleave_the_slices_rounds() -> None:
    """When the slices run out before the limit, the answers are every round of every slice:
    a later slice's first answer comes before an earlier one's second."""
    agg = frozenset({"agg"})
    both = {"VCPU": Inventory(total=8), "DISK_GB": Inventory(total=100)}
    memory_only = {"MEMORY_MB": Inventory(total=8)}
    index = ProviderIndex.build(
        [
            rp("cn1", inventories=both, aggregates=agg),
            rp("cn2", inventories=memory_only),
            rp("cn3", inventories=memory_only),
            rp("cn4", inventories=both),
            shared_disk("ss"),
        ],
        CLASSES,
        TRAITS,
    )
    req = parse_candidates_request([("resources", "VCPU:1,DISK_GB:1"), ("limit", "3")], (1, 39))
    # The first slice holds cn1 to cn3 (as many roots as the limit): one anchor, short of it.
    found = allocation_candidates(index, req, randomize=False, rng=random.Random(), slice_roots=1)
    assert isinstance(found.answers, ListedAnswers)
    assert [sorted(a.resources) for a in found.allocation_requests] == [
        ["cn1"],
        ["cn4"],
        ["cn1", "ss"],
    ]


@pytest.mark.parametrize("limit", [None, 1])
def test_listed_answers_meet_the_unnamed_group_s_traits_together(limit: int | None) -> None:
    """A host without the trait takes the request only with the shared disk that has it: the
    first answer of its combinations is not an answer."""
    agg = frozenset({"agg"})
    index = ProviderIndex.build(
        [
            rp(
                "cn1",
                inventories={"VCPU": Inventory(total=8), "DISK_GB": Inventory(total=100)},
                aggregates=agg,
            ),
            shared_disk("ss", "CUSTOM_PHYSNET1"),
        ],
        CLASSES,
        TRAITS,
    )
    query = [("resources", "VCPU:1,DISK_GB:1"), ("required", "CUSTOM_PHYSNET1")]
    if limit is not None:
        query.append(("limit", str(limit)))
    req = parse_candidates_request(query, (1, 39))
    found = allocation_candidates(index, req, randomize=False, rng=random.Random())
    assert isinstance(found.answers, ListedAnswers)
    assert [sorted(a.resources) for a in found.allocation_requests] == [["cn1", "ss"]]


def test_a_capacity_past_64_bits_serialises_before_1_27() -> None:
    """Summaries before 1.27 are data; a capacity past 64 bits sends the body to the standard
    library's serialiser, which must be able to take the answers too."""
    huge = Inventory(total=2**62, allocation_ratio=16.0)
    index = ProviderIndex.build([rp("cn1", inventories={"VCPU": huge})], CLASSES, TRAITS)
    req = parse_candidates_request([("resources", "VCPU:1")], (1, 20))
    found = allocation_candidates(index, req, randomize=False, rng=random.Random())
    assert isinstance(found.answers, ListedAnswers)
    body = json.loads(dumps(render(found, index, (1, 20))))
    assert body["provider_summaries"]["cn1"]["resources"]["VCPU"]["capacity"] == 2**66
    assert body["allocation_requests"][0]["allocations"] == {"cn1": {"resources": {"VCPU": 1}}}
