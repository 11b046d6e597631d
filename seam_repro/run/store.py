"""The run folder ``RUN_DIR/{run.json, manifest.json, prompts.jsonl, predictions/<slug>/<ds>/run_<k>.jsonl}``:
its layout, reading and writing its files, and checking it against its manifest. Other stages ask
here: one reader per file (``read_prompts``, ``read_prediction_file``, run.json), one rule for a
torn last line (``read_lines``).

Replaces upstream SEAM's per-(dataset, run) DataFrame JSON written once at the end
(``datasets_classes/base.py::Dataset.predict``), which a crash lost whole. Here each prediction is
one JSONL line, handed to the kernel (one ``write``) as soon as it exists, and each file is fsynced
once per batch: a SIGKILL loses no line already written, a machine crash at most the lines written
since the last batch's fsync. On resume a torn last line (a write cut by a kill) is cut off, every
kept line is checked against the run (model revision, prompt hash), and no instance is written
twice. Format: docs/ARCHITECTURE.md "Predictions store".
"""

from __future__ import annotations

import contextlib
import mmap
import os
import shlex
import shutil
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from seam_repro.errors import InputError, PredictionsError, SeamReproError, version_mismatch
from seam_repro.files import atomic, json_text, reading
from seam_repro.files.atomic import OutputError
from seam_repro.generate.base import GenerationRequest, GenerationResult
from seam_repro.hashing import digest_of_hashes, sha256_bytes, sha256_file, sha256_json, sha256_text
from seam_repro.manifest.format import load_manifest, write_manifest
from seam_repro.manifest.trust import (
    PROTOCOL_FIELDS,
    TrustedManifest,
    record_problems,
    run_protocol,
    score_keys,
    trusted,
)
from seam_repro.specs import load_suite

if TYPE_CHECKING:  # replay's spool; the commands that only read run folders do not import rendering
    from seam_repro.run.spool import PromptSpool

RUN_SCHEMA_VERSION = 1
Key = tuple[str, int, str]


# --- the run folder's layout: every other module asks here ------------------------------------------
def run_json_path(run_dir: Path) -> Path:
    return Path(run_dir) / "run.json"


def prompts_path(run_dir: Path) -> Path:
    return Path(run_dir) / "prompts.jsonl"


def run_log_path(run_dir: Path) -> Path:
    """``replay``'s log: what it printed plus debug detail (``verbosity.run_log``)."""
    return Path(run_dir) / "replay.log"


def run_manifest_path(run_dir: Path) -> Path:
    """Copy of the replayed manifest inside a run folder: what ``score`` checks the run against."""
    return Path(run_dir) / "manifest.json"


def frozen_manifest_path(run_dir: Path, manifest_path: Path) -> Path:
    """Where the frozen copy of an unfrozen manifest goes: inside the run folder, beside run.json."""
    return Path(run_dir) / f"{Path(manifest_path).stem}.frozen.json"


RUN_FOLDER_WRITES = ("run.json", "prompts.jsonl", "predictions", "scores")
"""What ``replay`` (re)writes in a run folder: no input of the replay may lie there (``guard_output``).
``manifest.json`` is written only where absent (``write_run_manifest``), so resuming from it is safe."""


def predictions_root(run_dir: Path) -> Path:
    return Path(run_dir) / "predictions"


def scores_root(run_dir: Path) -> Path:
    """``RUN_DIR/scores``: written by the scoring stage (``scores/<model_slug>/``), read by analysis."""
    return Path(run_dir) / "scores"


def model_dirs(run_dir: Path) -> list[Path]:
    """``RUN_DIR/predictions/<model_slug>/`` folders, sorted (none: an empty list)."""
    root = predictions_root(run_dir)
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


class ScoresWriter:
    """One model's scores folder (``scores/<model_slug>/`` or under ``score --out``), written while
    scoring goes: ``instance_scores.jsonl`` and ``samples.jsonl`` line by line into temporary
    siblings, renamed in place when the block succeeds, then ``summary.json`` (set ``summary``
    inside the block). An error inside the block leaves the folder as it was."""

    def __init__(self, target: Path):
        self.target = Path(target)
        self.summary: dict[str, Any] | None = None

    def __enter__(self) -> ScoresWriter:
        with contextlib.ExitStack() as stack:
            self._lines = stack.enter_context(atomic.atomic_writer(self.target / "instance_scores.jsonl"))
            self._samples = stack.enter_context(atomic.atomic_writer(self.target / "samples.jsonl"))
            self._stack = stack.pop_all()
        return self

    def write(self, line: dict[str, Any], sample: dict[str, Any]) -> None:
        for fh, obj in ((self._lines, line), (self._samples, sample)):
            fh.write(json_text.dumps_json(obj, indent=None).encode("utf-8"))

    def __exit__(self, *exc: Any) -> None:
        self._stack.__exit__(*exc)
        if exc[0] is None:
            atomic.atomic_write_bytes(self.target / "summary.json", json_text.dumps_json(self.summary, indent=1).encode("utf-8"))


