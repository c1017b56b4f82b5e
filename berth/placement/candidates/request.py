"""Parsed queries of ``GET /allocation_candidates`` and ``GET /resource_providers``.

Both parsers are pure: they take the query as a list of ``(key, value)`` pairs (in the order the
client sent them) and the microversion as ``(major, minor)``, enforce every syntax and version
rule, and raise ``InvalidInput`` (with upstream's error code where it has one). They do not look
names up: whether a resource class or trait exists is checked against the provider index by the solver
and by ``matching_providers``, in the order upstream checks it (an unknown name after a group that
already matches nothing gives an empty answer, not a 400).

Allocation candidates::

    request = parse_candidates_request(pairs, (1, 39))
    result = allocation_candidates(index, request, randomize=False, rng=random.Random())

Provider list (the handler of ``GET /resource_providers`` calls this)::

    filters = parse_provider_filters(pairs, (1, 39))   # ProviderFilters
    rows = matching_providers(index, filters)          # index rows, in id order
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from berth.placement import errors
from berth.placement.candidates import qsschema, qsvalues
from berth.placement.exceptions import InvalidInput

Version = tuple[int, int]
Pairs = list[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class RequestGroup:
    """What one provider (suffixed group) or one tree plus sharing providers (unnamed) must meet.

    ``required`` is a tuple of any-of sets, ANDed: ``({A}, {B, C})`` means A and (B or C).
    ``member_of`` is the same shape for aggregate uuids.
    """

    suffix: str = ""
    resources: dict[str, int] = field(default_factory=dict)
    required: tuple[frozenset[str], ...] = ()
    forbidden: frozenset[str] = frozenset()
    member_of: tuple[frozenset[str], ...] = ()
    forbidden_aggs: frozenset[str] = frozenset()
    in_tree: str | None = None

    @property
    def use_same_provider(self) -> bool:
        return self.suffix != ""

    def __str__(self) -> str:
        res = ",".join(f"{rc}:{n}" for rc, n in sorted(self.resources.items()))
        traits = [" or ".join(sorted(s)) for s in self.required]
        traits += [f"!{t}" for t in sorted(self.forbidden)]
        aggs = ["|".join(sorted(s)) for s in self.member_of]
        aggs += [f"!{a}" for a in sorted(self.forbidden_aggs)]
        tree = f", in_tree={self.in_tree}" if self.in_tree else ""
        return (
            f"RequestGroup({self.suffix!r}, resources={res}, traits=({' and '.join(traits)}), "
            f"aggregates=({' and '.join(aggs)}){tree})"
        )


@dataclass(frozen=True, slots=True)
class CandidatesRequest:
    """The whole query; ``groups`` keep the order in which the client first named each suffix."""

    groups: tuple[RequestGroup, ...]
    version: Version = (1, 39)
    group_policy: str | None = None
    limit: int | None = None
    root_required: frozenset[str] = frozenset()
    root_forbidden: frozenset[str] = frozenset()
    same_subtree: tuple[frozenset[str], ...] = ()

    @property
    def nested_aware(self) -> bool:
        """Before 1.29 a candidate may not take from two providers of one tree."""
        return self.version >= (1, 29)

    def group(self, suffix: str) -> RequestGroup | None:
        return next((g for g in self.groups if g.suffix == suffix), None)


@dataclass(frozen=True, slots=True)
class ProviderFilters:
    """Filters of ``GET /resource_providers``; one provider must satisfy all of them."""

    name: str | None = None
    uuid: str | None = None
    in_tree: str | None = None
    resources: dict[str, int] = field(default_factory=dict)
    required: tuple[frozenset[str], ...] = ()
    forbidden: frozenset[str] = frozenset()
    member_of: tuple[frozenset[str], ...] = ()
    forbidden_aggs: frozenset[str] = frozenset()


def _values(params: Pairs, key: str) -> list[str]:
    return [v for k, v in params if k == key]


def _group_pattern(version: Version) -> re.Pattern[str]:
    suffix = qsschema.SUFFIX_NAMED if version >= (1, 33) else qsschema.SUFFIX_NUMBERED
    return re.compile(rf"^({'|'.join(qsschema.GROUP_KEYS)})({suffix})?$")


def _parse_groups(params: Pairs, version: Version) -> dict[str, dict[str, object]]:
    """Raw group fields by suffix, parsing each occurrence in query order (so the first bad
    value is the one reported, and a repeated ``resources``/``in_tree`` keeps its last value)."""
    pattern = _group_pattern(version)
    by_suffix: dict[str, dict[str, object]] = {}
    for key, value in params:
        match = pattern.match(key)
        if not match:
            continue
        prefix, suffix = match.group(1), match.group(2) or ""
        fields = by_suffix.setdefault(suffix, {"suffix": suffix})
        if prefix == "resources":
            fields["resources"] = qsvalues.parse_resources(value)
        elif prefix == "required":
            fields["required"], fields["forbidden"] = qsvalues.parse_traits_values(
                _values(params, key),
                allow_forbidden=version >= (1, 22),
                allow_any=version >= (1, 39),
            )
        elif prefix == "member_of":
            fields["member_of"], fields["forbidden_aggs"] = qsvalues.parse_member_of_values(
                _values(params, key),
                suffix,
                allow_many=version >= (1, 24),
                allow_forbidden=version >= (1, 32),
            )
        else:
            fields["in_tree"] = qsvalues.parse_in_tree(value)
    return by_suffix


def _check_orphans(groups: list[RequestGroup]) -> None:
    """Before 1.36 every group needs resources."""
    orphans = [f"required{g.suffix}" for g in groups if g.required and not g.resources]
    if orphans:
        raise InvalidInput(
            "All traits parameters must be associated with resources.  Found the following "
            f"orphaned traits keys: {', '.join(orphans)}"
        )
    orphans = [
        f"member_of{g.suffix}"
        for g in groups
        if not g.resources and (g.member_of or g.forbidden_aggs)
    ]
    if orphans:
        raise InvalidInput(
            "All member_of parameters must be associated with resources. Found the following "
            f"orphaned member_of keys: {', '.join(orphans)}"
        )
    if not all(g.resources for g in groups):
        raise InvalidInput("All request groups must specify resources.")
    if not groups:
        raise InvalidInput(
            "At least one request group (`resources` or `resources{$S}`) is required."
        )


def _check_resourceless(groups: list[RequestGroup], same_subtree: list[frozenset[str]]) -> None:
    """From 1.36 a group may lack resources if a ``same_subtree`` names it."""
    resourceless = [g.suffix for g in groups if not g.resources]
    if len(resourceless) == len(groups):
        raise InvalidInput(
            "There must be at least one resources or resources[$S] parameter.",
            errors.QUERYPARAM_MISSING_VALUE,
        )
    in_subtree = set().union(*same_subtree)
    bad = [s for s in resourceless if s not in in_subtree]
    if bad:
        raise InvalidInput(
            "Resourceless suffixed group request should be specified in `same_subtree` query "
            f"param: bad group(s) - {bad}.",
            errors.QUERYPARAM_BAD_VALUE,
        )
    known = [g.suffix for g in groups]
    unknown = sorted(s for s in in_subtree if s not in known)
    if unknown:
        raise InvalidInput(
            f"Real suffixes should be specified in `same_subtree`: {unknown} not found in {known}.",
            errors.QUERYPARAM_BAD_VALUE,
        )


def _check_conflicts(groups: list[RequestGroup]) -> None:
    """A required any-of set whose every member is also forbidden can never match."""
    conflicts = sorted(
        f"required{g.suffix}: ({', '.join(sorted(any_of))})"
        for g in groups
        for any_of in g.required
        if any_of <= g.forbidden
    )
    if conflicts:
        raise InvalidInput(
            "Conflicting required and forbidden traits found in the following traits keys: "
            + ", ".join(conflicts)
        )


def _parse_root_required(values: list[str]) -> tuple[frozenset[str], frozenset[str]]:
    if not values:
        return frozenset(), frozenset()
    if len(values) > 1:
        raise InvalidInput(
            "Query parameter 'root_required' may be specified only once.",
            errors.ILLEGAL_DUPLICATE_QUERYPARAM,
        )
    # root_required has no any-of form, even at 1.39.
    any_ofs, forbidden = qsvalues.parse_traits(values[0], allow_forbidden=True, allow_any=False)
    required = frozenset().union(*any_ofs)
    conflicts = required & forbidden
    if conflicts:
        raise InvalidInput(
            "Conflicting required and forbidden traits found in root_required: "
            + ", ".join(sorted(conflicts)),
            errors.QUERYPARAM_BAD_VALUE,
        )
    return required, frozenset(forbidden)


def _parse_same_subtree(values: list[str]) -> list[frozenset[str]]:
    result = []
    for value in values:
        suffixes = frozenset(part.strip() for part in value.split(","))
        if "" in suffixes:
            raise InvalidInput(
                "Empty string (unsuffixed group) can not be specified in `same_subtree` ",
                errors.QUERYPARAM_BAD_VALUE,
            )
        result.append(suffixes)
    return result


def parse_candidates_request(params: Pairs, version: Version) -> CandidatesRequest:
    """Parse the query of ``GET /allocation_candidates`` (microversion 1.10 or later)."""
    qsschema.validate(params, qsschema.candidates_schema(version))
    limits = _values(params, "limit")
    if limits and not limits[0].isdigit():
        raise InvalidInput(f"Invalid query string parameters: bad limit {limits[0]!r}")
    policies = _values(params, "group_policy")
    root_required, root_forbidden = _parse_root_required(_values(params, "root_required"))
    same_subtree = _parse_same_subtree(_values(params, "same_subtree"))

    groups = [RequestGroup(**fields) for fields in _parse_groups(params, version).values()]  # type: ignore[arg-type]
    if version >= (1, 36):
        _check_resourceless(groups, same_subtree)
    else:
        _check_orphans(groups)
    if version >= (1, 22):
        _check_conflicts(groups)
    if not policies and sum(g.use_same_provider for g in groups) > 1:
        raise InvalidInput(
            'The "group_policy" parameter is required when specifying more than one '
            '"resources{N}" parameter.'
        )
    return CandidatesRequest(
        groups=tuple(groups),
        version=version,
        group_policy=policies[0] if policies else None,
        limit=int(limits[0]) if limits else None,
        root_required=root_required,
        root_forbidden=root_forbidden,
        same_subtree=tuple(same_subtree),
    )


def parse_provider_filters(params: Pairs, version: Version) -> ProviderFilters:
    """Parse the query of ``GET /resource_providers``; a repeated key keeps its last value,
    except ``member_of`` (ANDed from 1.24) and ``required`` (ANDed from 1.39)."""
    qsschema.validate(params, qsschema.providers_schema(version))
    last = dict(params)
    member_of: tuple[frozenset[str], ...] = ()
    forbidden_aggs: frozenset[str] = frozenset()
    if "member_of" in last:
        member_of, forbidden_aggs = qsvalues.parse_member_of_values(
            _values(params, "member_of"),
            "",
            allow_many=version >= (1, 24),
            allow_forbidden=version >= (1, 32),
        )
    required: tuple[frozenset[str], ...] = ()
    forbidden: frozenset[str] = frozenset()
    if "required" in last:
        required, forbidden = qsvalues.parse_traits_values(
            _values(params, "required"),
            allow_forbidden=version >= (1, 22),
            allow_any=version >= (1, 39),
        )
    resources = qsvalues.parse_resources(last["resources"]) if "resources" in last else {}
    # An empty name/uuid/in_tree filters nothing, as upstream.
    return ProviderFilters(
        name=last.get("name") or None,
        uuid=last.get("uuid") or None,
        in_tree=last.get("in_tree") or None,
        resources=resources,
        required=required,
        forbidden=forbidden,
        member_of=member_of,
        forbidden_aggs=forbidden_aggs,
    )
