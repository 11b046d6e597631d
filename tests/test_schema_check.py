"""The schema compiler (seam_repro.schema_check) on small schemas: what it compiles is sound (it
never accepts a document jsonschema refuses) and agrees with jsonschema on plain JSON values."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from seam_repro.schema_check import _compile_source, _Unsupported

SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"a": {"type": ["integer", "null"]}, "b": {"enum": [1, "x", None, True]}},
     "additionalProperties": {"type": "string", "minLength": 2}},
    {"type": "array", "minItems": 2, "items": {"type": "number", "minimum": 0.5}},
    {"anyOf": [{"type": "string", "pattern": "^a"}, {"type": "integer"}, {"const": False}]},
    {"type": "object", "not": {"required": ["x"]}, "required": ["y"]},
    {"type": "array", "items": {"type": "array", "items": {"type": "boolean"}}},
    {"type": "object", "properties": {"p": {"type": "object", "properties": {
        "q": {"anyOf": [{"type": "null"}, {"type": "object", "required": ["r"], "additionalProperties": False}]}}}}},
    {"$defs": {"h": {"type": "string", "pattern": "^[0-9a-f]{2}$"}}, "type": "object",
     "properties": {"d": {"$ref": "#/$defs/h"}}},
]
VALUES: list[Any] = [
    None, True, False, 0, 1, 2, -1, 0.5, 1.0, 0.25, "", "a", "ab", "ba", "0f", "0f\n", "0F", [], [1], [1, 2], [0.5, 3],
    [[True]], [[1]], [[]], {}, {"x": 1}, {"y": 1}, {"x": 1, "y": 2}, {"a": 1}, {"a": None, "b": "x"}, {"a": 1.5},
    {"b": 2}, {"b": True}, {"b": 1}, {"c": "zz"}, {"c": "z"}, {"p": {"q": None}}, {"p": {"q": {}}},
    {"p": {"q": {"r": 1}}}, {"p": {"q": {"r": 1, "s": 2}}}, {"p": 1}, {"d": "0f"}, {"d": "0g"}, {"d": 15},
]
PLAIN_INTEGERS_ONLY = {1.0}
"""Values jsonschema may accept where the compiled check refuses: an integer written as a float."""


@pytest.mark.parametrize("schema", SCHEMAS)
def test_compiled_check_is_jsonschema_on_plain_json(schema: dict[str, Any]) -> None:
    namespace: dict[str, Any] = {}
    exec(compile(_compile_source(schema), "<test>", "exec"), namespace)
    validator = jsonschema.Draft202012Validator(schema)
    for value in VALUES:
        fast, slow = namespace["validate"](value), validator.is_valid(value)
        assert not (fast and not slow), f"{value!r}: accepted by the compiled check, refused by jsonschema"
        assert fast == slow or value in PLAIN_INTEGERS_ONLY, f"{value!r}: compiled {fast}, jsonschema {slow}"


@pytest.mark.parametrize("schema", [
    {"maxLength": 3}, {"type": "string", "minimum": 1}, {"type": ["string", "null"], "minLength": 1},
    {"not": {"type": "string"}}, {"$ref": "#/elsewhere"}, {"const": 1.5}, {"type": "object", "minLength": 1},
    {"type": "object", "properties": []}, {"type": "string", "minLength": "1"}, False,
])
def test_schema_constructs_it_does_not_know_are_refused_whole(schema: Any) -> None:
    with pytest.raises(_Unsupported):
        _compile_source({"type": "object", "properties": {"x": schema}})
