"""Manifest schema conformance: ``fastjsonschema`` decides, ``jsonschema`` explains.

Every manifest-reading command validates the manifest against ``data/manifest.schema.json``.
``jsonschema`` is slow at the paper's scale (docs/performance.md), so the schema is compiled by
``fastjsonschema`` once per process and only a document it rejects goes to ``jsonschema``, whose
messages are the ones shown. Both accept the same documents for the keywords this schema uses (type,
const, enum, pattern, required, properties, additionalProperties, items, minItems, minimum, minLength,
anyOf, a sibling-free ``$ref``: the same meaning in draft 7 and 2020-12); tests/test_startup.py
checks that they agree.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


@functools.lru_cache(maxsize=8)
def _compiled(schema_path: str) -> Callable[[Any], Any]:
    import fastjsonschema

    return fastjsonschema.compile(json.loads(Path(schema_path).read_text(encoding="utf-8")))


def conforms(instance: Any, schema_path: str | Path) -> bool:
    """True when ``instance`` is valid against the schema file (no error detail: see module doc)."""
    from fastjsonschema import JsonSchemaException

    try:
        _compiled(str(schema_path))(instance)
    except JsonSchemaException:
        return False
    return True