def model_slug(model_id: str) -> str:
    """Directory name of a model: ``/`` and ``@`` become ``__``."""
    return model_id.replace("/", "__").replace("@", "__")


MAX_DISPLAY_NAME = 200
"""Longest display name accepted: a table cell and a plot label, not a paragraph."""


def display_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a display name (``None`` when it can): it is shown in report.md's
    tables, notes and plots, where a line break or other control character starts a new row or
    heading. Table pipes are escaped on output (``report.md_cell``), so they are allowed."""
    if not name.strip():
        return "expected a non-empty display name"
    if len(name) > MAX_DISPLAY_NAME:
        return f"expected at most {MAX_DISPLAY_NAME} characters, got {len(name)}"
    for ch in name:  # line breaks and other controls, and the bidi overrides that reorder a row
        if unicodedata.category(ch) in ("Cc", "Zl", "Zp") or "\u202a" <= ch <= "\u202e" or "\u2066" <= ch <= "\u2069":
            return f"expected printable text on one line, got the control character {ch!r}"
    return None


def predictions_path(run_dir: Path, model_id: str, dataset: str, run: int) -> Path:
    return model_run_file(predictions_root(run_dir) / model_slug(model_id), dataset, run)


def model_run_file(model_dir: Path, dataset: str, run: int) -> Path:
    """``<model_dir>/<dataset>/run_<k>.jsonl``: one (dataset, run) of one model's predictions."""
    return Path(model_dir) / dataset / f"run_{run}.jsonl"


def prediction_files(model_dir: Path) -> list[Path]:
    """``predictions/<model_slug>/<dataset>/run_<k>.jsonl`` files of one model folder, sorted."""
    model_dir = Path(model_dir)
    return sorted(model_dir.glob("*/run_*.jsonl")) if model_dir.is_dir() else []


def count_stored(run_dir: Path) -> int:
    """Complete prediction lines of every model in a run folder (a torn last line is not counted)."""
    return sum(p.read_bytes().count(b"\n") for m in model_dirs(run_dir) for p in prediction_files(m))


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


def repair_torn_tail(path: Path) -> int:
    """Truncate ``path`` to its last newline; return the number of bytes dropped (0 if intact)."""
    size = path.stat().st_size
    if size == 0:
        return 0
    with open(path, "rb+") as fh:
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as view:  # scanned from the end, not read whole
            keep = view.rfind(b"\n") + 1
        if keep < size:
            fh.truncate(keep)
            os.fsync(fh.fileno())
    return size - keep


def read_lines(path: Path) -> Iterator[tuple[int, dict[str, Any], bool]]:
    """(line number, object, decodable) for each line of a run folder's JSONL file, read as they
    come: the one reading rule of the run folder. Every line the kit writes ends with a newline,
    so a last line without one is a torn write (a kill mid-``write``): it is never read (replay's
    resume cuts it off, ``score`` and ``submit`` refuse the file until then). Blank lines are
    skipped; a complete line that is not a JSON object is an error; bytes that are not UTF-8 are
    replaced and the line flagged (model output is scored as a format failure, not a crash)."""
    flagged: set[int] = set()
    for n, obj in reading.iter_jsonl(path, complete_only=True, undecodable=flagged):
        yield n, obj, n not in flagged


PREDICTION_FIELDS: dict[str, type] = {"dataset": str, "run": int, "instance_id": str, "output": str,
                                      "model": dict}
"""What every predictions line holds (docs/ARCHITECTURE.md "Predictions store"); checked against
the run's prompts, its ``prompt_sha256`` too."""


@dataclass
class PredictionFile:
    """One ``predictions/<slug>/<dataset>/run_<k>.jsonl`` file as read by :func:`read_prediction_file`:
    its lines by key in file order, their ``{"id", "revision"}`` (the ``model`` passed in, or the first
    line's) and the keys of lines whose bytes were not UTF-8 (replaced)."""

    records: dict[Key, dict[str, Any]]
    model: dict[str, Any] | None
    undecodable: set[Key]


