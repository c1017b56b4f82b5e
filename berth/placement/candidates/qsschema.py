"""Which query parameters each microversion accepts, as JSON schemas.

Upstream validates the query with a JSON schema per microversion before parsing, and clients see
jsonschema's own wording ("'limit' was unexpected", "Failed validating 'pattern'"), so we validate
the same way: each schema below is the previous one plus what its version added.
"""

from __future__ import annotations

from typing import Any

import jsonschema

from berth.placement.exceptions import InvalidInput

Version = tuple[int, int]
Schema = dict[str, Any]

# Group suffixes: numbers before 1.33, then up to 64 of [a-zA-Z0-9_-].
SUFFIX_NUMBERED = r"[1-9][0-9]*"
SUFFIX_NAMED = r"[a-zA-Z0-9_-]{1,64}"
GROUP_KEYS = ("resources", "required", "member_of", "in_tree")

_STRING: Schema = {"type": "string"}


def _group_key(prefix: str, suffix_pattern: str) -> str:
    return f"^{prefix}({suffix_pattern})?$"


def candidates_schema(version: Version) -> Schema:
    """The schema of ``GET /allocation_candidates`` at ``version`` (1.10 or later)."""
    props: dict[str, Schema] = {"resources": _STRING}
    schema: Schema = {
        "type": "object",
        "properties": props,
        "required": ["resources"],
        "additionalProperties": False,
    }
    if version >= (1, 16):
        props["limit"] = {
            "type": ["integer", "string"],
            "pattern": "^[1-9][0-9]*$",
            "minimum": 1,
            "minLength": 1,
        }
    if version >= (1, 17):
        props["required"] = _STRING
    if version >= (1, 21):
        props["member_of"] = _STRING
    if version < (1, 25):
        return schema
    # 1.25: granular groups replace the plain keys with suffixed patterns.
    for key in ("resources", "required", "member_of"):
        del props[key]
    del schema["required"]
    grouped = ["resources", "required", "member_of"]
    if version >= (1, 31):
        grouped.append("in_tree")
    suffix = SUFFIX_NAMED if version >= (1, 33) else SUFFIX_NUMBERED
    schema["patternProperties"] = {_group_key(key, suffix): _STRING for key in grouped}
    props["group_policy"] = {"type": "string", "enum": ["none", "isolate"]}
    if version >= (1, 35):
        props["root_required"] = _STRING
    if version >= (1, 36):
        props["same_subtree"] = _STRING
    return schema


def providers_schema(version: Version) -> Schema:
    """The schema of ``GET /resource_providers`` at ``version``."""
    props: dict[str, Schema] = {"name": _STRING, "uuid": {"type": "string", "format": "uuid"}}
    if version >= (1, 3):
        props["member_of"] = _STRING
    if version >= (1, 4):
        props["resources"] = _STRING
    if version >= (1, 14):
        props["in_tree"] = {"type": "string", "format": "uuid"}
    if version >= (1, 18):
        props["required"] = _STRING
    return {"type": "object", "properties": props, "additionalProperties": False}


_FORMATS = jsonschema.FormatChecker()


def validate(params: list[tuple[str, str]], schema: Schema) -> None:
    """Validate like upstream: a repeated key is seen with its last value.

    What ``jsonschema.validate`` does, less its check of the schema itself against the
    metaschema, which cost more than the validation on every request (these schemas are ours).
    """
    validator = jsonschema.validators.validator_for(schema)(schema, format_checker=_FORMATS)
    error = jsonschema.exceptions.best_match(validator.iter_errors(dict(params)))
    if error is not None:
        raise InvalidInput(f"Invalid query string parameters: {error}")
