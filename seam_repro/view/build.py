"""``seam-repro view``: a static run explorer (HTML + CSS + JS + data files) built from run folders
and bundles.

Shaped by where it must open: from ``file://`` a page may not ``fetch`` its own data files, so every
data file is a small script (``data/<name>.js``) that hands one JSON object to ``SEAMVIEW.put``; the
page adds the ``<script>`` when a page needs it. The first page only loads ``data/index.js`` (the
Table 3 summary and the names of every other file); a dataset's grid, a model's predictions and a
run's prompts are separate files, loaded when opened, so opening the site costs the same for the
smoke run and for ten models at paper size.

Everything shown comes from the kit's readers (``analysis.submit.load_inputs`` for scores and
bundles, ``scoring.loop.load_prompts``/``load_predictions`` for prompts and predictions, the run
folder's manifest for the sampled factors); the data files hold text only and the page writes it
with ``textContent`` (never as HTML): model output and dataset text are untrusted.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from seam_repro.analysis.aggregate import ModelScores
from seam_repro.analysis.reference import ReferenceTable
from seam_repro.errors import InputError, MissingDataError, SeamReproError
from seam_repro.files.atomic import OutputError, atomic_dir, atomic_write_bytes
from seam_repro.files.reading import read_jsonl
from seam_repro.hashing import sha256_file
from seam_repro.manifest.shipped import MANIFESTS_DIR
from seam_repro.run.store import (
    Key,
    predictions_root,
    prompts_path,
    read_run_records,
)

MARKER = ".seam-repro-view"
"""Marks a folder as a site written here: only such a folder is replaced by a later ``--out``."""
ASSETS = ("index.html", "view.css", "view.js")
"""The static files copied next to the data (package data under ``seam_repro/view/assets``)."""


@dataclass
class _Source:
    """One run folder: its prompt records, manifest runs and paraphrase texts."""

    index: int
    run_dir: Path
    profile: str
    prompts: dict[Key, dict[str, Any]]
    runs: dict[tuple[str, int], dict[str, Any]]
    paraphrases: dict[str, list[str] | str]


def _js(name: str, obj: Any) -> bytes:
    """A data file: one call that hands the object to the page, as JSON text given to ``JSON.parse``
    (not an object literal, where a key ``"__proto__"`` from the data would set the prototype
    instead of a property). ``ensure_ascii`` keeps the file 7-bit, so no charset can garble it."""
    body = json.dumps(obj, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return f"SEAMVIEW.put({json.dumps(name)},JSON.parse({json.dumps(body)}));\n".encode("ascii")


def _paraphrases(run_dir: Path, manifest: dict[str, Any], prompts_dir: Path | None) -> dict[str, list[str] | str]:
    """Per dataset, the prompt file's instruction paraphrases (checked against the manifest's pin),
    or the reason they cannot be shown; the run folder keeps only their indices."""
    from seam_repro.sources.resolve import read_prompt_file, resolve_prompt_path
    from seam_repro.specs import load_suite

    out: dict[str, list[str] | str] = {}
    try:
        specs = load_suite(str((manifest.get("config") or {}).get("suite") or "seam")).datasets
    except SeamReproError:  # a suite this kit does not ship: the default demonstration key is tried
        specs = {}
    pins = (manifest.get("sources") or {}).get("prompts") or {}
    recorded = ((manifest.get("provenance") or {}).get("paths") or {}).get("prompts") or {}
    for name in dict.fromkeys(r["dataset"] for r in manifest.get("runs", [])):
        # a recorded path is relative to the manifest replayed, which the run folder does not name:
        # an absolute one is followed, a relative one is tried beside the shipped manifests (the smoke
        # manifests' fixtures/prompts); the pinned hash is checked either way
        rel = recorded.get(name)
        beside = isinstance(rel, str) and not Path(rel).is_absolute()
        where = rel if isinstance(rel, str) and not beside else None
        if beside and (MANIFESTS_DIR / rel).is_file():
            where = str(MANIFESTS_DIR / rel)
        try:
            path = resolve_prompt_path(name, prompts_dir, where, run_dir)
            want, got = (pins.get(name) or {}).get("sha256"), sha256_file(path)
            out[name] = (f"{path} has sha256 {got}, the manifest pins {want}" if want and got != want
                         else [p["instructions"] for p in read_prompt_file(path, specs.get(name))["prompts"]])
        except (MissingDataError, InputError) as exc:
            if beside and prompts_dir is None:
                # a manifest that reads its prompt files beside itself (the smoke fixtures): name that
                # folder, not an upstream fetch (offline, and other files than the fixtures)
                folder = Path("manifests") / Path(rel).parent
                out[name] = (f"paraphrase text not available: the manifest reads {rel} beside itself; rerun "
                             f"view with --prompts-dir {folder.as_posix()} (the folder holding {Path(rel).name})")
            else:
                out[name] = f"paraphrase text not available ({exc})"
    return out


def _read_source(index: int, run_dir: Path, prompts_dir: Path | None) -> _Source:
    from seam_repro.scoring.loop import load_prompts

    records = read_run_records(run_dir)
    if records.manifest is None:
        raise InputError(run_dir, "has no manifest.json; expected a run folder written by `seam-repro replay`")
    manifest = records.manifest.manifest
    runs = {(r["dataset"], r["run"]): r for r in manifest.get("runs", [])}
    return _Source(index, run_dir, str(manifest.get("profile", "upstream")), load_prompts(prompts_path(run_dir)), runs,
                   _paraphrases(run_dir, manifest, prompts_dir))


def _alt_scores(line: dict[str, Any]) -> dict[str, Any]:
    """Scores other than the published one, where they differ from it: the as-intended coreference
    score (whole gold file) and the other profile's metric."""
    details = line.get("details") or {}
    out: dict[str, Any] = {}
    for key, label in (("upstream_intended", "as intended"), ("corrected", "corrected metric"),
                       ("upstream", "upstream metric")):
        entry = details.get(key)
        if isinstance(entry, dict) and "score" in entry and entry.get("metric_version") != line.get("metric_version"):
            out[label] = {"metric": entry.get("metric"), "score": entry.get("score")}
    return out