def read_prediction_file(path: Path, prompt_hashes: Mapping[Key, str] | None = None, *,
                         model: dict[str, Any] | None = None, expect: tuple[str, str] | None = None) -> PredictionFile:
    """The one reader of a predictions file: every line's fields, no duplicate, filed under its
    dataset and run, written for the run's prompts (``prompt_hashes``), and by one model: ``expect``
    (id, revision) when the caller knows it (resume, merge), else all lines agree with ``model``
    (another file's, or the first line's)."""
    from seam_repro.manifest.prompts import require_fields  # not at import: it loads rendering

    fields = PREDICTION_FIELDS if prompt_hashes is None else {**PREDICTION_FIELDS, "prompt_sha256": str}
    out: dict[Key, dict[str, Any]] = {}
    undecodable: set[Key] = set()
    for lineno, rec, decodable in read_lines(path):
        where = f"line {lineno}"
        require_fields(rec, fields, path, where)
        if not isinstance(rec.get("upstream_prompt_text", ""), str):
            raise InputError(path, "expected the decoded truncated prompt as a string", record=where,
                             field="upstream_prompt_text")
        key = (rec["dataset"], rec["run"], rec["instance_id"])
        if prompt_hashes is not None:
            if rec["dataset"] != path.parent.name or path.name != f"run_{rec['run']}.jsonl":
                raise InputError(path, f"record of {rec['dataset']} run {rec['run']} filed under "
                                 f"{path.parent.name}/{path.name}", record=where)
            if key not in prompt_hashes:
                raise PredictionsError(f"{path}: {where}: instance {key} is not among this run's prompts (prompts.jsonl)")
            if rec["prompt_sha256"] != prompt_hashes[key]:
                raise PredictionsError(f"{path}: {where}: prompt_sha256 of {key} differs from prompts.jsonl "
                                       "(predictions were made for other prompts)")
        if key in out:
            raise PredictionsError(f"{path}: {where}: duplicate prediction for {key}")
        got = {"id": rec["model"].get("id"), "revision": rec["model"].get("revision")}
        if expect is not None and (got["id"], got["revision"]) != expect:
            raise PredictionsError(f"{path}: {where}: written by {got['id']}@{got['revision']}, "
                                   f"not {expect[0]}@{expect[1]}; use a new --out directory")
        if model is None:
            model = got
        elif got != model:
            raise PredictionsError(f"{path}: {where}: model {got} differs from {model} in the same directory")
        if not decodable:
            undecodable.add(key)
        out[key] = rec
    return PredictionFile(out, model, undecodable)


SCORED_FIELDS: dict[str, type] = {"dataset": str, "run": int, "instance_id": str, "prompt": str,
                                  "prompt_sha256": str, "task": str}
"""What scoring needs of a prompt record (``gen_seed`` is replay's, not scoring's)."""


def read_prompts(path: Path, check: Callable[[Path, str, dict[str, Any]], None] | None = None,
                 required: dict[str, Any] = SCORED_FIELDS) -> Iterator[tuple[Key, dict[str, Any]]]:
    """The one reader of a run folder's ``prompts.jsonl``: records with their keys, in file order,
    each checked as it is read (the ``required`` fields, prompt and target hashes, then
    ``check(path, where, rec)``, the target's form as its metric expects); a duplicate key is refused."""
    from seam_repro.manifest.prompts import check_prompt_record  # not at import: it loads rendering

    if not path.is_file():
        raise InputError(path, "prompts file not found (expected RUN_DIR/prompts.jsonl from `seam-repro replay`)")
    seen: set[Key] = set()
    for lineno, rec, _ in read_lines(path):
        where = f"line {lineno}"
        check_prompt_record(rec, path, where, required)
        target = rec.get("target")
        if "target_sha256" in rec and rec["target_sha256"] not in (
                sha256_json(target), sha256_text(target) if isinstance(target, str) else None):
            raise InputError(path, "target_sha256 does not match the target", record=where, field="target_sha256")
        if check is not None:
            check(path, where, rec)
        key = (rec["dataset"], rec["run"], rec["instance_id"])
        if key in seen:
            raise InputError(path, f"duplicate prompt record for {key}", record=where)
        seen.add(key)
        yield key, rec


