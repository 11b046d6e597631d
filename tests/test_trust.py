"""The trust chain end to end on real (echo) runs of the shipped smoke manifest. Each test is an
attack or accident that old main let through (named in its docstring) and that is now refused or
reported: re-sealed manifests, replaced gold targets, dropped datasets, duplicated or unknown score
lines, protocol mismatches, silently dropped report cells."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from trust_helpers import REPO, echo_runs, forge, smoke_copy  # noqa: F401 - session fixture

from seam_repro.analysis.aggregate import load_run_dir
from seam_repro.analysis.aso import AsoParams
from seam_repro.analysis.reference import load_reference
from seam_repro.analysis.report import build_report, render_markdown
from seam_repro.analysis.submit import load_inputs
from seam_repro.cli import main
from seam_repro.errors import InputError, ManifestError
from seam_repro.manifest.format import dump_manifest, seal
from seam_repro.manifest.trust import load_trusted
from seam_repro.scoring.loop import score_run_dir


def _copy(src: Path, tmp_path: Path, name: str = "run") -> Path:
    dst = tmp_path / name
    shutil.copytree(src, dst)
    return dst


def _cli(args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["seam-repro", *map(str, args)])
    with pytest.raises(SystemExit) as exc:
        main()
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out + out.err


# --- replay ---------------------------------------------------------------------------------------
def test_replay_refuses_a_resealed_manifest_before_loading_a_model(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Old main: a re-sealed manifest whose hashes do not match its choices was replayed and its
    digest stamped on the run; only `verify` noticed."""
    path = smoke_copy(tmp_path)
    m = json.loads(path.read_text())
    inst = m["runs"][3]["instances"][1]
    inst["prompt_sha256"] = "0" * 64
    path.write_text(dump_manifest(forge(m)))

    import seam_repro.generate

    def no_model(*a: object, **k: object) -> None:
        raise AssertionError("a model was loaded before the prompts were checked")

    monkeypatch.setattr(seam_repro.generate, "make_backend", no_model)
    from seam_repro.run.replay import ReplayOptions, replay

    with pytest.raises(ManifestError) as exc:
        replay(load_trusted(path), tmp_path / "out", ReplayOptions(backend="echo", progress=False))
    msg = str(exc.value)
    first = msg.splitlines()[0]
    assert first.startswith(str(path)) and "1 rendered prompt(s) do not match" in first
    assert f"{m['runs'][3]['dataset']} run {m['runs'][3]['run']} instance {inst['id']}: prompt hashes to" in msg
    assert "expects prompt_sha256 " + "0" * 64 in msg
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("where", ["top", "run"])
def test_replay_refuses_a_resealed_manifest_with_a_forged_prompt_digest(where: str, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Old main: a manifest whose prompt_digest (overall or per run) was replaced and the whole
    resealed replayed, and the forged digest went on into summaries and bundles."""
    path = smoke_copy(tmp_path)
    m = json.loads(path.read_text())
    if where == "top":
        m["prompt_digest"] = "ab" * 32
    else:
        m["runs"][2]["prompt_digest"] = "ab" * 32
    path.write_text(dump_manifest(seal(m)))
    code, out = _cli(["replay", path, "--backend", "echo", "--out", tmp_path / "out", "--limit", "1"],
                     monkeypatch, capsys)
    field = "prompt_digest" if where == "top" else "runs/2/prompt_digest"
    assert code == 2 and out.startswith(f"error: {path}: field '{field}': recorded {'ab' * 32} but"), out
    assert len(out.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_replay_copies_the_manifest_and_loads_it_once(echo_runs: dict[str, Path],  # noqa: F811
                                                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = echo_runs["full"]
    shipped = json.loads((REPO / "manifests" / "smoke.json").read_text())
    assert json.loads((run / "manifest.json").read_text())["digest"] == shipped["digest"]
    import seam_repro.manifest.format

    calls = []
    real = seam_repro.manifest.format.load_manifest
    monkeypatch.setattr(seam_repro.manifest.format, "load_manifest", lambda p: calls.append(p) or real(p))
    path = smoke_copy(tmp_path)
    main(["replay", str(path), "--backend", "echo", "--out", str(tmp_path / "again"), "--limit", "1", "--no-score"])
    assert calls == [path]  # the command loads it; the unfrozen check and replay were two more loads


# --- score ----------------------------------------------------------------------------------------
def _rewrite_prompts(run: Path, edit) -> None:  # type: ignore[no-untyped-def]
    rows = [json.loads(x) for x in (run / "prompts.jsonl").read_text().splitlines()]
    rows = [r for r in (edit(r) for r in rows) if r is not None]
    (run / "prompts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_score_refuses_a_replaced_gold_target(echo_runs: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    """Old main: replacing a target in RUN_DIR/prompts.jsonl and dropping its target_sha256 scored 100."""
    run = _copy(echo_runs["full"], tmp_path)
    out = json.loads((run / "predictions" / "echo" / "MultiNews" / "run_0.jsonl").read_text().splitlines()[0])

    def forge(r: dict) -> dict:
        if (r["dataset"], r["run"], r["instance_id"]) == ("MultiNews", 0, out["instance_id"]):
            r["target"] = out["output"]
            r.pop("target_sha256")
        return r

    _rewrite_prompts(run, forge)
    with pytest.raises(InputError) as exc:
        score_run_dir(run, fic=False)
    msg = str(exc.value)
    assert msg.startswith(str(run / "prompts.jsonl")) and f"MultiNews run 0 instance {out['instance_id']}" in msg
    assert "the manifest expects target_sha256" in msg and "\n" not in msg


def test_score_refuses_a_swapped_prompt_record(echo_runs: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    run = _copy(echo_runs["full"], tmp_path)
    from seam_repro.hashing import sha256_text

    def forge(r: dict) -> dict:
        if r["dataset"] == "MusiQue" and r["run"] == 1:
            r["prompt"] += " (edited)"
            r["prompt_sha256"] = sha256_text(r["prompt"])
        return r

    _rewrite_prompts(run, forge)
    with pytest.raises(InputError, match="MusiQue run 1 instance .*manifest expects prompt_sha256"):
        score_run_dir(run, fic=False)


def test_a_dataset_without_predictions_is_reported_unscored(echo_runs: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    """Old main scored the rest silently; submit and report then passed the result on without it."""
    run = _copy(echo_runs["full"], tmp_path)
    shutil.rmtree(run / "predictions" / "echo" / "OpenASP")
    shutil.rmtree(run / "scores")
    [path] = score_run_dir(run, fic=False)
    summary = json.loads(path.read_text())
    assert summary["datasets"]["OpenASP"]["runs"] == {"0": None, "1": None, "2": None}
    assert "no predictions for this dataset" in summary["datasets"]["OpenASP"]["reason"]
    missing = [u for u in summary["unscored"] if u["dataset"] == "OpenASP"]
    assert [(u["run"], u["missing"], u["of"]) for u in missing] == [(0, 2, 2), (1, 2, 2), (2, 2, 2)]
    assert summary["coverage"] == {"instances": 36, "scored": 30, "partial": True}
    [ms] = load_run_dir(run)
    assert "OpenASP" in ms.unscored and "no predictions" in ms.unscored["OpenASP"]
    rep = build_report([ms], load_reference("paper"), AsoParams(b=200))
    cells = rep["datasets"]["OpenASP"]["absent"]
    assert cells[0]["model"] == "echo" and cells[0]["cell"] == "not scored"
    md = render_markdown(rep)
    assert "| – | echo | not scored (see notes) |" in md
    assert "- echo: OpenASP not scored (left out of every statistic): no predictions for this dataset" in md


def test_duplicated_or_unknown_score_lines_are_refused(echo_runs: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    """Old main: report, diff and submit accepted duplicated or unknown lines in instance_scores.jsonl."""
    for how in ("duplicate", "unknown"):
        run = _copy(echo_runs["full"], tmp_path, how)
        f = run / "scores" / "echo" / "instance_scores.jsonl"
        lines = f.read_text().splitlines(keepends=True)
        extra = lines[0] if how == "duplicate" else json.dumps({**json.loads(lines[0]), "instance_id": "zz"}) + "\n"
        f.write_text("".join(lines) + extra)
        with pytest.raises(InputError) as exc:
            load_inputs([run])
        msg = str(exc.value)
        assert "\n" not in msg
        if how == "duplicate":  # old main named the folder and called the line number "instance N"
            key = json.loads(lines[0])
            assert msg.startswith(f"{f}: record line {len(lines) + 1}: duplicate score for"), msg
            assert "already scored at line 1" in msg and repr(key["instance_id"]) in msg
        else:
            assert msg.startswith(str(f)) and "instance zz is not in" in msg and "manifest.json" in msg


# --- protocol ------------------------------------------------------------------------------------
def test_limited_smoke_run_is_not_diffed_as_a_paper_model(echo_runs: dict[str, Path],  # noqa: F811
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Old main: a --limit 1 run of the 3-run smoke manifest with 48 new tokens was diffed
    `--as Llama-3-8B` and ranked beside the paper's models."""
    code, out = _cli(["diff", echo_runs["limited"], "--as", "Llama-3-8B"], monkeypatch, capsys)
    assert code == 3
    for field in ("protocol_digest", "runs: 3 vs 10", "limit: 1 vs None", "max_new_tokens: 48 vs 500",
                  "prompt_path: 'raw' vs 'upstream'", "partial (18 of 36 scored)"):
        assert field in out, field
    code, out = _cli(["diff", echo_runs["limited"], "--as", "Llama-3-8B", "--allow-protocol-mismatch"],
                     monkeypatch, capsys)
    assert code in (0, 1) and "[protocol differs]" in out


def test_report_labels_protocol_mismatches_and_partial_runs(echo_runs: dict[str, Path]) -> None:  # noqa: F811
    models = load_inputs([echo_runs["limited"]])
    rep = build_report(models, load_reference("paper"), AsoParams(b=200))
    assert "echo" not in [r["model"] for r in rep["datasets"]["MultiNews"]["rows"]]  # ranked apart
    row = next(r for r in rep["datasets"]["MultiNews"]["apart"] if r["model"] == "echo")
    assert any(d.startswith("limit: 1") for d in row["protocol_mismatch"])
    md = render_markdown(rep)
    assert "echo ‡" in md and "‡ echo: protocol differs from the reference" in md
    assert "echo: partial run (18 of 36 instances scored)" in md


def test_paper_reference_protocol_is_the_shipped_paper_manifest() -> None:
    from seam_repro.manifest.format import load_manifest, protocol_digest

    ref = load_reference("paper").protocol or {}
    paper = load_manifest(REPO / "manifests" / "paper.json")
    assert ref["protocol_digest"] == protocol_digest(paper)
    gen = paper["config"]["generation"]
    assert (ref["temperature"], ref["max_new_tokens"], ref["runs"], ref["profile"]) == \
        (gen["temperature"], gen["max_new_tokens"], paper["config"]["num_different_runs"], paper["profile"])


# --- figures --------------------------------------------------------------------------------------
def test_a_model_without_arsd_is_still_plotted() -> None:
    """Old main skipped it in the AR/ARSD figure."""
    from seam_repro.analysis.plots import draw_ar_arsd

    rep = {"datasets": {},
           "stability": {"average_rank": {"a/zero": 2.0, "b/ok": 1.0}, "arsd": {"a/zero": None, "b/ok": 3.0},
                         "ranked_in": {"a/zero": ["MultiNews"], "b/ok": ["MultiNews"]}}}
    fig = draw_ar_arsd(rep)
    ar_ax, arsd_ax = fig.axes[:2]
    assert sorted(t.get_text() for t in ar_ax.get_yticklabels()) == ["ok", "zero"] and len(ar_ax.patches) == 2
    assert len(arsd_ax.patches) == 1 and any("none (every mean 0)" in t.get_text() for t in arsd_ax.texts)


def test_box_plot_keeps_not_scored_cells(tmp_path: Path) -> None:
    rep = {"datasets": {"FuseReviews": {
        "display_name": "FuseReviews", "metric": "", "rows": [],
        "absent": [{"model": "m", "cell": "not scored", "reason": "FIC models not cached",
                    "from_summary_stats": False}]}}}
    from seam_repro.analysis.plots import draw_boxes, save_png

    save_png(draw_boxes(rep), tmp_path / "b.png")
    assert (tmp_path / "b.png").read_bytes()[:4] == b"\x89PNG"


# --- README ---------------------------------------------------------------------------------------
def test_readme_dry_run_writes_to_its_own_folder() -> None:
    """Old main's Quickstart wrote the echo dry run into runs/smoke, so `echo` was ranked beside SmolLM2."""
    text = (REPO / "README.md").read_text()
    start = text.index("## Quickstart")
    quick = text[start:text.index("\n## ", start + 1)]
    for line in quick.splitlines():
        if "--backend echo" in line:
            assert "runs/smoke " not in line + " " and "--out runs/dry-run" in line
    assert "seam-repro report runs/smoke " in quick


def test_document_level_bundle_passes_the_seeds_check(tmp_path: Path) -> None:
    """IGCS-style units (<id>#doc<k>) are scored as one line under <id>; seeds/ lists the units."""
    from trust_helpers import echo_run

    from seam_repro.analysis.submit import make_bundle, read_bundle, write_bundle

    run = echo_run(tmp_path, name="igcs-mini")
    write_bundle(make_bundle(run), tmp_path / "b.json")
    ms = read_bundle(tmp_path / "b.json")
    assert any(it.instance_id == "phone-battery" for ds in ms.datasets.values() for it in ds.instances)


def test_merged_shards_keep_the_trust_anchor(tmp_path: Path) -> None:
    from seam_repro.run.replay import ReplayOptions, replay
    from seam_repro.run.shard import merge_run_dirs, parse_shard

    path = smoke_copy(tmp_path)
    for k in range(2):
        replay(load_trusted(path), tmp_path / f"s{k}",
               ReplayOptions(backend="echo", shard=parse_shard(f"{k}/2"), limit=1, progress=False))
    merge_run_dirs([tmp_path / "s0", tmp_path / "s1"], tmp_path / "all")
    assert (tmp_path / "all" / "manifest.json").read_bytes() == (tmp_path / "s0" / "manifest.json").read_bytes()
    [summary] = score_run_dir(tmp_path / "all", fic=False)
    assert json.loads(summary.read_text())["coverage"]["partial"] is True


def test_an_edited_protocol_in_summary_json_is_refused(echo_runs: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    """Editing summary.json's protocol (e.g. limit 1 -> null) would dodge the comparison checks."""
    run = _copy(echo_runs["limited"], tmp_path)
    path = run / "scores" / "echo" / "summary.json"
    s = json.loads(path.read_text())
    s["protocol"]["limit"] = None
    path.write_text(json.dumps(s))
    with pytest.raises(InputError, match=r"summary.json: field 'protocol.limit': is None but run.json"):
        load_inputs([run])


def _cli_any(args: list, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``main()`` with ``args``: its exit status (0 when it returns) and everything it printed."""
    monkeypatch.setattr(sys, "argv", ["seam-repro", *map(str, args)])
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out + out.err


def test_score_after_an_interrupted_replay_is_partial_with_the_resume_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Old main: `score` after an interrupted replay failed with "N prompt(s) have no prediction",
    although the README promised them listed as unscored. Now what is there is scored, the rest is
    listed with its reason, the printed resume command completes the run, and submit/diff keep the
    partial result apart from full runs."""
    import shlex

    manifest = smoke_copy(tmp_path)
    run = tmp_path / "run"
    code, _ = _cli_any(["replay", manifest, "--backend", "echo", "--out", run, "--no-score"], monkeypatch, capsys)
    assert code == 0
    cut = run / "predictions" / "echo" / "MusiQue" / "run_1.jsonl"
    cut.write_text(cut.read_text("utf-8").splitlines(keepends=True)[0], "utf-8")  # as if killed mid-dataset
    (run / "predictions" / "echo" / "SciCo" / "run_2.jsonl").unlink()

    code, out = _cli_any(["score", run, "--no-fic"], monkeypatch, capsys)
    assert code == 0, out
    assert "partial: 33 of 36 instances scored" in out
    assert "MusiQue run 1: 1 of 2 (no prediction" in out and "SciCo run 2: 2 of 2 (no prediction" in out
    resume = out.split("resume with: ")[-1].strip()
    assert resume == "seam-repro " + shlex.join(["replay", str(manifest), "--backend", "echo", "--out", str(run),
                                                  "--no-score"])
    summary = json.loads((run / "scores" / "echo" / "summary.json").read_text("utf-8"))
    assert summary["coverage"]["partial"] and summary["protocol"]["partial"]

    code, out = _cli_any(["submit", run, "--out", tmp_path / "b.json"], monkeypatch, capsys)
    assert code == 0 and "partial bundle: 33 of 36" in out
    assert json.loads((tmp_path / "b.json").read_text("utf-8"))["partial"] is True
    code, out = _cli_any(["diff", tmp_path / "b.json", "--reference", "paper"], monkeypatch, capsys)
    assert code == 3 and "instances: partial (33 of 36 scored)" in out

    code, out = _cli_any(shlex.split(resume)[1:], monkeypatch, capsys)  # the printed command finishes the run
    assert code == 0 and "3 generated" in out, out
    code, out = _cli_any(["score", run, "--no-fic"], monkeypatch, capsys)
    assert code == 0 and "partial" not in out


def test_a_shard_is_scored_partial_naming_the_shard(tmp_path: Path) -> None:
    """Old main refused to score a shard folder ("N prompt(s) have no prediction"); its other
    instances are now listed as outside the shard, not as an interrupted replay."""
    from seam_repro.run.replay import ReplayOptions, replay
    from seam_repro.run.shard import parse_shard

    run = tmp_path / "s0"
    replay(load_trusted(smoke_copy(tmp_path)), run,
           ReplayOptions(backend="echo", shard=parse_shard("0/2"), progress=False))
    [path] = score_run_dir(run, fic=False)
    summary = json.loads(path.read_text("utf-8"))
    assert summary["coverage"]["partial"] and 0 < summary["coverage"]["scored"] < 36
    assert summary["unscored"] and all(u["reason"].startswith("not in shard 0/2") for u in summary["unscored"])
