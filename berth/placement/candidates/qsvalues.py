"""Parsers for single query-string values shared by the candidate and provider-list queries.

Each function takes the raw string of one parameter and returns domain values, or raises
``InvalidInput``. Messages keep the phrases clients and upstream tests match on ("Badly formed
resources parameter", "Expected 'member_of' parameter to contain valid UUID(s)", ...); the error
code stays the default one wherever upstream gives no specific code.
"""

from __future__ import annotations

import uuid

from berth.placement.exceptions import InvalidInput

_RESOURCES_FORM = "?resources=VCPU:2,MEMORY_MB:1024"


def is_uuid_like(value: str) -> bool:
    """True for anything Python's UUID parser reads back to the same hex digits.

    Placement accepts upper case, missing dashes and braces (the oslo ``is_uuid_like`` rule).
    """
    try:
        parsed = uuid.UUID(value)
    except (TypeError, ValueError, AttributeError):
        return False
    bare = value.replace("urn:", "").replace("uuid:", "").strip("{}").replace("-", "").lower()
    return parsed.hex == bare


def parse_resources(value: str) -> dict[str, int]:
    """``VCPU:2,MEMORY_MB:1024`` -> ``{"VCPU": 2, "MEMORY_MB": 1024}``; a repeated class keeps
    its last amount, as upstream does."""
    if value.strip() == "":
        raise InvalidInput(
            "Badly formed resources parameter. Expected resources query string parameter in "
            f"form: {_RESOURCES_FORM}. Got: empty string."
        )
    result: dict[str, int] = {}
    for item in value.split(","):
        parts = item.split(":")
        if len(parts) != 2:
            raise InvalidInput(
                "Badly formed resources parameter. Expected resources query string parameter "
                f"in form: {_RESOURCES_FORM}. Got: {item}."
            )
        name, raw_amount = parts
        try:
            # int() rather than a digit regex: upstream accepts what int() accepts (" 2", "+2").
            amount = int(raw_amount)
        except ValueError:
            raise InvalidInput(
                f"Requested resource {name} expected positive integer amount. Got: {raw_amount}."
            ) from None
        if amount < 1:
            raise InvalidInput(f"Requested resource {name} requires amount >= 1. Got: {amount}.")
        result[name] = amount
    return result


def parse_traits(
    value: str, *, allow_forbidden: bool, allow_any: bool
) -> tuple[list[frozenset[str]], set[str]]:
    """One ``required`` value -> (list of any-of sets, forbidden names).

    ``A,!B`` gives ``([{A}], {B})``; ``in:A,B`` (1.39) gives ``([{A, B}], set())``.
    """
    if value.startswith("in:"):
        if not allow_any:
            raise InvalidInput(
                "Invalid query string parameters: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' "
                f"only supported since microversion 1.39. Got: {value}"
            )
        any_of = frozenset(part.strip() for part in value[3:].split(","))
        if not all(any_of):
            raise InvalidInput(
                "Invalid query string parameters: Expected 'required' parameter value of the "
                f"form: in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: {value}"
            )
        if any(name.startswith("!") for name in any_of):
            raise InvalidInput(
                "Invalid query string parameters: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' "
                f"does not support forbidden traits. Got: {value}"
            )
        return [any_of], set()

    names = [part.strip() for part in value.split(",")]
    # Any number of leading '!' means "forbidden" (upstream keeps this quirk: !!FOO is FOO).
    forbidden = {name.lstrip("!") for name in names if name.startswith("!")}
    if not all(names) or not all(forbidden):
        form = "HW_CPU_X86_VMX,!CUSTOM_MAGIC" if allow_forbidden else "HW_CPU_X86_VMX,CUSTOM_MAGIC"
        raise InvalidInput(
            "Invalid query string parameters: Expected 'required' parameter value of the form: "
            f"{form}. Got an empty trait in: {value}"
        )
    if forbidden and not allow_forbidden:
        raise InvalidInput(
            "Invalid query string parameters: Expected 'required' parameter value of the form: "
            f"HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: {value}"
        )
    required = [frozenset([name]) for name in names if not name.startswith("!")]
    return required, forbidden


def parse_traits_values(
    values: list[str], *, allow_forbidden: bool, allow_any: bool
) -> tuple[tuple[frozenset[str], ...], frozenset[str]]:
    """All values of one ``required<suffix>`` key. Before 1.39 (``allow_any`` False) only the
    last one counts; from 1.39 they are ANDed."""
    if not allow_any:
        values = values[-1:]
    required: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for value in values:
        any_of, nots = parse_traits(value, allow_forbidden=allow_forbidden, allow_any=allow_any)
        required.extend(any_of)
        forbidden |= nots
    return tuple(required), frozenset(forbidden)


def parse_member_of(value: str) -> tuple[frozenset[str], frozenset[str]]:
    """One ``member_of`` value -> (any-of aggregates, forbidden aggregates); one side is empty."""
    if "," in value and not value.startswith(("in:", "!in:")):
        raise InvalidInput(
            "Multiple values for 'member_of' must be prefixed with the 'in:' or '!in:' keyword "
            f"using the valid microversion. Got: {value}"
        )
    required: frozenset[str] = frozenset()
    forbidden: frozenset[str] = frozenset()
    if value.startswith("!in:"):
        forbidden = frozenset(value[4:].split(","))
    elif value.startswith("!"):
        forbidden = frozenset([value[1:]])
    elif value.startswith("in:"):
        required = frozenset(value[3:].split(","))
    else:
        required = frozenset([value])
    for agg in sorted(required | forbidden):
        if not is_uuid_like(agg):
            raise InvalidInput(
                "Invalid query string parameters: Expected 'member_of' parameter to contain "
                f"valid UUID(s). Got: {agg}"
            )
    return required, forbidden


def parse_member_of_values(
    values: list[str], suffix: str, *, allow_many: bool, allow_forbidden: bool
) -> tuple[tuple[frozenset[str], ...], frozenset[str]]:
    """All values of one ``member_of<suffix>`` key: several are ANDed from 1.24, ``!`` from 1.32."""
    if not allow_many and len(values) > 1:
        raise InvalidInput(f"Multiple member_of{suffix} parameters are not supported")
    any_ofs: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for value in values:
        required, nots = parse_member_of(value)
        if required:
            any_ofs.append(required)
        if nots:
            if not allow_forbidden:
                raise InvalidInput(
                    f"Forbidden member_of{suffix} parameters are not supported in the "
                    "specified microversion"
                )
            forbidden |= nots
    return tuple(any_ofs), frozenset(forbidden)


def parse_in_tree(value: str) -> str:
    stripped = value.strip()
    if not is_uuid_like(stripped):
        raise InvalidInput(
            "Invalid query string parameters: Expected 'in_tree' parameter to be a format of "
            f"uuid. Got: {value}"
        )
    return stripped