class PredictionStore:
    """All predictions files of one model in a run dir; resumes and refuses foreign lines. Each line is
    one flushed ``write``; :meth:`sync` (once per batch: module docstring) and :meth:`close` fsync the files."""

    def __init__(self, run_dir: Path, model_id: str, revision: str, prompt_hashes: dict[Key, str]):
        self.run_dir, self.model_id, self.revision = Path(run_dir), model_id, revision
        self._files: dict[tuple[str, int], BinaryIO] = {}
        self._dirty: set[tuple[str, int]] = set()
        self.done: set[Key] = set()
        self.repaired: list[tuple[Path, int]] = []
        for path in prediction_files(predictions_root(self.run_dir) / model_slug(model_id)):
            dropped = repair_torn_tail(path)
            if dropped:
                self.repaired.append((path, dropped))
            # each line is checked to be filed under its own dataset and run (read_prediction_file)
            self.done.update(read_prediction_file(path, prompt_hashes, expect=(model_id, revision)).records)

    def append(self, req: GenerationRequest, res: GenerationResult, generation: dict[str, Any]) -> None:
        self.write(make_record(req, res, self.model_id, self.revision, generation))

    def write(self, record: dict[str, Any]) -> None:
        """Append one predictions line (``make_record``'s form) to the file of its (dataset, run)."""
        key = (record["dataset"], record["run"], record["instance_id"])
        if key in self.done:
            raise PredictionsError(f"{self.run_dir}: refusing to write {key} twice")
        path = predictions_path(self.run_dir, self.model_id, *key[:2])
        if key[:2] not in self._files:
            atomic.ensure_dir(path.parent)
            try:
                self._files[key[:2]] = open(path, "ab")
            except OSError as exc:
                raise OutputError(f"{atomic.describe_os_error(exc)}; cannot append predictions "
                                  "(every line already written is kept)") from None
        try:
            self._files[key[:2]].write(json_text.jsonl_line(record))
            self._files[key[:2]].flush()
        except OSError as exc:
            # A partial line may be on disk; it is unterminated, so readers skip it and a resume
            # truncates it. Every earlier line is complete and kept.
            raise OutputError(f"{path}: cannot append a prediction: {atomic.describe_os_error(exc).split(': ', 1)[-1]}; "
                              "the predictions written so far are kept; fix this and rerun the same command to resume"
                              ) from None
        self._dirty.add(key[:2])
        self.done.add(key)

    def sync(self) -> None:
        """fsync every file written since the last sync (``replay`` calls this once per batch)."""
        for group, fh in self._files.items():
            if group not in self._dirty:
                continue
            try:
                os.fsync(fh.fileno())
            except OSError as exc:
                raise OutputError(f"{fh.name}: cannot sync the predictions: "
                                  f"{atomic.describe_os_error(exc).split(': ', 1)[-1]}; rerun the same command to "
                                  "resume (lines that were not synced are checked and kept or regenerated)") from None
            self._dirty.discard(group)

    def close(self) -> None:
        try:
            self.sync()
        finally:
            for fh in self._files.values():
                with contextlib.suppress(OSError):
                    fh.close()
            self._files.clear()


# run.json's fields and a model entry's, with their JSON types (load_run_json); resume and merge compare them
RUN_FIELDS: dict[str, tuple[type, ...]] = {
    "manifest_digest": (str, type(None)), "prompt_digest": (str, type(None)), "profile": (str, type(None)),
    "prompts_sha256": (str, type(None)), "models": (dict,), "sessions": (list,), "shard": (str, type(None)),
    "limit": (int, type(None)), "fingerprint": (dict, type(None)), "selection": (dict, type(None)),
}
MODEL_FIELDS: dict[str, tuple[type, ...]] = {"id": (str,), "revision": (str,), "backend_name": (str, type(None)),
                                              "generation": (dict, type(None))}


def _kinds(types: tuple[type, ...]) -> str:
    names = {str: "a string", dict: "an object", list: "an array", int: "an integer", type(None): "null"}
    return " or ".join(names[t] for t in types)


def _require_type(path: Path, value: Any, types: tuple[type, ...], field: str) -> None:
    if not isinstance(value, types) or isinstance(value, bool):
        raise InputError(path, f"expected {_kinds(types)}, got {reading.json_type(value)}", field=field)


def write_run_json(run_dir: Path, run_json: dict[str, Any]) -> None:
    """``RUN_DIR/run.json``, atomically and in the one layout replay and merge both write."""
    atomic.atomic_write_json(run_json_path(run_dir), run_json, indent=2, sort_keys=True)