def build_site(inputs: list[Path], out: Path, reference: ReferenceTable | None = None,
               prompts_dir: Path | None = None, command: str = "", report: dict[str, Any] | None = None) -> Path:
    """Write the site into ``out`` (built aside and renamed in whole); returns ``out/index.html``.
    ``report``: ``build_report``'s result for the same inputs, when the caller has it (``report
    --view``): the ASO ranking is the slow part and is not worth doing twice."""
    from seam_repro.analysis.report import build_report, labelled
    from seam_repro.analysis.submit import load_inputs

    models = load_inputs(inputs)
    rep = report if report is not None else build_report(models, reference, command=command)
    sources: dict[Path, _Source] = {}
    files: dict[str, Any] = {}
    datasets: dict[str, dict[str, Any]] = {}
    model_entries = []
    for m_index, (ms, label) in enumerate(labelled(models)):
        paper = reference.name_for_hf_id(ms.model_id) if reference is not None else None
        browsable = Path(ms.source).is_dir()  # else a bundle: scores only, no predictions to browse
        model_entries.append({"label": label, "id": ms.model_id, "revision": ms.revision, "paper": paper,
                              "browsable": browsable, "unscored": dict(ms.unscored), "partial": _partial(ms),
                              "runs": {name: {str(r): v for r, v in sorted(ds.runs.items())}
                                       for name, ds in ms.datasets.items()}})
        if browsable:
            run_dir = Path(ms.source).parent.parent
            if run_dir not in sources:
                sources[run_dir] = _read_source(len(sources), run_dir, prompts_dir)
            _add_predictions(ms, m_index, sources[run_dir], files, datasets)
    index = {"title": "seam-repro run explorer", "command": command, "report": _summary(rep),
             "models": model_entries, "datasets": [], "figures": []}
    _add_grids(rep, datasets, files, index)
    _write_site(out, rep, files, index)
    return out / "index.html"


