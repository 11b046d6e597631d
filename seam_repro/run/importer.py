"""``seam-repro import``: outputs made elsewhere -> a normal run folder for a frozen manifest.

Two input forms:

* an upstream SEAM predictions folder, as ``scripts/run_model_predictions.py`` writes it (6ad83f4):
  ``<dataset>/<org>/<model>_<run>.json``, each a JSON list of records (pandas ``to_json(orient=
  "records")``) holding upstream's id key (``topic_id`` ECB, ``sample_id`` SciCo, ``id`` MusiQue and
  MultiNews, ``guid`` OpenASP and FuseReviews), ``final_msgs`` (the user message, i.e. the prompt)
  and ``prediction`` (the pipeline's ``generated_text``: decoded prompt + continuation);
* a plain JSONL of ``{"dataset", "run", "instance_id", "output"}`` (API runs, other harnesses),
  optionally with ``prompt`` or ``prompt_sha256``.

Every record must name an instance of the manifest, and where it carries the prompt (upstream's
``final_msgs``, or ``prompt``/``prompt_sha256``) its hash must equal the manifest's; anything else,
a duplicate, or a (dataset, run) only partly covered is refused with the file and record named.
The run folder is then written by the replay machinery itself (an ``import`` backend that returns
the imported outputs), so ``score``, ``submit`` and ``report`` treat it like any replay.

An upstream ``prediction`` is kept whole for the upstream profile: the text up to the end of the
prompt is stored as ``upstream_prompt_text`` and the rest as ``output``, so upstream's response
extraction sees exactly upstream's string; if the prompt text is not found in the prediction (a
truncated prompt, a tokenizer that changed it on decoding) the whole prediction is the ``output``
and ``upstream_prompt_text`` is empty, which keeps the upstream profile exact and is recorded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seam_repro.config import GenerationSettings
from seam_repro.errors import InputError
from seam_repro.files import iter_jsonl, read_json
from seam_repro.generate.base import GenerationRequest, GenerationResult
from seam_repro.hashing import sha256_text

Key = tuple[str, int, str]
UPSTREAM_ID_KEYS = {"ECB": "topic_id", "SciCo": "sample_id", "MusiQue": "id", "MultiNews": "id", "OpenASP": "guid",
                    "FuseReviews": "guid"}
_RUN_FILE = re.compile(r"(.+)_(\d+)\.json")
_TEMPLATE_TAILS = (" [/INST]", "[/INST]", "\n")
"""Decoded chat-template text that follows the user message (Mistral, Gemma), kept with the prompt."""
MAX_LISTED = 5


@dataclass
class Imported:
    """One imported output, matched to its manifest instance."""

    output: str
    upstream_prompt_text: str | None = None
    prompt_found: bool = True
    """Upstream form: whether the prompt text was found in the prediction (else output = all of it)."""


@dataclass
class ImportBackend:
    """A ``Backend`` whose "generation" returns the imported outputs (no model)."""

    model_id: str
    revision: str
    outputs: dict[Key, Imported]
    source: dict[str, Any] = field(default_factory=dict)
    name: str = field(default="import", init=False)

    def describe(self) -> dict[str, Any]:
        lost = sum(not o.prompt_found for o in self.outputs.values())
        return {"backend": "import", **self.source, "predictions_without_prompt_text": lost}

    def resolved_generation(self, settings: GenerationSettings) -> dict[str, Any]:
        return {"imported": True, "source_format": self.source.get("format")}

    def default_batch_size(self, settings: GenerationSettings) -> int:
        return max(1, len(self.outputs))  # nothing is computed: one batch

    def generate(self, requests: list[GenerationRequest], settings: GenerationSettings) -> list[GenerationResult]:
        out = []
        for req in requests:
            item = self.outputs[req.key]
            out.append(GenerationResult(output=item.output, templated_prompt_sha256=sha256_text(req.prompt),
                                        n_prompt_tokens=0, n_output_tokens=0,
                                        upstream_prompt_text=item.upstream_prompt_text))
        return out


def split_prediction(prediction: str, prompt: str) -> tuple[str, str, bool]:
    """(upstream_prompt_text, output, prompt found) for an upstream ``generated_text``; the two texts
    always concatenate to the prediction (module docstring)."""
    pos = prediction.find(prompt)
    if pos < 0:
        return "", prediction, False
    end = pos + len(prompt)
    for tail in _TEMPLATE_TAILS:
        if prediction.startswith(tail, end):
            end += len(tail)
            break
    return prediction[:end], prediction[end:], True


def _check_key(path: object, where: str, key: Key, expected: dict[Key, str], seen: set[Key]) -> None:
    if key not in expected:
        raise InputError(path, f"instance {key} is not in the manifest", record=where)
    if key in seen:
        raise InputError(path, f"duplicate output for {key}", record=where)
    seen.add(key)


def _check_prompt(path: object, where: str, key: Key, expected: dict[Key, str], digest: str, fld: str) -> None:
    if digest != expected[key]:
        raise InputError(path, f"the prompt of {key} differs from the manifest's (sha256 {digest[:12]} vs "
                         f"{expected[key][:12]}): these outputs were made for other prompts", record=where, field=fld)


def read_upstream_dir(root: Path, model_id: str, expected: dict[Key, str]) -> dict[Key, Imported]:
    """Outputs of ``model_id`` (``org/name``) from an upstream predictions folder."""
    org, _, name = model_id.rpartition("/")
    out: dict[Key, Imported] = {}
    seen: set[Key] = set()
    files = sorted(root.glob(f"*/{org}/*.json") if org else root.glob("*/*.json"))
    matched = []
    for path in files:
        m = _RUN_FILE.fullmatch(path.name)
        if m and m.group(1) == name:
            matched.append((path, path.parts[-3] if org else path.parts[-2], int(m.group(2))))
    if not matched:
        raise InputError(root, f"no files <dataset>/{model_id}_<run>.json (upstream's predictions layout)")
    for path, dataset, run in matched:
        id_key = UPSTREAM_ID_KEYS.get(dataset)
        if id_key is None:
            raise InputError(path, f"unknown SEAM dataset folder {dataset!r}; expected one of "
                             f"{', '.join(UPSTREAM_ID_KEYS)}")
        records = read_json(path, what="upstream predictions file", expect=list)
        for i, rec in enumerate(records):
            where = f"record {i}"
            if not isinstance(rec, dict):
                raise InputError(path, "expected a JSON object", record=where)
            if id_key not in rec or isinstance(rec[id_key], (dict, list)) or rec[id_key] is None:
                raise InputError(path, f"missing the id key of {dataset}", record=where, field=id_key)
            prediction, msgs = rec.get("prediction"), rec.get("final_msgs")
            if not isinstance(prediction, str):
                raise InputError(path, "expected the pipeline's generated_text as a string", record=where,
                                 field="prediction")
            if not (isinstance(msgs, list) and msgs and isinstance(msgs[0], dict)
                    and isinstance(msgs[0].get("content"), str)):
                raise InputError(path, 'expected [{"role": "user", "content": PROMPT}, ...]', record=where,
                                 field="final_msgs")
            key = (dataset, run, str(rec[id_key]))
            _check_key(path, where, key, expected, seen)
            prompt = msgs[0]["content"]
            _check_prompt(path, where, key, expected, sha256_text(prompt), "final_msgs")
            head, output, found = split_prediction(prediction, prompt)
            out[key] = Imported(output, head, found)
    return out


def read_plain_jsonl(path: Path, expected: dict[Key, str], suite: str = "seam") -> dict[Key, Imported]:
    """Outputs from a JSONL of ``{dataset, run, instance_id, output[, prompt | prompt_sha256]}``;
    ``dataset`` in any spelling the suite's resolver accepts (``musique``, ``MuSiQue``)."""
    from seam_repro.specs import load_suite

    names = load_suite(suite)
    out: dict[Key, Imported] = {}
    seen: set[Key] = set()
    for lineno, rec in iter_jsonl(path, what="outputs JSONL file"):
        where = f"line {lineno}"
        for fld, typ in (("dataset", str), ("run", int), ("instance_id", str), ("output", str)):
            value = rec.get(fld)
            if not isinstance(value, typ) or isinstance(value, bool):
                raise InputError(path, f"missing or not a {typ.__name__}", record=where, field=fld)
        key = (names.canonical_name(rec["dataset"], str(path), "dataset", where), rec["run"], rec["instance_id"])
        _check_key(path, where, key, expected, seen)
        if "prompt" in rec:
            if not isinstance(rec["prompt"], str):
                raise InputError(path, "expected the prompt text as a string", record=where, field="prompt")
            _check_prompt(path, where, key, expected, sha256_text(rec["prompt"]), "prompt")
        if "prompt_sha256" in rec:
            _check_prompt(path, where, key, expected, str(rec["prompt_sha256"]), "prompt_sha256")
        out[key] = Imported(rec["output"])
    return out


