"""Fast JSON-schema conformance check, with jsonschema kept as the judge of what is wrong.

Every manifest-reading command (``prompts``, ``verify``, ``replay``, ``score``) validates the manifest
against ``data/manifest.schema.json``. ``jsonschema`` costs ~0.17 s of CPU per call on a 680-prompt
manifest (0.09 s importing it, 0.07 s walking ``$ref`` per instance). Here the schema is compiled
once, by :func:`_schema_code`, into one plain Python function that answers yes or no
(``manifest_schema_code.py``, ~1 ms for that manifest; fastjsonschema's generic code took ~2.5 ms).

The compiled check is *sound*: it accepts a document only if jsonschema accepts it. It may refuse
a few documents jsonschema accepts (a dict or str subclass, an integer written ``1.0``, a
``Decimal``: the kit's JSON reader makes none of them), and every document it refuses goes to
jsonschema, which decides and names what is wrong, so verdicts and error messages are jsonschema's.
It knows the keywords this schema uses, with their draft 2020-12 meaning: type, const, enum,
pattern, minLength, minimum, minItems, items, required, properties, additionalProperties, anyOf,
``not`` over ``required``, and a sibling-free ``$ref`` into ``$defs`` (inlined). A schema with any
other keyword is not compiled: every document then goes to jsonschema (slow, never wrong).
tests/test_startup.py holds it to jsonschema on valid and broken manifests.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

PRECOMPILED = Path(__file__).with_name("manifest_schema_code.py")
""":func:`_schema_code` of ``data/manifest.schema.json``, written by ``python -m
seam_repro.schema_check`` (its byte-code is cached like any other module's). Used only while the
schema's sha256 equals the one it records, so an edited schema is never checked by stale code."""

_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "title", "description"})
_EXACT_TYPE = {"object": "dict", "array": "list", "string": "str", "integer": "int", "boolean": "bool"}
"""JSON type -> the one Python type accepted for it (``type(v) is T``: stricter than jsonschema's
isinstance, which is sound). "number" is int or float, "null" is None."""
_TYPE_KEYWORDS = {"object": {"required", "properties", "additionalProperties"}, "array": {"items", "minItems"},
                  "string": {"pattern", "minLength"}, "integer": {"minimum"}, "number": {"minimum"}}
"""Keywords that only apply to one type: compiled only under a ``type`` naming just that type (the
type check comes first, so they never meet another type)."""


class _Unsupported(Exception):
    """A schema construct the compiler does not know: the schema is left to jsonschema."""


