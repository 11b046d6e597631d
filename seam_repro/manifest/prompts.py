"""Stage *manifest*, prompts: render the prompt record of every instance a manifest records, from
its recorded choices (never from a random generator), and the gzipped prompt store beside it."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any

from seam_repro.config import SeamConfig
from seam_repro.errors import InputError, ManifestError, SeamReproError
from seam_repro.files.guard import guard_outputs
from seam_repro.files.reading import is_a
from seam_repro.hashing import PrefixHasher, sha256_json, sha256_text
from seam_repro.instances import Instance
from seam_repro.manifest.format import (
    check_instance_choices,
    check_run_choices,
    choices_to_run,
    load_manifest,
    manifest_config,
    recorded_sources,
)
from seam_repro.manifest.trust import TrustedManifest
from seam_repro.render.context import RunContext
from seam_repro.sources.resolve import Sources, load_sources
from seam_repro.specs import load_suite

REQUIRED: dict[str, Any] = {"dataset": str, "run": int, "instance_id": str, "prompt": str, "prompt_sha256": str, "gen_seed": int}
"""Fields every prompt record carries, with their JSON types."""


def joined(parts: Iterable[tuple[dict[str, Any], bytes, bytes]]) -> Iterator[dict[str, Any]]:
    """Each record with its prompt text (prefix + block), for readers that keep it."""
    for record, prefix, block in parts:
        record["prompt"] = (prefix + block).decode("utf-8")
        yield record


def iter_rendered_parts(runs: list[dict[str, Any]], profile: str, sources: Sources, suite: str = "seam",
                        where: str = "manifest", missing: list[tuple[str, int, str, str]] | None = None,
                        changed: frozenset[str] = frozenset()) -> Iterator[tuple[dict[str, Any], bytes, bytes]]:
    """Render every recorded instance from the recorded choices (never from a random generator):
    each record with the UTF-8 bytes of its prompt's two parts, the run's shared prefix (the same
    ``bytes`` object for every instance of a run) and the instance's block, so hashing and JSON
    escaping do the prefix once per run. The record's ``"prompt"`` is ``""`` (in its place among the
    keys): only readers that keep the text join it (:func:`joined`).

    An instance the data no longer holds (or whose recorded choices no longer fit it) is an error,
    unless its dataset is in ``changed`` (its data or prompt file differs from the sealed hash) and
    ``missing`` is given: then ``(dataset, run, instance_id, reason)`` is appended to ``missing``
    and rendering goes on (``verify``). With unchanged sources it is the manifest that is wrong."""
    in_suite = load_suite(suite)
    specs = {name: in_suite.spec(name) for name in sources.data}
    index: dict[tuple[str, str], dict[str, Instance]] = {}
    for run in runs:
        name, split = run["dataset"], run["split"]
        if name not in sources.data:
            raise InputError(where, f"dataset {name!r} is not among the config's datasets "
                             f"({', '.join(sources.data)})", field=f"runs[{name} run {run['run']}].dataset")
        if (name, split) not in index:
            index[(name, split)] = {inst.instance_id: inst for inst in sources.data[name].split(split)}
        by_id, spec = index[(name, split)], specs[name]
        tolerate = missing is not None and name in changed  # else a missing instance is the manifest's fault
        try:
            template = spec.template_obj()
            check_run_choices(run, sources.prompt_files[name], spec.sampling.demo_key, where)
            ctx = RunContext(spec=spec, profile=profile, prompt_file=sources.prompt_files[name],
                             paraphrase_index=run["paraphrase_index"], demo_indices=tuple(run["demo_indices"]),
                             max_num_docs=run["max_num_docs"], doc_order=tuple(run["doc_order"]))
            prefix = template.prefix(_few_shots_checked(template, ctx, sources, name, spec.sampling.demo_key))
        except SeamReproError as exc:
            if not tolerate:
                raise
            missing += [(name, run["run"], rec["id"], f"run choices no longer fit the data ({exc})")
                        for rec in run["instances"]]
            continue
        hasher = PrefixHasher(prefix)
        prefix_utf8, digest = hasher.prefix_utf8, hasher.hexdigest_utf8
        task, run_number, has_metric = spec.task, run["run"], profile in spec.metrics
        for rec in run["instances"]:
            inst = by_id.get(rec["id"])
            if inst is None:
                if not tolerate:
                    raise ManifestError(f"{name} run {run_number}: instance '{rec['id']}' is not in split "
                                        f"'{split}' of the data given")
                missing.append((name, run_number, rec["id"], f"not in split '{split}' of the data given"))
                continue
            mention_ids = rec.get("mention_ids")
            try:
                check_instance_choices(rec, inst, spec, where)
                block, target = template.test_block(inst, ctx, mention_ids)
            except SeamReproError as exc:
                if not tolerate:
                    raise
                missing.append((name, run_number, rec["id"], f"recorded choices no longer fit the data ({exc})"))
                continue
            block_utf8 = block.encode("utf-8")
            record = {
                "dataset": name, "task": task, "run": run_number, "split": split,
                "instance_id": rec["id"], "prompt": "", "prompt_sha256": digest(block_utf8),
                "target": target, "target_sha256": sha256_json(target), "gen_seed": rec["gen_seed"],
            }
            if has_metric:  # the suite's metric for this profile; scoring dispatches on it
                record["metric"] = spec.metrics[profile]
            if inst.answer_aliases:
                record["answer_aliases"] = list(inst.answer_aliases)
            if mention_ids is not None:
                record["mention_ids"] = sorted(mention_ids)
            yield record, prefix_utf8, block_utf8


def _few_shots_checked(template: Any, ctx: RunContext, sources: Sources, name: str, demo_key: str) -> str:
    """The run's demonstrations block; a demonstration of the wrong shape in the prompt file (a
    user's --prompts-dir file, say) is an InputError naming that file, not a TypeError."""
    try:
        return template.few_shots(ctx)
    except (TypeError, KeyError, AttributeError, IndexError, ValueError) as exc:
        where = sources.prompt_paths.get(name, f"{name} prompt file")
        raise InputError(where, f"a selected demonstration {list(ctx.demo_indices)} does not have the form "
                         f"this dataset's template reads ({type(exc).__name__}: {str(exc)[:80]})",
                         field=demo_key) from None


