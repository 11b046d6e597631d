"""``--model-args key=value,...``: backend options, validated per backend against ``data/model_args.json``.

As lm-evaluation-harness' ``--model_args``, but every key is declared with its type and whether it can
change the generated text ("protocol": recorded with every prediction, checked on resume and merge) or
not ("operational": recorded in run.json). An API key never passes here (``api_key_env`` names it).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from seam_repro.errors import InputError

OPTION = "--model-args"


@dataclass(frozen=True)
class ArgSpec:
    """One accepted key: its type, allowed values or range, role and help text."""

    name: str
    type: str
    """``str``, ``int``, ``float``, ``bool`` or ``path`` (a file that must exist; recorded with its sha256)."""
    protocol: bool
    help: str
    choices: tuple[str, ...] = ()
    min: float | None = None
    max: float | None = None
    alias_of: str | None = None


def _load_specs() -> dict[str, dict[str, ArgSpec]]:
    raw = json.loads(resources.files("seam_repro").joinpath("data/model_args.json").read_text("utf-8"))
    return {backend: {name: ArgSpec(name=name, **{**k, "choices": tuple(k.get("choices", ()))})
                      for name, k in keys.items()}
            for backend, keys in raw["backends"].items()}


SPECS: dict[str, dict[str, ArgSpec]] = _load_specs()
"""Backend -> key -> spec, from ``data/model_args.json`` (also the source of the table in docs/models.md)."""

KEY_SHAPE = re.compile(r"[a-z_]{1,40}")
"""What every accepted key looks like (lower-case words joined by ``_``). An unknown key or a part
without ``=`` is quoted in an error only in this shape: anything else may be an API key pasted in
the wrong place (a base64 key ends in ``=``, so it even splits into a "key" and a value)."""
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _shown(text: str) -> str:
    """``text`` quoted if it has the shape of a key (:data:`KEY_SHAPE`), else only its length."""
    return repr(text) if KEY_SHAPE.fullmatch(text) else f"a text of {len(text)} characters (not shown in case it is a secret)"


def split_pairs(text: str | None) -> list[tuple[str, str]]:
    """``"a=1,b=x"`` -> ``[("a", "1"), ("b", "x")]``; a value may not contain a comma. A part
    without ``=`` is quoted back only in the shape of a key (:data:`KEY_SHAPE`)."""
    if text is None or not text.strip():
        return []
    parts = text.split(",")
    pairs = []
    for n, part in enumerate(parts, 1):
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            bare = part.strip()
            shown = repr(bare) if not bare or KEY_SHAPE.fullmatch(bare) else f"part {n} of {len(parts)}: {_shown(bare)}"
            raise InputError(OPTION, f"expected key=value,key=value, got {shown}")
        pairs.append((key, value))
    return pairs


def _convert(backend: str, spec: ArgSpec, value: str) -> Any:
    where = f"{backend} backend, key {spec.name}"
    if spec.type in ("str", "path"):
        if not value:
            raise InputError(OPTION, f"{where}: expected a non-empty value")
        if spec.choices and value not in spec.choices:
            raise InputError(OPTION, f"{where}: expected one of {', '.join(spec.choices)}, got {value!r}")
        if spec.type == "path" and not Path(value).is_file():
            raise InputError(OPTION, f"{where}: expected an existing file, got {value!r}")
        return value
    if spec.type == "bool":
        low = value.lower()
        if low not in _TRUE | _FALSE:
            raise InputError(OPTION, f"{where}: expected true or false, got {value!r}")
        return low in _TRUE
    try:
        number: int | float = int(value) if spec.type == "int" else float(value)
    except ValueError:
        raise InputError(OPTION, f"{where}: expected {'an integer' if spec.type == 'int' else 'a number'}, "
                         f"got {value!r}") from None
    if not math.isfinite(number) or (spec.min is not None and number < spec.min) or \
            (spec.max is not None and number > spec.max):
        bounds = f"{spec.min if spec.min is not None else '-inf'}..{spec.max if spec.max is not None else 'inf'}"
        raise InputError(OPTION, f"{where}: expected a value in {bounds}, got {value!r}")
    return number


def parse_model_args(backend: str, text: str | None) -> dict[str, Any]:
    """Validate ``--model-args`` for ``backend``; returns typed values under canonical key names.
    An unknown key is refused with the list of keys the backend accepts."""
    specs = SPECS.get(backend, {})
    out: dict[str, Any] = {}
    pairs = split_pairs(text)
    if "api_key_env" in specs:  # the key is known before any value is quoted in an error
        from seam_repro.generate.openai_compat import OpenAIBackend, remember_key

        remember_key(dict(pairs).get("api_key_env") or OpenAIBackend.api_key_env)
    for key, value in pairs:
        spec = specs.get(key)
        if spec is None:
            accepted = ", ".join(sorted(specs)) or "none"
            hint = "; pass the key through api_key_env (the name of an environment variable)" \
                if "key" in key.lower() and "api_key_env" in specs else ""
            raise InputError(OPTION, f"unknown key {_shown(key)} for the {backend} backend; accepted: {accepted}{hint}")
        name = spec.alias_of or key
        if name in out:
            raise InputError(OPTION, f"{backend} backend: key {name!r} given twice")
        out[name] = _convert(backend, specs[name], value)
    return out


def protocol_args(backend: str, args: dict[str, Any]) -> dict[str, Any]:
    """The subset of ``args`` that can change generated text (recorded with every prediction)."""
    specs = SPECS.get(backend, {})
    return {k: v for k, v in sorted(args.items()) if k in specs and specs[k].protocol}


def recorded_args(backend: str, args: dict[str, Any]) -> dict[str, Any]:
    """``args`` as recorded in run.json and predictions: a ``path`` value becomes ``{file, sha256}``,
    so a changed template file is a changed setting even under the same name."""
    from seam_repro.hashing import sha256_file

    specs = SPECS.get(backend, {})
    out: dict[str, Any] = {}
    for key, value in sorted(args.items()):
        if specs.get(key) is not None and specs[key].type == "path":
            try:
                out[key] = {"file": str(value), "sha256": sha256_file(value)}
            except OSError as exc:
                raise InputError(value, f"{OPTION} {key}: cannot read the file ({exc.strerror or exc})") from None
        else:
            out[key] = value
    return out