def load_run_json(run_dir: Path, required: tuple[str, ...] = ("models", "sessions")) -> dict[str, Any] | None:
    """run.json, its shape checked (written by this module, but a user may edit or damage it): every
    field another command reads has the documented type, so none of them can crash on it."""
    path = run_json_path(run_dir)
    if not path.exists() and not path.is_symlink():
        return None
    obj = reading.read_json(path, what="run.json", expect=None)
    if not isinstance(obj, dict):
        raise InputError(path, f"expected a run.json object with schema_version {RUN_SCHEMA_VERSION}",
                         field="schema_version")
    if obj.get("schema_version") != RUN_SCHEMA_VERSION:
        fp = obj.get("fingerprint")
        raise InputError(path, version_mismatch("schema_version", obj.get("schema_version"), RUN_SCHEMA_VERSION,
                                                fp.get("seam_repro") if isinstance(fp, dict) else None,
                                                "replay the manifest into a new --out with this kit"),
                         field="schema_version")
    for name, types in RUN_FIELDS.items():
        if name in obj:
            _require_type(path, obj[name], types, name)
        elif name in required:
            raise InputError(path, f"missing; expected {_kinds(types)}", field=name)
    for slug, entry in obj.get("models", {}).items():
        _require_type(path, entry, (dict,), f"models.{slug}")
        for name, types in MODEL_FIELDS.items():
            _require_type(path, entry.get(name), types, f"models.{slug}.{name}")
        if model_slug(entry["id"]) != slug:
            raise InputError(path, f"model id {entry['id']!r} does not belong under '{slug}'", field=f"models.{slug}.id")
    for i, sess in enumerate(obj.get("sessions", [])):
        _require_type(path, sess, (dict,), f"sessions[{i}]")
    return obj


def has_predictions(run_dir: Path, slug: str) -> bool:
    """Whether model ``slug`` has any prediction stored in ``run_dir`` (a non-empty prediction file)."""
    return any(p.stat().st_size > 0 for p in prediction_files(predictions_root(run_dir) / slug))


def first_difference(name: str, old: Any, new: Any) -> str:
    """``generation.temperature was 0.8, now 0.0``: the first field where two recorded values differ
    (into nested objects), not two whole dumps."""
    while isinstance(old, dict) and isinstance(new, dict):
        keys = [k for k in (*old, *(k for k in new if k not in old)) if old.get(k, _ABSENT) != new.get(k, _ABSENT)]
        if not keys:
            break
        name, old, new = f"{name}.{keys[0]}", old.get(keys[0], _ABSENT), new.get(keys[0], _ABSENT)
    shown = ["(not set)" if v is _ABSENT else repr(v)[:120] for v in (old, new)]
    return f"{name} was {shown[0]}, now {shown[1]}"


_ABSENT = object()


