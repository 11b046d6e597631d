"""``seam-repro import``: outputs made elsewhere -> a normal run folder for a frozen manifest
(user-facing rules: docs/data.md "Importing outputs made elsewhere").

Two input forms: an upstream SEAM predictions folder (``scripts/run_model_predictions.py`` @ 6ad83f4:
``<dataset>/<org>/<model>_<run>.json``, each a JSON list of pandas ``orient="records"`` rows holding
upstream's id key (``UPSTREAM_ID_KEYS``), ``final_msgs`` (the user message, i.e. the prompt) and
``prediction`` (the pipeline's ``generated_text``: decoded prompt + continuation), or a plain JSONL of
``{"dataset", "run", "instance_id", "output"}`` (API runs, other harnesses), optionally with ``prompt``
or ``prompt_sha256``. Each record is matched to one manifest instance (``Matcher``); anything else is
refused with the file and record named. The run folder is written by the replay machinery itself (an
``import`` backend returning the outputs), so ``score``, ``submit`` and ``report`` treat it like any replay.

An upstream ``prediction`` is split at the end of the prompt: the head is kept as
``upstream_prompt_text`` (upstream's extraction sees exactly upstream's string), the rest is the
``output`` (the corrected profile sees the continuation alone). Upstream decoded
``apply_chat_template(msgs)`` with ``skip_special_tokens=True`` (``model_wrappers/hf_pipline_wrap.py``),
so the prompt follows the template's header text, possibly trimmed (Llama-3's and Gemma's ``| trim``)
and cleaned by the decode (``clean_up_tokenization_spaces``: ``" ."`` -> ``"."``); each rendering is
tried (``PROMPT_RENDERINGS``). A prediction holding none (a prompt truncated to the model's window)
is refused rather than scoring prompt text as the answer.
"""

from __future__ import annotations

import functools
import os
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seam_repro.config import GenerationSettings
from seam_repro.errors import InputError
from seam_repro.files.atomic import atomic_write_bytes
from seam_repro.files.json_text import jsonl_line
from seam_repro.files.reading import iter_jsonl, parse_json_text, read_json
from seam_repro.generate.base import GenerationRequest, GenerationResult
from seam_repro.hashing import sha256_text
from seam_repro.manifest.prompts import require_fields
from seam_repro.run.store import (
    Key,
    load_run_json,
    make_record,
    predictions_path,
    prompts_path,
    read_prediction_file,
    read_prompt_records,
)
from seam_repro.specs import load_suite

UPSTREAM_ID_KEYS = {"ECB": "topic_id", "SciCo": "sample_id", "MusiQue": "id", "MultiNews": "id", "OpenASP": "guid",
                    "FuseReviews": "guid"}
_RUN_FILE = re.compile(r"(.+)_(\d+)\.json")
_TEMPLATE_TAILS = (" [/INST]", "[/INST]", "\n")
"""Decoded chat-template text that follows the user message (Mistral, Gemma), kept with the prompt."""
MAX_LISTED = 5
_CLEANUP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"),
            (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


def clean_up_tokenization(text: str) -> str:
    """What a transformers decode with ``clean_up_tokenization_spaces=True`` does to text
    (``PreTrainedTokenizerBase.clean_up_tokenization``: these replacements, in this order)."""
    return functools.reduce(lambda done, pair: done.replace(*pair), _CLEANUP, text)


PROMPT_RENDERINGS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("as given", lambda p: p),
    ("template trim", str.strip),
    ("template trim + tokenizer cleanup", lambda p: clean_up_tokenization(p.strip())),
    ("tokenizer cleanup", clean_up_tokenization),
)
"""The forms a user message takes in a decoded chat template (module docstring), most literal first:
jinja's ``trim`` is ``str.strip``."""


@dataclass
class Imported:
    """One imported output, matched to its manifest instance."""

    output: str
    upstream_prompt_text: str | None = None
    rendering: str | None = None
    """Upstream form: which of ``PROMPT_RENDERINGS`` the prediction held the prompt in."""


