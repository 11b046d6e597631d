"""The secrets this process holds (a served backend's API key) and their removal from what it writes
or prints.

The openai backend registers its key as soon as ``--model-args`` are parsed; three points then redact
with the registry: every server answer before it is read (``openai_compat``), every result and run.json
entry before it is written (``run.replay``), and every error line the CLI prints (``cli._fail``).
Redaction runs before any truncation (a cut key would no longer match). A key shorter than
:data:`MIN_SECRET_LEN` is a placeholder (vLLM's ``EMPTY``, llama.cpp's ``no-key``) and is not masked:
masking a common word would corrupt outputs and prompts.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")

MIN_SECRET_LEN = 8
MASK = "[REDACTED]"

_secrets: set[str] = set()


def register_secret(value: str) -> None:
    """Remember ``value`` for the rest of the process (keys are never forgotten: a later error line
    may still quote a body that held one)."""
    if len(value) >= MIN_SECRET_LEN:
        _secrets.add(value)


def redact_text(text: str) -> str:
    """``text`` with every registered secret replaced by :data:`MASK` (longest first, so a key that
    contains another is masked whole)."""
    if not _secrets or not isinstance(text, str):
        return text
    for secret in sorted(_secrets, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def redact_json(obj: Any) -> Any:
    """A copy of a JSON-like value with every string (mapping keys included) redacted; other values
    are returned as they are. Without a registered secret the value itself is returned."""
    if not _secrets:
        return obj
    if isinstance(obj, str):
        return redact_text(obj)
    if isinstance(obj, dict):
        return {redact_text(k) if isinstance(k, str) else k: redact_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(redact_json(v) for v in obj)
    return obj


def redact_record(obj: T) -> T:
    """A dataclass instance (a ``GenerationResult``) with every init field passed through
    :func:`redact_json`; the instance itself when no secret is registered."""
    if not _secrets:
        return obj
    values = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}  # type: ignore[arg-type]
    return dataclasses.replace(obj, **redact_json(values))  # type: ignore[type-var]
