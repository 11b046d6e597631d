"""Crash-safe predictions store: ``RUN_DIR/{run.json, prompts.jsonl, predictions/<slug>/<ds>/run_<k>.jsonl}``.

Replaces upstream SEAM's per-(dataset, run) DataFrame JSON written once at the end
(``datasets_classes/base.py::Dataset.predict``): a crash there lost the whole file. Here each
prediction is one JSONL line, flushed and fsynced as soon as it exists; on resume a torn last line
(a write cut by a kill) is dropped by truncating the file to its last newline, every kept line is
checked against the run (model revision, prompt hash), and an instance is never written twice.
Format: docs/ARCHITECTURE.md "Predictions store".
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from seam_repro import files
from seam_repro.errors import InputError, PredictionsError
from seam_repro.files import OutputError
from seam_repro.generate.base import GenerationRequest, GenerationResult
from seam_repro.hashing import sha256_file

RUN_SCHEMA_VERSION = 1
Key = tuple[str, int, str]


def model_slug(model_id: str) -> str:
    """Directory name of a model: ``/`` and ``@`` become ``__``."""
    return model_id.replace("/", "__").replace("@", "__")


def predictions_path(run_dir: Path, model_id: str, dataset: str, run: int) -> Path:
    return Path(run_dir) / "predictions" / model_slug(model_id) / dataset / f"run_{run}.jsonl"


def make_record(req: GenerationRequest, res: GenerationResult, model_id: str, revision: str,
                generation: dict[str, Any]) -> dict[str, Any]:
    """One predictions line, in the documented field order (plus ``n_prompt_tokens_full``, and
    ``upstream_prompt_text`` for a prompt truncated on the upstream prompt path, ``served`` for
    served backends)."""
    record = {"dataset": req.dataset, "run": req.run, "instance_id": req.instance_id,
              "prompt_sha256": req.prompt_sha256, "templated_prompt_sha256": res.templated_prompt_sha256,
              "seed": req.seed, "generation": generation, "model": {"id": model_id, "revision": revision},
              "output": res.output, "truncated": res.truncated, "n_prompt_tokens": res.n_prompt_tokens,
              "n_output_tokens": res.n_output_tokens, "n_prompt_tokens_full": res.n_prompt_tokens_full}
    if res.upstream_prompt_text is not None:
        record["upstream_prompt_text"] = res.upstream_prompt_text
    if res.served is not None:
        record["served"] = res.served
    return record


def encode_line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")


def repair_torn_tail(path: Path) -> int:
    """Truncate ``path`` to its last newline; return the number of bytes dropped (0 if intact)."""
    size = path.stat().st_size
    if size == 0:
        return 0
    with open(path, "rb+") as fh:
        pos, keep = size, 0
        while pos > 0:
            step = min(1 << 16, pos)
            fh.seek(pos - step)
            chunk = fh.read(step)
            idx = chunk.rfind(b"\n")
            if idx >= 0:
                keep = pos - step + idx + 1
                break
            pos -= step
        if keep < size:
            fh.truncate(keep)
            fh.flush()
            os.fsync(fh.fileno())
        return size - keep


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Complete lines of a JSONL file as (line number, object); an unterminated last line is skipped
    (it is a torn write, repaired on resume); a complete line that is not a JSON object is an error."""
    return files.iter_jsonl(path, complete_only=True, skip_blank=False)


def read_predictions(path: Path, model_id: str | None = None, revision: str | None = None,
                     prompt_hashes: dict[Key, str] | None = None) -> dict[Key, dict[str, Any]]:
    """Predictions of one file keyed by (dataset, run, instance_id), validated: required fields,
    no duplicates, the expected model revision, and prompt hashes equal to the current prompts."""
    out: dict[Key, dict[str, Any]] = {}
    for lineno, rec in iter_jsonl(path):
        where = f"line {lineno}"
        for name, typ in (("dataset", str), ("run", int), ("instance_id", str), ("output", str), ("model", dict)):
            if not isinstance(rec.get(name), typ):
                raise InputError(path, f"missing or not a {typ.__name__}", record=where, field=name)
        key = (rec["dataset"], rec["run"], rec["instance_id"])
        if key in out:
            raise PredictionsError(f"{path}: {where}: duplicate prediction for {key}")
        got = rec["model"]
        if model_id is not None and (got.get("id"), got.get("revision")) != (model_id, revision):
            raise PredictionsError(f"{path}: {where}: written by {got.get('id')}@{got.get('revision')}, "
                                   f"not {model_id}@{revision}; use a new --out directory")
        if prompt_hashes is not None:
            want = prompt_hashes.get(key)
            if want is None:
                raise PredictionsError(f"{path}: {where}: instance {key} is not among this run's prompts")
            if rec.get("prompt_sha256") != want:
                raise PredictionsError(f"{path}: {where}: prompt_sha256 of {key} differs from the current prompt "
                                       "(prompts changed since this store was written)")
        out[key] = rec
    return out


