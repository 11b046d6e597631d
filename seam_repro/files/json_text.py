"""The kit's JSON text form: UTF-8, no NaN; JSONL lines compact and newline-terminated."""

from __future__ import annotations

import json
from typing import Any


def dumps_json(obj: Any, *, indent: int | None = 1, sort_keys: bool = False) -> str:
    """The kit's JSON text form: UTF-8, no NaN, newline-terminated."""
    return json.dumps(obj, indent=indent, sort_keys=sort_keys, ensure_ascii=False, allow_nan=False) + "\n"


def jsonl_line(record: Any) -> bytes:
    """One compact JSON line (UTF-8, newline-terminated): the form of a run folder's prompts.jsonl."""
    return (json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n").encode("utf-8")