@dataclass
class ImportBackend:
    """A ``Backend`` whose "generation" returns the imported outputs (no model)."""

    model_id: str
    revision: str
    outputs: dict[Key, Imported]
    source: dict[str, Any] = field(default_factory=dict)
    name: str = field(default="import", init=False)

    def describe(self) -> dict[str, Any]:
        found = Counter(o.rendering for o in self.outputs.values() if o.rendering is not None)
        return {"backend": "import", **self.source, **({"prompt_rendering": dict(sorted(found.items()))} if found else {})}

    def resolved_generation(self, settings: GenerationSettings) -> dict[str, Any]:
        return {"imported": True, "source_format": self.source.get("format")}

    def default_batch_size(self, settings: GenerationSettings) -> int:
        return max(1, len(self.outputs))  # nothing is computed: one batch

    def generate(self, requests: list[GenerationRequest], settings: GenerationSettings) -> list[GenerationResult]:
        return [GenerationResult(output=self.outputs[req.key].output, templated_prompt_sha256=sha256_text(req.prompt),
                                 n_prompt_tokens=0, n_output_tokens=0,
                                 upstream_prompt_text=self.outputs[req.key].upstream_prompt_text) for req in requests]


def split_prediction(prediction: str, prompt: str) -> tuple[str, str, str | None]:
    """(upstream_prompt_text, output, rendering) for an upstream ``generated_text``: the text up to
    the end of the prompt in the first of ``PROMPT_RENDERINGS`` it holds (and a template tail), and
    the rest; ``("", prediction, None)`` when it holds none. The two texts always concatenate to the
    prediction (module docstring). Whitespace where a trimmed prompt and the answer meet may land on
    either side; both profiles strip it."""
    for how, render in PROMPT_RENDERINGS:
        text = render(prompt)
        pos = prediction.find(text)
        if pos >= 0:
            end = pos + len(text)
            end += next((len(tail) for tail in _TEMPLATE_TAILS if prediction.startswith(tail, end)), 0)
            return prediction[:end], prediction[end:], how
    return "", prediction, None


def source_id(instance_id: str) -> str:
    """The source's id of a manifest instance: the kit suffixes ``#...`` where one source id yields
    several instances (MuSiQue-Full's unanswerable twin, ``datasets/musique.py``)."""
    return instance_id.split("#", 1)[0]


class Matcher:
    """Assigns each imported record to one manifest instance, once.

    A record names an instance by the kit's id or by the source's id; where several instances share
    the source id (MuSiQue-Full twins) the record's prompt hash decides, and without one the id
    must be the kit's own."""

    def __init__(self, expected: dict[Key, str]):
        self.expected = expected
        self.by_source: dict[Key, list[Key]] = {}
        for key in expected:
            self.by_source.setdefault((key[0], key[1], source_id(key[2])), []).append(key)
        self.seen: set[Key] = set()

    def match(self, path: object, where: str, named: Key, digest: str | None, fld: str) -> Key:
        cands = self.by_source.get(named) or ([named] if named in self.expected else [])
        ids = ", ".join(k[2] for k in cands)
        if not cands:
            raise InputError(path, f"instance {named} is not in the manifest", record=where)
        if digest is None and named not in self.expected:
            raise InputError(path, f"{named[2]!r} is the source id of {ids}, not an instance id of the manifest; "
                             "give the kit's instance id or the prompt", record=where)
        hits = [named] if digest is None else [k for k in cands if self.expected[k] == digest]
        if not hits and len(cands) == 1:
            raise InputError(path, f"the prompt of {cands[0]} differs from the manifest's (sha256 {digest[:12]} vs "
                             f"{self.expected[cands[0]][:12]}): these outputs were made for other prompts",
                             record=where, field=fld)
        if not hits:
            raise InputError(path, f"the prompt (sha256 {digest[:12]}) is none of the manifest's prompts of the "
                             f"{len(cands)} instances with id {named[2]!r} ({ids}): these outputs were made for "
                             "other prompts", record=where, field=fld)
        if len(hits) > 1:
            raise InputError(path, f"instances {', '.join(k[2] for k in hits)} share the id {named[2]!r} and the "
                             "prompt, so an output cannot be told to belong to one of them", record=where)
        if hits[0] in self.seen:
            hint = "" if len(cands) == 1 else (f" ({len(cands)} instances share this source id: {ids}; "
                                               "give the kit's id or the prompt)")
            raise InputError(path, f"duplicate output for {hits[0]}{hint}", record=where)
        self.seen.add(hits[0])
        return hits[0]