def render_records(tm: TrustedManifest, data_dir: Any = None, prompts_dir: Any = None,
                   allow_unfrozen: bool = False) -> Iterator[dict[str, Any]]:
    """Prompt records of a frozen manifest (``load_trusted``), rendered from its recorded choices as they
    are asked for; the sources are loaded, and an unusable manifest refused, before the first record.
    With ``allow_unfrozen`` an unfrozen manifest's choices are drawn now from its config (as ``freeze``
    draws them), which gives a usable but uncitable run."""
    return joined(_render_parts(tm.manifest, tm.config, Path(tm.path), data_dir, prompts_dir, allow_unfrozen))


def _render_parts(manifest: dict[str, Any], cfg: SeamConfig, base: Path, data_dir: Any, prompts_dir: Any,
                  allow_unfrozen: bool = False) -> Iterator[tuple[dict[str, Any], bytes, bytes]]:
    if not manifest["frozen"] and not allow_unfrozen:
        raise ManifestError("manifest is not frozen: run `seam-repro freeze MANIFEST` first")
    sources = load_sources(cfg, data_dir=data_dir, prompts_dir=prompts_dir,
                           base_dir=base.parent, recorded=recorded_sources(manifest))
    runs = manifest["runs"]
    if not manifest["frozen"]:
        from seam_repro.sample import draw_all  # a frozen manifest draws nothing

        runs = [choices_to_run(c) for c in draw_all(cfg, manifest["profile"], sources.data, sources.prompt_files)]
    return iter_rendered_parts(runs, manifest["profile"], sources, cfg.suite, where=str(base))


_RECORD_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True)
"""What ``json.dumps(record, ensure_ascii=False, sort_keys=True)`` uses."""
_ALL_BUT_RARE_CONTROLS = bytes(c for c in range(0x100) if c >= 0x20 or c == 0x0A)
"""``bytes.translate`` deletes these, leaving the control bytes other than the newline (usually none)."""


def json_string_utf8(data: bytes) -> bytes:
    """For the UTF-8 bytes of a text, the UTF-8 bytes of ``json.dumps(text, ensure_ascii=False)``
    without its two quotes. Prompt text holds newlines but rarely another control character: then
    escaping is three byte replacements (``\\``, ``"``, newline) on the bytes (in UTF-8 a byte below
    0x80 is always that ASCII character). Any other control character takes ``encode_basestring``."""
    if data.translate(None, _ALL_BUT_RARE_CONTROLS):
        return encode_basestring(data.decode("utf-8"))[1:-1].encode("utf-8")
    return data.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n")