class _Compiler:
    """Emits the body of ``validate(v0) -> bool``: every check is ``if <fails>: return False``."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.constants: dict[str, str] = {}
        """Module-level constant (a key set, a compiled pattern) by its expression, made once."""
        self.helpers: list[str] = []

    def constant(self, expr: str) -> str:
        return self.constants.setdefault(expr, f"_C{len(self.constants)}")

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def check(self, schema: Any, depth: int, indent: int) -> None:
        """Lines that return False when ``v{depth}`` does not conform to ``schema``."""
        if schema is True or schema == {}:
            return
        if not isinstance(schema, dict):
            raise _Unsupported(f"schema {schema!r}")
        unknown = set(schema) - _ANNOTATIONS - {"type", "const", "enum", "anyOf", "not"} - set().union(
            *_TYPE_KEYWORDS.values())
        if unknown:
            raise _Unsupported(f"keywords {sorted(unknown)}")
        for key, kind in (("properties", dict), ("required", list), ("enum", list), ("anyOf", list)):
            if key in schema and not isinstance(schema[key], kind):
                raise _Unsupported(f"{key} {schema[key]!r}")
        v = f"v{depth}"
        types = schema.get("type")
        types = [types] if isinstance(types, str) else types
        for key in set(schema) & set().union(*_TYPE_KEYWORDS.values()):
            if types is None or len(types) != 1 or key not in _TYPE_KEYWORDS.get(types[0], ()):
                raise _Unsupported(f"{key!r} without a type it applies to")
        if types is not None:
            tests = [_type_test(t, v) for t in types]
            self.emit(indent, f"if not ({' or '.join(tests)}):")
            self.emit(indent + 1, "return False")
        if "const" in schema:
            self.emit(indent, f"if not ({_value_test(schema['const'], v)}):")
            self.emit(indent + 1, "return False")
        if "enum" in schema:
            self.emit(indent, f"if not ({' or '.join(_value_test(e, v) for e in schema['enum'])}):")
            self.emit(indent + 1, "return False")
        if "minLength" in schema:
            self.emit(indent, f"if len({v}) < {_number(schema, 'minLength')}:")
            self.emit(indent + 1, "return False")
        if "pattern" in schema:
            regex = self.constant(f"re.compile({schema['pattern']!r})")
            self.emit(indent, f"if not {regex}.search({v}):")
            self.emit(indent + 1, "return False")
        if "minimum" in schema:
            self.emit(indent, f"if {v} < {_number(schema, 'minimum')}:")
            self.emit(indent + 1, "return False")
        if "minItems" in schema:
            self.emit(indent, f"if len({v}) < {_number(schema, 'minItems')}:")
            self.emit(indent + 1, "return False")
        if "items" in schema:
            self.emit(indent, f"for v{depth + 1} in {v}:")
            self.loop_body(schema["items"], depth + 1, indent + 1)
        if "required" in schema:
            self.emit(indent, f"if not {self.keys(schema['required'])} <= {v}.keys():")
            self.emit(indent + 1, "return False")
        self.properties(schema, depth, indent)
        if "anyOf" in schema:
            names = [self.helper(branch) for branch in schema["anyOf"]]
            self.emit(indent, f"if not ({' or '.join(f'{n}({v})' for n in names)}):")
            self.emit(indent + 1, "return False")
        if "not" in schema:
            self.emit(indent, f"if {self.exact(schema['not'], v)}:")
            self.emit(indent + 1, "return False")

    def loop_body(self, schema: Any, depth: int, indent: int) -> None:
        before = len(self.lines)
        self.check(schema, depth, indent)
        if len(self.lines) == before:
            self.emit(indent, "pass")

    def properties(self, schema: dict[str, Any], depth: int, indent: int) -> None:
        v, props = f"v{depth}", schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        if extra is False:
            self.emit(indent, f"if not {v}.keys() <= {self.keys(props)}:")
            self.emit(indent + 1, "return False")
        elif extra is not True and extra != {}:
            values = f"({v}[k] for k in {v}.keys() - {self.keys(props)})" if props else f"{v}.values()"
            self.emit(indent, f"for v{depth + 1} in {values}:")
            self.loop_body(extra, depth + 1, indent + 1)
        for name, sub in props.items():
            before = len(self.lines)
            self.emit(indent, f"if {name!r} in {v}:")
            self.emit(indent + 1, f"v{depth + 1} = {v}[{name!r}]")
            marker = len(self.lines)
            self.check(sub, depth + 1, indent + 1)
            if len(self.lines) == marker:  # nothing to check: drop the lookup
                del self.lines[before:]

    def keys(self, names: Any) -> str:
        if not all(isinstance(n, str) for n in names):
            raise _Unsupported(f"property names {names!r}")
        return self.constant(f"frozenset({sorted(names)!r})")

    def helper(self, schema: Any) -> str:
        """A function ``_anyN(v0) -> bool`` for one branch of ``anyOf``."""
        sub = _Compiler()
        sub.constants = self.constants  # one numbering for all module-level constants
        sub.helpers = self.helpers
        sub.check(schema, 0, 1)
        name = f"_any{len(self.helpers)}"
        self.helpers.append("\n".join([f"def {name}(v0):", *sub.lines, "    return True"]))
        return name

    def exact(self, schema: Any, v: str) -> str:
        """An expression true exactly when jsonschema accepts ``v`` (a sound check is not enough
        under ``not``): only ``{"required": [...]}``, which holds for every non-object."""
        if not isinstance(schema, dict) or set(schema) != {"required"}:
            raise _Unsupported(f"'not' over {schema!r}")
        return f"(not isinstance({v}, dict) or {self.keys(schema['required'])} <= {v}.keys())"


def _number(schema: dict[str, Any], key: str) -> str:
    value = schema[key]
    if type(value) not in (int, float):
        raise _Unsupported(f"{key} {value!r}")
    return repr(value)


def _type_test(name: str, v: str) -> str:
    if name in _EXACT_TYPE:
        return f"type({v}) is {_EXACT_TYPE[name]}"
    if name == "number":
        return f"type({v}) is int or type({v}) is float"
    if name == "null":
        return f"{v} is None"
    raise _Unsupported(f"type {name!r}")


def _value_test(value: Any, v: str) -> str:
    """``v`` equals the JSON scalar ``value`` (same type: jsonschema tells true from 1)."""
    if value is None or isinstance(value, bool):
        return f"{v} is {value!r}"
    if type(value) in (int, str):
        return f"(type({v}) is {type(value).__name__} and {v} == {value!r})"
    raise _Unsupported(f"const/enum value {value!r}")


def _inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    """``node`` with each sibling-free ``{"$ref": "#/$defs/NAME"}`` replaced by that definition (the
    same constraint). Any other ``$ref`` is left, and refused by the compiler."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if len(node) == 1 and isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs:
            return _inline_refs(defs[ref[8:]], defs)
        return {k: _inline_refs(v, defs) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline_refs(v, defs) for v in node]
    return node