def _children(folder: Path, keep: Callable[[str], bool]) -> list[Path]:
    """Entries of ``folder`` that ``keep`` accepts, sorted. ``glob`` would skip a link among them that
    leads nowhere (a loop, a missing target), and with it every output behind it; it is refused."""
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        raise InputError(folder, f"cannot list this folder: {os.strerror(exc.errno or 0)}") from None
    out = []
    for name in filter(keep, names):
        path = folder / name
        try:
            present = path.exists()  # follows links: False for a loop or a dangling link
        except OSError as exc:
            raise InputError(path, f"cannot be read: {os.strerror(exc.errno or 0)}") from None
        if not present:
            raise InputError(path, "a symbolic link that leads nowhere (a loop or a missing target); make it "
                             "name the folder or file it stands for, or remove it")
        out.append(path)
    return out


def _upstream_files(root: Path, model_id: str) -> list[tuple[Path, str, int]]:
    """(file, dataset folder, run) of every ``<dataset>/<org>/<name>_<run>.json`` of the model."""
    org, _, name = model_id.rpartition("/")

    def is_run_file(n: str) -> bool:
        m = _RUN_FILE.fullmatch(n)
        return m is not None and m.group(1) == name

    return [(path, ds_dir.name, int(path.stem.rpartition("_")[2]))  # the run follows the last "_"
            for ds_dir in _children(root, lambda n: True) if ds_dir.is_dir()
            for folder in (_children(ds_dir, lambda n: n == org) if org else [ds_dir]) if folder.is_dir()
            for path in _children(folder, is_run_file)]


def read_upstream_dir(root: Path, model_id: str, expected: dict[Key, str]) -> dict[Key, Imported]:
    """Outputs of ``model_id`` (``org/name``) from an upstream predictions folder; predictions that
    do not hold their prompt in any known rendering are refused together, counted."""
    out: dict[Key, Imported] = {}
    matcher = Matcher(expected)
    matched = _upstream_files(root, model_id)
    if not matched:
        raise InputError(root, f"no files <dataset>/{model_id}_<run>.json (upstream's predictions layout)")
    unsplit: list[str] = []
    for path, dataset, run in matched:
        id_key = UPSTREAM_ID_KEYS.get(dataset)
        if id_key is None:
            raise InputError(path, f"unknown SEAM dataset folder {dataset!r}; expected one of "
                             f"{', '.join(UPSTREAM_ID_KEYS)}")
        records = read_json(path, what="upstream predictions file", expect=list)
        if not records:
            raise InputError(path, "holds no records; expected a JSON list of upstream prediction records")
        for i, rec in enumerate(records):
            where = f"record {i}"
            if not isinstance(rec, dict):
                raise InputError(path, "expected a JSON object", record=where)
            if isinstance(rec.get(id_key), (dict, list, type(None))):
                raise InputError(path, f"missing the id key of {dataset}", record=where, field=id_key)
            prediction, msgs = rec.get("prediction"), rec.get("final_msgs")
            if not isinstance(prediction, str):
                raise InputError(path, "expected the pipeline's generated_text as a string", record=where,
                                 field="prediction")
            if not (isinstance(msgs, list) and msgs and isinstance(msgs[0], dict)
                    and isinstance(msgs[0].get("content"), str)):
                raise InputError(path, 'expected [{"role": "user", "content": PROMPT}, ...]', record=where,
                                 field="final_msgs")
            prompt = msgs[0]["content"]
            key = matcher.match(path, where, (dataset, run, str(rec[id_key])), sha256_text(prompt), "final_msgs")
            head, output, how = split_prediction(prediction, prompt)
            if how is None:
                unsplit.append(f"{path} {where} ({dataset} run {run} instance {key[2]})")
            out[key] = Imported(output, head, how)
    if unsplit:
        raise InputError(root, f"{len(unsplit)} of {len(out)} predictions do not hold their prompt in any form a chat "
                         "template and tokenizer decode give it (as given, trimmed, spaces cleaned up), so their "
                         "answer cannot be told from the prompt (prompts truncated to the model's window?); "
                         f"nothing was imported; first: {'; '.join(unsplit[:MAX_LISTED])}")
    return out