def records_jsonl(parts: Iterable[tuple[dict[str, Any], bytes, bytes]]) -> tuple[list[bytes], int]:
    """The records as UTF-8 JSONL, each line ``json.dumps(record, ensure_ascii=False, sort_keys=True)``
    with ``"prompt"`` = prefix + block (``iter_rendered_parts``'s UTF-8 bytes), and how many, as
    chunks for ``files.atomic_write_bytes`` to write unjoined.

    The run's shared prefix is escaped once per run and spliced in as bytes, never joined as ``str``
    (a prefix with one character beyond Latin-1 would make every prompt UCS-2). The other fields are
    the encoder's text of the record with an empty prompt, split after ``"prompt": "`` (a key: a
    string value cannot hold an unescaped quote, and sorted keys put no value that could spell it
    before it)."""
    pieces: list[bytes] = []
    last_prefix, escaped_prefix, n = None, b"", 0
    for record, prefix, block in parts:
        if prefix is not last_prefix:
            last_prefix, escaped_prefix = prefix, json_string_utf8(prefix)
        line = _RECORD_JSON.encode({**record, "prompt": ""})
        at = line.index('"prompt": ""') + 11  # after the value's opening quote
        pieces += (line[:at].encode("utf-8"), escaped_prefix, json_string_utf8(block), (line[at:] + "\n").encode("utf-8"))
        n += 1
    return pieces, n


def recorded_inputs(src: dict[str, Any], base: Path) -> list[Path]:
    """Prompt and data files of sources in their recorded form (``format.recorded_sources``: paths
    relative to the manifest's folder ``base``; ``Sources.as_json()``: absolute paths)."""
    out = [base / e["path"] for e in src["prompts"].values() if isinstance(e.get("path"), str)]
    for entry in src["data"].values():
        if isinstance(entry.get("path"), str):
            root = base / entry["path"]
            out += [root, *(root / f for f in (entry.get("files") or {}) if isinstance(f, str))]
    return out


def prompts_jsonl(manifest: Path, out: Path, data_dir: Any = None, prompts_dir: Any = None
                  ) -> tuple[list[bytes], int]:
    """``seam-repro prompts``: ``records_jsonl`` of every prompt record of a manifest, after refusing
    an ``out`` that would overwrite anything the rendering reads."""
    guard_outputs([("-o", out)], inputs=[manifest], read_dirs=[data_dir, prompts_dir])
    m = load_manifest(manifest)
    store = (m.get("provenance") or {}).get("prompt_store") or {}
    guard_outputs([("-o", out)], inputs=[manifest.parent / str(store.get("path", manifest.name)),
                                         *recorded_inputs(recorded_sources(m), manifest.parent)])
    return records_jsonl(_render_parts(m, manifest_config(m, str(manifest)), manifest, data_dir, prompts_dir))


def require_fields(rec: dict[str, Any], fields: dict[str, type], source: object, record: object) -> None:
    """Each of ``fields`` present with its JSON type (a bool is no int), else a one-line error."""
    for name, typ in fields.items():
        if not is_a(rec.get(name), typ):
            raise InputError(source, f"missing or not a {typ.__name__}", record=record, field=name)


def check_prompt_record(rec: dict[str, Any], source: object, record: object,
                        required: dict[str, Any] = REQUIRED) -> None:
    """One prompt record's field types (``required``) and its prompt hash; the one check every
    reader of prompt records applies (replay's input, a shard's or run folder's prompts.jsonl)."""
    require_fields(rec, required, source, record)
    if sha256_text(rec["prompt"]) != rec["prompt_sha256"]:
        raise InputError(source, "does not match sha256 of 'prompt'", record=record, field="prompt_sha256")


def checked_prompt_records(records: Iterable[dict[str, Any]], source: str,
                           hashes: dict[tuple[str, int, str], str]) -> Iterator[tuple[tuple[str, int, str], dict[str, Any]]]:
    """Each record with its key, once its fields, prompt hash and uniqueness are checked; ``hashes``
    collects {key: prompt_sha256} as it goes, so a reader that streams (replay's spool) holds no
    records and one that does not (:func:`check_prompt_records`) applies the same checks."""
    for i, rec in enumerate(records):
        check_prompt_record(rec, source, i)
        key = (rec["dataset"], rec["run"], rec["instance_id"])
        if key in hashes:
            raise InputError(source, f"duplicate instance {key}", record=i)
        hashes[key] = rec["prompt_sha256"]
        yield key, rec


def check_prompt_records(records: Sequence[dict[str, Any]],
                         source: str = "prompt records") -> dict[tuple[str, int, str], str]:
    """Validate fields, prompt hashes and uniqueness (replay's input, a shard's prompts.jsonl); return
    {key: prompt_sha256}."""
    hashes: dict[tuple[str, int, str], str] = {}
    deque(checked_prompt_records(records, source, hashes), maxlen=0)
    return hashes