def _compile_source(schema: Any) -> str:
    """Python source defining ``validate(v0) -> bool`` for ``schema`` (raises _Unsupported)."""
    if not isinstance(schema, dict):
        raise _Unsupported("a schema that is not an object")
    compiler, defs = _Compiler(), schema.get("$defs")
    compiler.check(_inline_refs(schema, defs if isinstance(defs, dict) else {}), 0, 1)
    constants = [f"{name} = {expr}" for expr, name in compiler.constants.items()]
    return "\n".join(["import re", "", *constants, "", *(h + "\n" for h in compiler.helpers), "",
                      "def validate(v0):", *compiler.lines, "    return True", ""])


def _schema_code(schema_text: str) -> str:
    """The precompiled module's text for a schema (what ``PRECOMPILED`` must hold)."""
    digest = hashlib.sha256(schema_text.encode("utf-8")).hexdigest()
    return (f'"""Generated by `python -m seam_repro.schema_check` from data/manifest.schema.json; do not '
            f'edit."""\n# ruff: noqa\nSCHEMA_SHA256 = "{digest}"\n{_compile_source(json.loads(schema_text))}')


def _refuse_all(instance: Any) -> bool:
    return False


@functools.lru_cache(maxsize=8)
def _compiled(schema_path: str) -> Callable[[Any], bool]:
    text = Path(schema_path).read_text(encoding="utf-8")
    if Path(schema_path).name == "manifest.schema.json" and PRECOMPILED.is_file():
        from seam_repro import manifest_schema_code

        if manifest_schema_code.SCHEMA_SHA256 == hashlib.sha256(text.encode("utf-8")).hexdigest():
            return manifest_schema_code.validate  # type: ignore[no-any-return]
    try:
        source = _compile_source(json.loads(text))
    except (_Unsupported, RecursionError):  # RecursionError: a $ref cycle, not inlinable
        return _refuse_all  # every document goes to jsonschema
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<compiled {schema_path}>", "exec"), namespace)  # noqa: S102 (our own generated code)
    return namespace["validate"]  # type: ignore[no-any-return]


def conforms(instance: Any, schema_path: str | Path) -> bool:
    """True only when ``instance`` is valid against the schema file (fast path; no error detail).
    False also for the rare valid document the compiled check is too strict for: the caller asks
    jsonschema then."""
    return _compiled(str(schema_path))(instance)


if __name__ == "__main__":  # regenerate PRECOMPILED after editing the schema
    schema = Path(__file__).parent / "data" / "manifest.schema.json"  # manifest.format.SCHEMA_PATH
    PRECOMPILED.write_text(_schema_code(schema.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {PRECOMPILED}")