def read_plain_jsonl(path: Path, expected: dict[Key, str], suite: str = "seam") -> dict[Key, Imported]:
    """Outputs from a JSONL of ``{dataset, run, instance_id, output[, prompt | prompt_sha256]}``;
    ``dataset`` in any spelling the suite's resolver accepts (``musique``, ``MuSiQue``)."""
    names = load_suite(suite)
    out: dict[Key, Imported] = {}
    matcher = Matcher(expected)
    for lineno, rec in iter_jsonl(path, what="outputs JSONL file"):
        where = f"line {lineno}"
        require_fields(rec, {"dataset": str, "run": int, "instance_id": str, "output": str}, path, where)
        named = (names.canonical_name(rec["dataset"], str(path), "dataset", where), rec["run"], rec["instance_id"])
        digest, fld = None, "prompt"
        if "prompt" in rec:
            if not isinstance(rec["prompt"], str):
                raise InputError(path, "expected the prompt text as a string", record=where, field="prompt")
            digest = sha256_text(rec["prompt"])
        if "prompt_sha256" in rec:
            if digest is not None and digest != rec["prompt_sha256"]:
                raise InputError(path, "is not the sha256 of the record's prompt", record=where, field="prompt_sha256")
            digest, fld = str(rec["prompt_sha256"]), "prompt_sha256"
        out[matcher.match(path, where, named, digest, fld)] = Imported(rec["output"])
    if not out:
        raise InputError(path, 'holds no outputs (empty, or blank lines only); expected one JSON object per line: '
                         '{"dataset", "run", "instance_id", "output"}')
    return out


def covered_records(records: Sequence[dict[str, Any]], outputs: dict[Key, Imported], source: object) -> list[dict[str, Any]]:
    """The manifest's records of every (dataset, run) the input covers; a partly covered one is refused."""
    groups = {(k[0], k[1]) for k in outputs}
    chosen = [r for r in records if (r["dataset"], r["run"]) in groups]
    missing = [k for k in ((r["dataset"], r["run"], r["instance_id"]) for r in chosen) if k not in outputs]
    if missing:
        listed = ", ".join(f"{d} run {r} instance {i}" for d, r, i in missing[:MAX_LISTED])
        raise InputError(source, f"{len(missing)} instance(s) of the imported (dataset, run) pairs have no output; "
                         f"first: {listed}")
    return chosen


@dataclass
class ImportSummary:
    """What an import did to the run folder, for the one line the command prints."""

    folder: Path
    imported: int
    new: int = 0
    unchanged: int = 0
    replaced: int = 0

    def line(self) -> str:
        counts = ((self.unchanged, "already stored identically"), (self.replaced, "replaced (score the run again)"))
        return ", ".join([f"imported {self.imported} outputs into {self.folder}: {self.new} new",
                          *(f"{n} {what}" for n, what in counts if n)])


def _differing(out: Path, model_id: str, outputs: dict[Key, Imported], chosen: Sequence[dict[str, Any]],
               digest: object) -> tuple[list[Key], int]:
    """(imported keys whose stored output differs, count stored identically) for a model already in
    ``out``: a second import must not keep the first outputs while reporting the new ones. A run
    folder holds one set of prompts, so an import of the same manifest covering other (dataset, run)
    pairs is refused (another manifest is refused by ``prepare_run_dir``, naming the digests)."""
    run_json = load_run_json(out)
    if run_json is not None and run_json.get("manifest_digest") != digest:
        return [], 0  # another manifest's folder: prepare_run_dir refuses it before anything is written
    if run_json is not None and prompts_path(out).is_file():
        held = {k[:2] for k in read_prompt_records(out)}
        covers = {(r["dataset"], r["run"]) for r in chosen}
        if held != covers:
            listed = ", ".join(f"{d} run {r}" for d, r in sorted(held ^ covers)[:MAX_LISTED])
            raise InputError(out, f"holds the prompts of {len(held)} (dataset, run) pairs and this import covers "
                             f"{len(covers)}, not the same ones (differing: {listed}); a run folder holds one set of "
                             "prompts: import into a new --out (or import every pair together)")
    paths = (predictions_path(out, model_id, *group) for group in sorted({k[:2] for k in outputs}))
    stored = [(k, rec) for p in paths if p.is_file()
              for k, rec in read_prediction_file(p).records.items() if k in outputs]
    differ = [k for k, rec in stored
              if (rec["output"], rec.get("upstream_prompt_text")) != (outputs[k].output, outputs[k].upstream_prompt_text)]
    return differ, len(stored) - len(differ)