class PredictionWriter:
    """Appends lines to one predictions file with flush + fsync per line."""

    def __init__(self, path: Path):
        files.ensure_dir(path.parent)
        self.path = path
        try:
            self._fh = open(path, "ab")
        except OSError as exc:
            raise OutputError(f"{files.describe_os_error(exc)}; cannot append predictions "
                              "(every line already written is kept)") from None

    def write(self, record: dict[str, Any]) -> None:
        try:
            self._fh.write(encode_line(record))
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except OSError as exc:
            # A partial line may be on disk; it is unterminated, so readers skip it and a resume
            # truncates it. Every earlier line is complete and kept.
            raise OutputError(f"{self.path}: cannot append a prediction: {files.describe_os_error(exc).split(': ', 1)[-1]}; "
                              "the predictions written so far are kept; fix this and rerun the same command to resume"
                              ) from None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._fh.close()


class PredictionStore:
    """All predictions files of one model in a run dir; resumes and refuses foreign lines."""

    def __init__(self, run_dir: Path, model_id: str, revision: str, prompt_hashes: dict[Key, str]):
        self.run_dir, self.model_id, self.revision = Path(run_dir), model_id, revision
        self.prompt_hashes = prompt_hashes
        self._writers: dict[tuple[str, int], PredictionWriter] = {}
        self.done: set[Key] = set()
        self.repaired: list[tuple[Path, int]] = []
        root = self.run_dir / "predictions" / model_slug(model_id)
        if root.is_dir():
            for path in sorted(root.glob("*/run_*.jsonl")):
                dropped = repair_torn_tail(path)
                if dropped:
                    self.repaired.append((path, dropped))
                recs = read_predictions(path, model_id, revision, prompt_hashes)
                for key in recs:
                    if path != predictions_path(self.run_dir, model_id, key[0], key[1]):
                        raise PredictionsError(f"{path}: holds {key}, which belongs in another file")
                self.done.update(recs)

    def append(self, req: GenerationRequest, res: GenerationResult, generation: dict[str, Any]) -> None:
        if req.key in self.done:
            raise PredictionsError(f"{self.run_dir}: refusing to write {req.key} twice")
        fk = (req.dataset, req.run)
        if fk not in self._writers:
            self._writers[fk] = PredictionWriter(predictions_path(self.run_dir, self.model_id, *fk))
        self._writers[fk].write(make_record(req, res, self.model_id, self.revision, generation))
        self.done.add(req.key)

    def close(self) -> None:
        for w in self._writers.values():
            w.close()
        self._writers.clear()


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write via a temporary file + fsync + rename so run.json is never half-written."""
    files.atomic_write_json(path, obj, indent=2, sort_keys=True)


def write_prompts(path: Path, records: Iterable[dict[str, Any]]) -> None:
    files.atomic_write_jsonl(path, records)


_RUN_FIELDS: dict[str, tuple[type, ...]] = {
    "manifest_digest": (str, type(None)), "prompt_digest": (str, type(None)), "profile": (str, type(None)),
    "prompts_sha256": (str, type(None)), "models": (dict,), "sessions": (list,), "shard": (str, type(None)),
    "limit": (int, type(None)), "fingerprint": (dict, type(None)),
}
_MODEL_FIELDS: dict[str, tuple[type, ...]] = {"id": (str,), "revision": (str,), "backend_name": (str, type(None)),
                                              "generation": (dict, type(None))}


def _kinds(types: tuple[type, ...]) -> str:
    names = {str: "a string", dict: "an object", list: "an array", int: "an integer", type(None): "null"}
    return " or ".join(names[t] for t in types)


def validate_run_json(obj: Any, path: Path, required: tuple[str, ...] = ("models", "sessions")) -> dict[str, Any]:
    """Check the shape of run.json (written by this module, but a user may edit or damage it): every
    field another command reads has the documented type, so none of them can crash on it."""
    if not isinstance(obj, dict) or obj.get("schema_version") != RUN_SCHEMA_VERSION:
        raise InputError(path, f"expected a run.json object with schema_version {RUN_SCHEMA_VERSION}",
                         field="schema_version")
    for name, types in _RUN_FIELDS.items():
        if name not in obj:
            if name in required:
                raise InputError(path, f"missing; expected {_kinds(types)}", field=name)
            continue
        value = obj[name]
        if not isinstance(value, types) or isinstance(value, bool):
            raise InputError(path, f"expected {_kinds(types)}, got {files.json_type(value)}", field=name)
    for slug, entry in obj.get("models", {}).items():
        if not isinstance(entry, dict):
            raise InputError(path, f"expected an object, got {files.json_type(entry)}", field=f"models.{slug}")
        for name, types in _MODEL_FIELDS.items():
            if not isinstance(entry.get(name), types):
                raise InputError(path, f"expected {_kinds(types)}, got {files.json_type(entry.get(name))}",
                                 field=f"models.{slug}.{name}")
        if model_slug(entry["id"]) != slug:
            raise InputError(path, f"model id {entry['id']!r} does not belong under '{slug}'", field=f"models.{slug}.id")
    for i, sess in enumerate(obj.get("sessions", [])):
        if not isinstance(sess, dict):
            raise InputError(path, f"expected an object, got {files.json_type(sess)}", field=f"sessions[{i}]")
    return obj


def load_run_json(run_dir: Path, required: tuple[str, ...] = ("models", "sessions")) -> dict[str, Any] | None:
    path = Path(run_dir) / "run.json"
    if not path.exists() and not path.is_symlink():
        return None
    return validate_run_json(files.read_json(path, what="run.json", expect=None), path, required)


def require_run_json(run_dir: Path, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """run.json of a replay run folder; a folder without one is not a run and is refused."""
    obj = load_run_json(run_dir, required)
    if obj is None:
        raise InputError(Path(run_dir) / "run.json", "missing; not a replay run folder "
                         "(expected RUN_DIR/run.json written by `seam-repro replay` or `merge`)")
    return obj


def prepare_run_dir(run_dir: Path, *, manifest: dict[str, Any], prompts: list[dict[str, Any]],
                    model_entry: dict[str, Any], session: dict[str, Any], extra: dict[str, Any],
                    check_existing: Callable[[], Any] | None = None) -> dict[str, Any]:
    """Create run.json + prompts.jsonl, or check an existing run dir belongs to the same manifest,
    prompts, model revision, backend, generation settings and shard before resuming into it.

    ``check_existing`` (reading the stored predictions) runs after those checks and before
    anything is replaced, so a refused resume leaves run.json and prompts.jsonl untouched."""
    run_dir = Path(run_dir)
    files.ensure_dir(run_dir)
    prompts_file = run_dir / "prompts.jsonl"
    tmp_prompts = run_dir / "prompts.jsonl.new"
    write_prompts(tmp_prompts, prompts)
    prompts_sha = sha256_file(tmp_prompts)
    current = load_run_json(run_dir)
    slug = model_slug(model_entry["id"])
    if current is None:
        current = {"schema_version": RUN_SCHEMA_VERSION, "manifest_digest": manifest.get("digest"),
                   "prompt_digest": manifest.get("prompt_digest"), "profile": manifest.get("profile"),
                   "prompts_sha256": prompts_sha,
                   "fingerprint": session.get("fingerprint"), "models": {}, "sessions": [], **extra}
    else:
        for name, want in (("manifest_digest", manifest.get("digest")), ("prompts_sha256", prompts_sha),
                           *extra.items()):
            if current.get(name) != want:
                tmp_prompts.unlink()
                raise PredictionsError(f"{run_dir / 'run.json'}: {name} is {current.get(name)!r}, this replay has "
                                       f"{want!r}; use a new --out directory")
        old = current["models"].get(slug)
        if old is not None:
            for name in ("id", "revision", "backend_name", "generation"):
                if old.get(name) != model_entry.get(name):
                    tmp_prompts.unlink()
                    raise PredictionsError(f"{run_dir / 'run.json'}: model {slug}: {name} was {old.get(name)!r}, "
                                           f"now {model_entry.get(name)!r}; refusing to mix predictions")
    if check_existing is not None:
        try:
            check_existing()
        except BaseException:
            tmp_prompts.unlink(missing_ok=True)
            raise
    os.replace(tmp_prompts, prompts_file)
    current["models"].setdefault(slug, model_entry)
    current["sessions"].append({**session, "model": slug})
    write_json_atomic(run_dir / "run.json", current)
    return current