def covered_records(records: Sequence[dict[str, Any]], outputs: dict[Key, Imported], source: object) -> list[dict[str, Any]]:
    """The manifest's records of every (dataset, run) the input covers; a partly covered one is refused."""
    groups = {(k[0], k[1]) for k in outputs}
    chosen = [r for r in records if (r["dataset"], r["run"]) in groups]
    missing = [(r["dataset"], r["run"], r["instance_id"]) for r in chosen
               if (r["dataset"], r["run"], r["instance_id"]) not in outputs]
    if missing:
        listed = ", ".join(f"{d} run {r} instance {i}" for d, r, i in missing[:MAX_LISTED])
        raise InputError(source, f"{len(missing)} instance(s) of the imported (dataset, run) pairs have no output; "
                         f"first: {listed}")
    return chosen


def import_outputs(manifest_path: Path, out: Path, *, model: str, upstream_dir: Path | None = None,
                   jsonl: Path | None = None, data_dir: Path | None = None, prompts_dir: Path | None = None,
                   allow_unfrozen: bool = False) -> tuple[Path, int]:
    """Match the outputs to the manifest's prompts and write the run folder; returns (folder, count)."""
    from seam_repro.generate import parse_model_spec
    from seam_repro.manifest.prompts import check_prompt_records, render_records
    from seam_repro.manifest.trust import check_rendered, load_trusted
    from seam_repro.run.replay import run_generation

    if (upstream_dir is None) == (jsonl is None):
        raise InputError("import", "give exactly one of --upstream-dir and --jsonl")
    model_id, revision = parse_model_spec(model)
    tm = load_trusted(manifest_path, allow_unfrozen=allow_unfrozen, purpose="import")
    manifest = tm.manifest
    records = render_records(manifest, data_dir=data_dir, prompts_dir=prompts_dir, base=manifest_path,
                             allow_unfrozen=allow_unfrozen)
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
    backend = ImportBackend(model_id, revision, outputs, source)
    settings = GenerationSettings.from_manifest((manifest.get("config") or {}).get("generation"),
                                                source=str(manifest_path))
    run_generation(chosen, backend, settings, Path(out), manifest, batch_size=backend.default_batch_size(settings),
                   progress=False)
    return Path(out), len(chosen)