def _replace_stored(out: Path, backend: ImportBackend, settings: GenerationSettings, records: dict[Key, dict[str, Any]],
                    keys: list[Key]) -> None:
    """Rewrite each predictions file holding ``keys`` (temp file + rename) with the imported outputs
    in their place; every other line is kept byte for byte."""
    generation = backend.resolved_generation(settings)  # as run_generation records it (no model args)
    wanted = set(keys)  # run_generation has refused any line filed under another (dataset, run)
    for path in dict.fromkeys(predictions_path(out, backend.model_id, *key[:2]) for key in keys):
        lines: list[bytes] = []
        for n, raw in enumerate(path.read_bytes().splitlines(keepends=True), start=1):
            rec = parse_json_text(raw.decode("utf-8"), path, record=f"line {n}")
            key = (rec.get("dataset"), rec.get("run"), rec.get("instance_id"))
            if key in wanted:
                req = GenerationRequest.from_record(records[key])  # type: ignore[index]
                [res] = backend.generate([req], settings)
                raw = jsonl_line(make_record(req, res, backend.model_id, backend.revision, generation))
            lines.append(raw)
        atomic_write_bytes(path, lines)


def import_outputs(manifest_path: Path, out: Path, *, model: str, upstream_dir: Path | None = None,
                   jsonl: Path | None = None, data_dir: Path | None = None, prompts_dir: Path | None = None,
                   allow_unfrozen: bool = False, replace: bool = False) -> ImportSummary:
    """Match the outputs to the manifest's prompts and write the run folder.

    Into a folder that already holds this model, outputs stored identically are left as they are,
    new (dataset, run) pairs are added, and outputs that differ from the stored ones are refused
    unless ``replace``."""
    from seam_repro.files.guard import guard_outputs
    from seam_repro.generate import parse_model_spec
    from seam_repro.manifest.prompts import check_prompt_records, render_records
    from seam_repro.manifest.trust import check_rendered, load_trusted
    from seam_repro.run.replay import run_generation

    if (upstream_dir is None) == (jsonl is None):
        raise InputError("import", "give exactly one of --upstream-dir and --jsonl")
    guard_outputs([("--out", out)], inputs=[manifest_path, jsonl], read_dirs=[upstream_dir, data_dir, prompts_dir])
    model_id, revision = parse_model_spec(model)
    tm = load_trusted(manifest_path, allow_unfrozen=allow_unfrozen, purpose="import")
    manifest = tm.manifest
    records = list(render_records(tm, data_dir=data_dir, prompts_dir=prompts_dir, allow_unfrozen=allow_unfrozen))
    check_rendered(tm, records)  # outputs are matched by prompt hash: drifted data must not re-key them
    expected = check_prompt_records(records)
    if upstream_dir is not None:
        outputs = read_upstream_dir(Path(upstream_dir), model_id, expected)
        source: dict[str, Any] = {"format": "upstream-seam-predictions", "path": str(upstream_dir)}
    else:
        assert jsonl is not None
        outputs = read_plain_jsonl(Path(jsonl), expected, (manifest.get("config") or {}).get("suite", "seam"))
        source = {"format": "jsonl", "path": str(jsonl)}
    chosen = covered_records(records, outputs, upstream_dir or jsonl)
    differ, same = _differing(Path(out), model_id, outputs, chosen, manifest.get("digest"))
    if differ and not replace:
        listed = ", ".join(f"{d} run {r} instance {i}" for d, r, i in differ[:MAX_LISTED])
        raise InputError(out, f"{len(differ)} of the {len(chosen)} imported outputs differ from those already stored "
                         f"for {model_id} (first: {listed}); nothing was changed; pass --replace to replace them, "
                         "or import into a new --out")
    backend = ImportBackend(model_id, revision, outputs, source)
    settings = GenerationSettings.from_manifest((manifest.get("config") or {}).get("generation"),
                                                source=str(manifest_path))
    done = run_generation(chosen, backend, settings, Path(out), manifest,
                          batch_size=backend.default_batch_size(settings), progress=False)
    if differ:  # after run_generation: a folder it refuses (other manifest, model) is left untouched
        by_key = {(r["dataset"], r["run"], r["instance_id"]): r for r in chosen}
        _replace_stored(Path(out), backend, settings, by_key, differ)
    return ImportSummary(Path(out), len(chosen), done.generated, same, len(differ))