def _add_predictions(ms: ModelScores, m_index: int, src: _Source, files: dict[str, Any],
                     datasets: dict[str, dict[str, Any]]) -> None:
    """One browsable model's cells (output, extracted answer, scores) into ``files``, one
    predictions file per dataset, with the prompts file of each run it covers; its columns into
    ``datasets``."""
    from seam_repro.scoring.loop import load_predictions, parsed_response

    preds, model = load_predictions(predictions_root(src.run_dir) / Path(ms.source).name, src.prompts)
    lines = {(ln["dataset"], ln["run"], ln["instance_id"]): ln  # as written, validated by load_inputs
             for ln in read_jsonl(Path(ms.source) / "instance_scores.jsonl", what="instance_scores.jsonl")}
    per_ds: dict[str, dict[str, dict[str, Any]]] = {}
    for key, pred in preds.items():
        ds, run, iid = key
        line = lines.get(key) or {}
        try:
            profile = (line.get("details") or {}).get("profile") or src.profile
            parsed: str | None = parsed_response(src.prompts[key], pred, model, profile)
        except SeamReproError as exc:
            parsed = f"(not extracted: {exc})"
        cell = {"o": pred["output"], "p": parsed, "s": line.get("score"), "v": line.get("valid_format"),
                "mv": line.get("metric_version"), "alt": _alt_scores(line), "t": bool(pred.get("truncated"))}
        per_ds.setdefault(ds, {}).setdefault(str(run), {})[iid] = cell
        datasets.setdefault(ds, {"instances": {}, "cols": []})["instances"].setdefault(iid, None)
    for ds, by_run in per_ds.items():
        d_index, cols = list(datasets).index(ds), datasets[ds]["cols"]
        pred_name = f"pred_{d_index}_{m_index}"
        files[pred_name] = by_run
        for run in sorted(by_run, key=int):
            prompt_name = f"prompt_{d_index}_{src.index}_{run}"
            if prompt_name not in files:
                files[prompt_name] = _prompt_file(src, ds, int(run))
            scores = {iid: [c["s"], c["v"]] for iid, c in by_run[run].items()}
            cols.append({"model": m_index, "run": int(run), "src": src.index, "pred": pred_name,
                         "prompt": prompt_name, "scores": scores})


def _add_grids(rep: dict[str, Any], datasets: dict[str, dict[str, Any]], files: dict[str, Any],
               index: dict[str, Any]) -> None:
    """Each dataset's grid (instances x columns of scores) into ``files`` and its entry into
    ``index``; the pages follow the summary table's dataset order and names (ECB shown as ECB+ in both)."""
    order = {name: k for k, name in enumerate(rep["datasets"])}
    for d_index, ds in enumerate(sorted(datasets, key=lambda n: (order.get(n, len(order)), n))):
        d = datasets[ds]
        instances = list(d["instances"])
        files[f"grid_{d_index}"] = {
            "dataset": ds, "instances": instances,
            "cols": [{**{k: v for k, v in c.items() if k != "scores"},
                      "s": [c["scores"].get(i, [None, None])[0] for i in instances],
                      "v": [c["scores"].get(i, [None, None])[1] for i in instances]} for c in d["cols"]]}
        index["datasets"].append({"name": ds, "grid": f"grid_{d_index}", "instances": len(instances),
                                  "display_name": (rep["datasets"].get(ds) or {}).get("display_name") or ds,
                                  "models": sorted({c["model"] for c in d["cols"]}),
                                  "runs": sorted({c["run"] for c in d["cols"]})})