def require_run_json(run_dir: Path, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """run.json of a replay run folder; a folder without one is not a run and is refused."""
    obj = load_run_json(run_dir, required)
    if obj is None:
        raise InputError(run_json_path(run_dir), "missing; not a replay run folder "
                         "(expected RUN_DIR/run.json written by `seam-repro replay` or `merge`)")
    return obj


def prepare_run_dir(run_dir: Path, *, manifest: dict[str, Any], prompts: list[dict[str, Any]] | PromptSpool,
                    model_entry: dict[str, Any], session: dict[str, Any], extra: dict[str, Any],
                    check_existing: Callable[[], Any] | None = None) -> dict[str, Any]:
    """Create run.json + prompts.jsonl, or check an existing run dir belongs to the same manifest,
    prompts, model revision, backend, generation settings and shard before resuming into it.

    ``check_existing`` (reading the stored predictions) runs after those checks and before
    anything is replaced, so a refused resume leaves run.json and prompts.jsonl untouched. ``prompts``
    is the records, or replay's spool of them (moved into place, not written again)."""
    run_dir = Path(run_dir)
    atomic.ensure_dir(run_dir)
    with atomic.staged_file(prompts_path(run_dir)) as staged_prompts:  # lands only if every check passes
        if isinstance(prompts, list):
            atomic.atomic_write_jsonl(staged_prompts, prompts)
        else:
            prompts.install(staged_prompts, prompts_path(run_dir))
        prompts_sha = sha256_file(staged_prompts)
        current = load_run_json(run_dir)
        slug = model_slug(model_entry["id"])
        if current is not None and not any(has_predictions(run_dir, s) for s in current.get("models") or {}):
            # a run that stored no prediction yet (a failed first start): nothing to mix, so a
            # corrected retry starts it again instead of being held to the failed one's settings
            current = None
        if current is None:
            current = {"schema_version": RUN_SCHEMA_VERSION, "manifest_digest": manifest.get("digest"),
                       "prompt_digest": manifest.get("prompt_digest"), "profile": manifest.get("profile"),
                       "prompts_sha256": prompts_sha, "fingerprint": session.get("fingerprint"),
                       "models": {slug: model_entry}, "sessions": [], **extra}
        else:
            for name, want in (("manifest_digest", manifest.get("digest")), ("prompts_sha256", prompts_sha),
                               *extra.items()):
                if current.get(name) != want:
                    raise PredictionsError(f"{run_json_path(run_dir)}: {name} is {current.get(name)!r}, this replay "
                                           f"has {want!r}; use a new --out directory")
            old = current["models"].get(slug)
            if old is None or not has_predictions(run_dir, slug):
                current["models"][slug] = model_entry  # new, or nothing stored under the old settings: replaced
            else:
                for name in MODEL_FIELDS:
                    if old.get(name) != model_entry.get(name):
                        raise PredictionsError(f"{run_json_path(run_dir)}: model {slug}: "
                                               f"{first_difference(name, old.get(name), model_entry.get(name))}; "
                                               "refusing to mix predictions made two ways in one run folder: "
                                               "replay into a new --out, or repeat the first run's settings")
        if check_existing is not None:
            check_existing()
    current["sessions"].append({**session, "model": slug})
    write_run_json(run_dir, current)
    return current


# --- copying a run folder's records (merge) ------------------------------------------------------------
def read_prompt_records(run_dir: Path) -> dict[Key, dict[str, Any]]:
    """``RUN_DIR/prompts.jsonl`` through :func:`read_prompts`, keyed in file order, with the fields
    replay needs (``gen_seed`` too): merge, recheck and import regenerate or re-file these records."""
    from seam_repro.manifest.prompts import REQUIRED

    return dict(read_prompts(prompts_path(run_dir), required=REQUIRED))


def copy_run_records(src: Path, dst: Path) -> None:
    """Copy prompts.jsonl and, where there is one, the manifest copy (the trust chain's anchor) of
    run folder ``src`` into ``dst``."""
    try:
        shutil.copyfile(prompts_path(src), prompts_path(dst))
    except OSError as exc:
        raise OutputError(f"{dst}: cannot copy prompts.jsonl: {atomic.describe_os_error(exc)}") from None
    if run_manifest_path(src).is_file():
        shutil.copyfile(run_manifest_path(src), run_manifest_path(dst))


# --- the run folder checked against its manifest (score, report, submit) ---------------------------
def write_run_manifest(run_dir: Path, manifest: dict[str, Any]) -> None:
    """Copy the replayed manifest into ``RUN_DIR/manifest.json``; an existing copy must have the
    same digest."""
    path = run_manifest_path(run_dir)
    if not path.exists():
        write_manifest(manifest, path)
        return
    have = load_manifest(path)["digest"]
    if have != str(manifest["digest"]):
        raise PredictionsError(f"{path}: field 'digest': this run folder belongs to manifest {have}, not "
                               f"{manifest['digest']}; use a new --out directory")


def load_run_manifest(run_dir: Path, run_json: dict[str, Any], loaded: RunRecords | None = None) -> TrustedManifest:
    """``RUN_DIR/manifest.json``, checked, and the same manifest run.json names; taken from
    ``loaded`` where the caller has already read the run folder's records."""
    path = run_manifest_path(run_dir)
    tm = loaded.manifest if loaded is not None else None
    if tm is None:
        if not path.is_file():
            raise InputError(path, "missing: score checks every prompt and gold target against the replayed "
                             "manifest; re-run `seam-repro replay MANIFEST --out RUN_DIR` (it resumes and writes it; "
                             "a run made from a schema_version 1 manifest must be replayed into a new --out)")
        tm = trusted(load_manifest(path), str(path))
    if run_json.get("manifest_digest") != tm.digest:
        raise InputError(run_json_path(run_dir), f"is {run_json.get('manifest_digest')!r} but {path} has digest "
                         f"{tm.digest}", field="manifest_digest")
    return tm


def resume_command(run_json: dict[str, Any], slug: str) -> str:
    """The replay command that made this run folder (its last recorded session for ``slug``), which
    resumes it: a resume regenerates only what is missing."""
    for session in reversed(run_json.get("sessions") or []):
        argv = session.get("argv") if isinstance(session, dict) else None
        if session.get("model") == slug and isinstance(argv, list) and argv[:1] == ["replay"] \
                and all(isinstance(a, str) for a in argv):
            return "seam-repro " + shlex.join(argv)
    return "the `seam-repro replay` command that made this folder, with the same --out"


def partial_reason(run_json: dict[str, Any]) -> str | None:
    """The options that made a run partial on purpose (``--datasets X --runs 0-2 --limit 5``), as
    run.json records them; None for a run of the whole manifest."""
    chosen = run_json.get("selection") or {}
    parts = [f"--{name} " + ",".join(map(str, chosen[name])) for name in ("datasets", "runs")
             if chosen.get(name) is not None]
    if run_json.get("limit"):
        parts.append(f"--limit {run_json['limit']}")
    return " ".join(parts) or None


@dataclass
class Coverage:
    """What a run folder holds relative to its manifest; built by :func:`check_run_prompts`."""

    tm: TrustedManifest
    run_json: dict[str, Any]
    present: set[Key]
    metrics: dict[str, str]
    tasks: dict[str, str]

    def _missing_entries(self, preds: dict[Key, Any], slug: str) -> list[dict[str, Any]]:
        """One entry per (dataset, run) with instances the manifest lists but this model has no score for;
        instances a replay did not reach name the command that resumes it."""
        not_replayed = f"not replayed ({partial_reason(self.run_json) or 'no prompt records in prompts.jsonl'})"
        chosen = self.run_json.get("selection") or {}
        totals = Counter(key[:2] for key in self.tm.expected)
        by_run: dict[tuple[str, int], list[str]] = {}
        for key in self.tm.expected:
            if key not in preds:
                by_run.setdefault(key[:2], []).append(key[2])
        predicted = {k[0] for k in preds}
        out = []
        for (ds, run), ids in by_run.items():
            unchosen = (chosen.get("datasets") is not None and ds not in chosen["datasets"]) or \
                (chosen.get("runs") is not None and run not in chosen["runs"])
            if self.run_json.get("shard"):  # a shard holds only its own instances, by design
                reason = (f"not in shard {self.run_json['shard']} (merge the shards with `seam-repro merge`, "
                          "then score the merged folder)")
            elif unchosen or (ds in predicted and all((ds, run, i) not in self.present for i in ids)):
                reason = not_replayed if (unchosen or self.run_json.get("limit")) \
                    else "no prompt records in prompts.jsonl"
            elif ds not in predicted:
                reason = "no predictions for this dataset (predictions/<model>/" + ds + "/ is missing or empty)"
            else:
                reason = f"no prediction (the replay stopped before it); resume with: {resume_command(self.run_json, slug)}"
            out.append({"dataset": ds, "run": run, "missing": len(ids), "of": totals[(ds, run)],
                        "first": ids[:5], "reason": reason})
        return out

    def summary_fields(self, model_dir: Path, datasets: dict[str, Any], preds: dict[Key, Any]) -> dict[str, Any]:
        """Everything ``score`` adds to a model's summary.json: every manifest dataset in manifest
        order (null runs with a reason where it has no score at all), the unscored (dataset, run,
        instance) groups, coverage, the protocol and the predictions digest."""
        slug = Path(model_dir).name
        unscored = self._missing_entries(preds, slug)
        out: dict[str, Any] = {}
        for ds, runs in self.tm.dataset_runs().items():
            if ds in datasets:
                out[ds] = datasets[ds]
                continue
            reasons = sorted({u["reason"] for u in unscored if u["dataset"] == ds}) or ["no scores"]
            out[ds] = {"task": self.tasks.get(ds), "metric": self.metrics.get(ds, "unknown"),
                       "runs": {str(r): None for r in runs}, "reason": "; ".join(reasons)}
        out.update(datasets)  # a dataset the manifest does not list comes after its own (keys keep their place)
        n_expected = len(self.tm.expected)
        n_scored = sum(1 for k in self.tm.expected if k in preds)
        return {"datasets": out, "unscored": unscored,
                "coverage": {"instances": n_expected, "scored": n_scored, "partial": n_scored < n_expected},
                "protocol": run_protocol(self.tm, self.run_json, slug, n_scored),
                "predictions_digest": predictions_digest(model_dir, self.tm.expected)}


def check_run_prompts(run_dir: Path, prompts: Iterable[tuple[Key, dict[str, Any]]], run_json: dict[str, Any],
                      loaded: RunRecords | None = None) -> Coverage:
    """Check every prompt record and gold target of ``RUN_DIR/prompts.jsonl`` (``(key, record)``
    pairs, read as they come) against the manifest the run was replayed from (``score``; ``loaded``: its copy
    if the caller has read it); refuse the first that differs."""
    tm = load_run_manifest(run_dir, run_json, loaded)
    where = prompts_path(run_dir)
    metrics: dict[str, str] = {}
    tasks: dict[str, str] = {}
    present: dict[Key, None] = {}
    for n, (key, rec) in enumerate(prompts, start=1):
        present[key] = None
        if tm.frozen:
            problem = record_problems(tm, rec)
            if problem is None and "target" not in rec:
                problem = f"no gold target; the manifest expects one hashing to {tm.expected[key]['target_sha256']}"
            if problem:
                raise InputError(where, problem, record=f"{key[0]} run {key[1]} instance {key[2]} (record {n})")
        if isinstance(rec.get("metric"), str):
            metrics.setdefault(key[0], rec["metric"])
        tasks.setdefault(key[0], rec.get("task"))
    if not tm.frozen:  # an --allow-unfrozen run: the prompts it holds are all there is to expect
        tm = TrustedManifest(tm.path, tm.manifest, tm.config, {k: {} for k in present})
    try:  # metric and task of datasets with no prompt record at all, from the manifest's suite
        suite = load_suite(tm.manifest["config"].get("suite", "seam"))
        for ds in tm.dataset_runs():
            spec = suite.spec(ds)
            metrics.setdefault(ds, spec.metrics.get(tm.manifest["profile"], "unknown"))
            tasks.setdefault(ds, spec.task)
    except (SeamReproError, KeyError):  # an unknown suite or dataset only loses the metric name
        pass
    return Coverage(tm, run_json, set(present), metrics, tasks)


def predictions_digest(model_dir: Path, keys: Iterable[Key]) -> str:
    """Digest over the raw bytes of each prediction line, in prompt order (ties scores to the exact
    predictions). A torn last line is refused: resume the replay to repair it first."""
    line_hash: dict[Key, str] = {}
    for path in prediction_files(model_dir):
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            raise PredictionsError(f"{path}: last line is torn (no newline); resume `seam-repro replay` to repair "
                                   "it before scoring or submitting")
        for lineno, raw in enumerate(data.split(b"\n")[:-1], start=1):
            if not raw.strip():
                continue
            obj = reading.parse_json_text(raw.decode("utf-8", errors="replace"), path, record=f"line {lineno}")
            key = (obj.get("dataset"), obj.get("run"), obj.get("instance_id"))
            line_hash[key] = sha256_bytes(raw)  # type: ignore[index]
    return digest_of_hashes(line_hash[k] for k in keys if k in line_hash)


@dataclass(frozen=True)
class RunRecords:
    """What the scores of a run folder are checked against, read once for all its models:
    ``RUN_DIR/manifest.json`` and ``run.json`` (either may be absent: scores can be copied
    without their run folder, and are then checked as far as what is there allows)."""

    run_dir: Path
    manifest: TrustedManifest | None
    run_json: dict[str, Any] | None


def read_run_records(run_dir: Path) -> RunRecords:
    run_dir = Path(run_dir)
    mpath = run_manifest_path(run_dir)
    run_json = load_run_json(run_dir, required=("models",))
    tm = trusted(load_manifest(mpath), str(mpath)) if mpath.is_file() else None
    return RunRecords(run_dir, tm, run_json)


def check_scores_against_run(score_dir: Path, summary: Any, instances: Iterable[Any], run: RunRecords) -> None:
    """``scores/<slug>/`` of a run folder with its manifest: every instance line must be one the
    manifest lists (an unknown line is refused, not averaged in), and the summary's protocol must
    be the one run.json and the manifest give (an edited protocol would dodge the comparisons)."""
    tm = run.manifest
    if tm is None:
        return
    if tm.frozen:
        known = score_keys(tm.expected)
        for n, it in enumerate(instances, start=1):
            if (it.dataset, it.run, it.instance_id) not in known:
                raise InputError(Path(score_dir) / "instance_scores.jsonl", f"{it.dataset} run {it.run} instance "
                                 f"{it.instance_id} is not in {tm.path} (expected only the manifest's instances)",
                                 f"instance {n}")
    stated = summary.get("protocol") if isinstance(summary, dict) else None
    if not isinstance(stated, dict) or run.run_json is None:
        return
    n_scored = stated.get("scored_instances")
    actual = run_protocol(tm, run.run_json, Path(score_dir).name, n_scored if isinstance(n_scored, int) else 0)
    for name in (*PROTOCOL_FIELDS, "generation"):
        if stated.get(name) != actual.get(name):
            raise InputError(Path(score_dir) / "summary.json", f"is {stated.get(name)!r} but run.json and {tm.path} "
                             f"give {actual.get(name)!r}", field=f"protocol.{name}")