def _write_site(out: Path, rep: dict[str, Any], files: dict[str, Any], index: dict[str, Any]) -> None:
    """The figures, the data files and the static assets, into a folder swapped in whole."""
    from seam_repro.analysis.plots import draw_ar_arsd, draw_boxes, save_png

    with _site_dir(out) as tmp:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # a site to publish, not mkdtemp's private 0700
        (tmp / MARKER).write_text("written by seam-repro view; a later `view --out` here replaces it\n")
        data = tmp / "data"
        data.mkdir()
        if any(d.get("rows") for d in rep["datasets"].values()):  # the report's figures, beside the pages
            for draw, name, title in ((draw_boxes, "box_plots.png", "Scores per run (box plots)"),
                                      (draw_ar_arsd, "ar_arsd.png",
                                       "Average rank and its spread (AR, ARSD per model and dataset)")):
                save_png(draw(rep), tmp / name)
                index["figures"].append({"file": name, "title": title})
        for name, obj in files.items():
            atomic_write_bytes(data / f"{name}.js", _js(name, obj))
        atomic_write_bytes(data / "index.js", _js("index", index))
        assets = resources.files("seam_repro.view") / "assets"
        for name in ASSETS:
            with resources.as_file(assets / name) as p:
                shutil.copyfile(p, tmp / name)


@contextlib.contextmanager
def _site_dir(out: Path) -> Iterator[Path]:
    """A folder to build the site in: ``out`` itself through ``atomic_dir``, or, when ``out`` is an
    earlier site, a sibling swapped in once whole (anything else at ``out`` is refused, not merged)."""
    if not out.exists():
        with atomic_dir(out) as tmp:
            yield tmp
        return
    if not (out / MARKER).is_file():
        raise OutputError(f"{out}: exists and is not a site written by `seam-repro view`; choose a new --out")
    staging = out.with_name(f".{out.name}.new-{os.getpid()}")
    with atomic_dir(staging) as tmp:
        yield tmp
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    os.replace(out, old)
    os.replace(staging, out)
    shutil.rmtree(old, ignore_errors=True)


def _partial(ms: ModelScores) -> str | None:
    """"18 of 180 instances" for a partial run (``--limit``, ``--datasets``, ``--runs``), else None:
    shown in the model's own row, not only in the notes."""
    cov = ms.extra.get("coverage")
    partial = isinstance(cov, dict) and cov.get("partial")
    return f"{cov.get('scored')} of {cov.get('instances')} instances" if partial else None


def _prompt_file(src: _Source, ds: str, run: int) -> dict[str, Any]:
    """One (run folder, dataset, run): its sampled factors and every instance's prompt and gold."""
    choice = src.runs.get((ds, run)) or {}
    para = src.paraphrases.get(ds)
    p_index = choice.get("paraphrase_index")
    if isinstance(para, list):
        text = para[p_index] if isinstance(p_index, int) and 0 <= p_index < len(para) else "(index out of range)"
    else:
        text = para or "paraphrase text not available"
    factors = {"paraphrase_index": p_index, "paraphrase_text": text, "doc_order": choice.get("doc_order"),
               "demo_indices": choice.get("demo_indices"), "max_num_docs": choice.get("max_num_docs"),
               "sample_seed": choice.get("sample_seed"), "split": choice.get("split"), "profile": src.profile}
    instances = {iid: {"prompt": rec["prompt"], "gold": rec.get("target"), "gen_seed": rec.get("gen_seed")}
                 for (d, r, iid), rec in src.prompts.items() if d == ds and r == run}
    return {"factors": factors, "instances": instances}


def _summary(rep: dict[str, Any]) -> dict[str, Any]:
    """The report's Table 3 content the summary page shows (ASO tables left to report.json)."""
    keep = ("rank", "model", "mean", "std", "n_runs", "runs", "from_summary_stats", "format_rate", "model_id",
            "paper_rank", "protocol_mismatch", "rank_if_comparable")
    st = rep["stability"]
    apart = st.get("apart") or {}  # runs under another protocol: ranked apart, as report.md shows them
    return {**{k: rep.get(k) for k in ("reference", "manifest_digest", "model_order", "notes")},
            "stability": {"average_rank": st.get("average_rank"), "arsd": st.get("arsd"),
                          "apart": {m: {k: a.get(k) for k in ("average_rank", "arsd")} for m, a in apart.items()}},
            "datasets": {name: {"display_name": d.get("display_name"), "metric": d.get("metric"),
                                "rows": [{k: row.get(k) for k in keep} for row in d.get("rows", []) + d.get("apart", [])]}
                         for name, d in rep["datasets"].items()}}
