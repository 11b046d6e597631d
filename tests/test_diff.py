"""diff against the reference: hand-computed deltas and bands, exit codes through the real CLI
entry point, and the packaged Table 3 checked against the shared reference file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from test_aggregate import write_scores

from seam_repro.analysis.diff import diff_models, parse_tolerance
from seam_repro.analysis.reference import load_reference
from seam_repro.analysis.submit import load_inputs
from seam_repro.cli import main
from seam_repro.errors import InputError
from seam_repro.manifest.trust import PROTOCOL_FIELDS

SHARED = Path(__file__).resolve().parents[2] / "shared"
LLAMA8 = "meta-llama/Meta-Llama-3-8B-Instruct"
PAPER_PROTOCOL = {**{k: v for k, v in (load_reference("paper").protocol or {}).items() if k in PROTOCOL_FIELDS},
                  "partial": False}
"""A run made under the paper's protocol (hand-made runs state it; real ones get it from `score`)."""


def _run(tmp_path: Path, model: str = LLAMA8, protocol: dict | None = PAPER_PROTOCOL) -> Path:
    # MultiNews runs 20 and 22 -> mean 21, population std 1; paper: Llama-3-8B 19.5 ± 0.9
    write_scores(tmp_path, model, {"MultiNews": {"metric": "rouge_geo", "instances": [
        (0, "a", 20.0, True), (1, "b", 22.0, True)]}}, protocol=protocol)
    return tmp_path


def _cli(args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["seam-repro", *args])
    with pytest.raises(SystemExit) as exc:
        main()
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out + out.err


def test_parse_tolerance() -> None:
    assert parse_tolerance(None).kind == "spread" and parse_tolerance("spread").value == 1.0
    assert (parse_tolerance("2x").kind, parse_tolerance("2x").value) == ("spread", 2.0)
    assert (parse_tolerance("10%").kind, parse_tolerance("10%").value) == ("rel", 10.0)
    assert (parse_tolerance("1.5").kind, parse_tolerance("1.5").value) == ("abs", 1.5)
    with pytest.raises(InputError, match=r"--tolerance: cannot parse 'wide'"):
        parse_tolerance("wide")


def test_delta_and_band_by_hand(tmp_path: Path) -> None:
    models = load_inputs([_run(tmp_path)])
    ref = load_reference("paper")
    row = diff_models(models, ref, parse_tolerance(None)).rows[0]
    assert row.reference_model == "Llama-3-8B"
    assert (row.mean, row.std, row.ref_mean, row.ref_std) == (21.0, 1.0, 19.5, 0.9)
    assert row.delta == pytest.approx(1.5)
    assert row.allowed == pytest.approx(0.9 + 1.0 + 0.05) and row.status == "within"
    rep = diff_models(models, ref, parse_tolerance("1"))
    assert rep.rows[0].allowed == pytest.approx(1.05) and rep.rows[0].status == "outside" and rep.exit_code == 1
    assert diff_models(models, ref, parse_tolerance("10%")).rows[0].allowed == pytest.approx(1.95 + 0.05)
    assert diff_models(models, ref, parse_tolerance("0.5x")).rows[0].allowed == pytest.approx(0.95 + 0.05)


def test_missing_run_is_named_in_the_row(tmp_path: Path) -> None:
    """A run without a score: the row compares the runs present and says which one is missing."""
    sdir = write_scores(tmp_path, LLAMA8, {"MultiNews": {"metric": "rouge_geo", "instances": [
        (0, "a", 20.0, True), (1, "b", 22.0, True), (2, "c", None, True)]}}, protocol=PAPER_PROTOCOL)
    summary = json.loads((sdir / "summary.json").read_text())
    summary["datasets"]["MultiNews"].update(runs={"0": 20.0, "1": 22.0, "2": None}, reason="FIC model unavailable")
    (sdir / "summary.json").write_text(json.dumps(summary))
    row = diff_models(load_inputs([tmp_path]), load_reference("paper"), parse_tolerance(None)).rows[0]
    assert (row.n_runs, row.mean, row.std, row.status) == (2, 21.0, 1.0, "within")
    assert row.note == "run(s) 2 have no score (FIC model unavailable)"


def test_unknown_model_and_na_cells_are_not_failures(tmp_path: Path) -> None:
    write_scores(tmp_path, "someone/new-model", {"ECB": {"metric": "conll_f1", "runs": {0: 5.0},
                                                          "instances": [(0, "t", None, True)]}}, protocol=PAPER_PROTOCOL)
    ref = load_reference("paper")
    rep = diff_models(load_inputs([tmp_path]), ref, parse_tolerance(None))
    # old main: exit 0 with "0 within, 0 outside, 1 without reference": a CI job passed having compared nothing
    assert rep.rows[0].status == "no-reference" and "--as NAME" in rep.rows[0].note and rep.exit_code == 4
    rep = diff_models(load_inputs([tmp_path]), ref, parse_tolerance(None), as_name="Gemma-7B")
    assert rep.rows[0].status == "no-reference" and rep.rows[0].note == "NA in the paper"
    with pytest.raises(InputError, match="--as: 'Llama-9B' is not a reference model"):
        diff_models(load_inputs([tmp_path]), ref, parse_tolerance(None), as_name="Llama-9B")


def test_cli_exit_codes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(tmp_path / "run")
    code, out = _cli(["diff", str(run), "--reference", "paper", "--json", str(tmp_path / "d.json")], monkeypatch, capsys)
    assert code == 0 and "| Llama-3-8B | MultiNews | 2 | 21.00 ± 1.00 | 19.5 ± 0.9 | +1.50 | 1.95 | within |" in out
    assert json.loads((tmp_path / "d.json").read_text())["rows"][0]["status"] == "within"
    code, out = _cli(["diff", str(run), "--tolerance", "1"], monkeypatch, capsys)
    assert code == 1 and "outside" in out
    code, out = _cli(["diff", str(run), "--tolerance", "wide"], monkeypatch, capsys)
    assert code == 2 and "error: --tolerance: cannot parse 'wide'" in out
    bad = tmp_path / "bad"
    (bad / "scores" / "m").mkdir(parents=True)
    (bad / "scores" / "m" / "summary.json").write_text("{")
    (bad / "scores" / "m" / "instance_scores.jsonl").write_text("")
    code, out = _cli(["diff", str(bad)], monkeypatch, capsys)
    assert code == 2 and "summary.json: not valid JSON" in out
    unknown = _run(tmp_path / "unknown", protocol=None)  # scored without a protocol record
    code, out = _cli(["diff", str(unknown)], monkeypatch, capsys)
    assert code == 3 and "protocol: unknown" in out and "exit 3" in out
    code, out = _cli(["diff", str(unknown), "--allow-protocol-mismatch"], monkeypatch, capsys)
    assert code == 0 and "allowed by --allow-protocol-mismatch" in out


def test_protocol_fields_named_and_exit_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A --limit 1 run of a 3-run manifest with 48 new tokens is not the paper's protocol: diff names
    each differing field and exits 3 (old main: compared and exited 0/1)."""
    smoke = {**PAPER_PROTOCOL, "protocol_digest": "d" * 64, "runs": 3, "limit": 1, "max_new_tokens": 48,
             "prompt_path": "raw", "partial": True, "instances": 36, "scored_instances": 18}
    run = _run(tmp_path / "run", protocol=smoke)
    code, out = _cli(["diff", str(run), "--as", "Llama-3-8B"], monkeypatch, capsys)
    assert code == 3
    for name in ("protocol_digest", "runs: 3 vs 10", "limit: 1 vs None", "max_new_tokens: 48 vs 500",
                 "prompt_path: 'raw' vs 'upstream'", "partial (18 of 36 scored)"):
        assert name in out, name
    code, _ = _cli(["diff", str(run), "--as", "Llama-3-8B", "--allow-protocol-mismatch"], monkeypatch, capsys)
    assert code == 0


def test_packaged_table_matches_shared_reference() -> None:
    src = SHARED / "seam" / "reference" / "paper_table3.json"
    if not src.is_file():
        pytest.skip("shared reference not present")
    raw = json.loads(src.read_text())
    ref = load_reference("paper")
    assert {n: m["hf_id"] for n, m in raw["models"].items()} == ref.models
    names = {"OpenAsp": "OpenASP", "MuSiQue": "MusiQue", "ECB+": "ECB"}
    assert len(raw["datasets"]) == len(ref.datasets) == 6
    for pname, ds in raw["datasets"].items():
        mine = ref.datasets[names.get(pname, pname)]
        assert mine.paper_name == pname
        got = [(r.rank, r.model, r.mean, r.std, r.dominance_over_next) for r in mine.rows]
        assert got == [(r["rank"], r["model"], r["mean"], r["std"], r["dominance_over_next"]) for r in ds["rows"]]


def test_bad_reference_file(tmp_path: Path) -> None:
    p = tmp_path / "ref.json"
    p.write_text(json.dumps({"models": {"A": {"hf_id": "a/a"}}, "datasets": {"ECB": {"rows": [
        {"model": "A", "mean": 1.0, "std": None}]}}}))
    with pytest.raises(InputError, match=r"record datasets.ECB.rows\[0\]: field 'std': mean and std must both"):
        load_reference(p)
    with pytest.raises(InputError, match="reference not found"):
        load_reference(tmp_path / "nope.json")


def test_not_scored_rows_carry_one_short_reason(tmp_path: Path) -> None:
    """Old main put the Hub library's whole exception into each not-scored row."""
    from seam_repro.analysis.diff import brief_reason, format_diff

    hub = ("We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find them in the "
           "cached files.")
    cached = ("FIC faithfulness model google/flan-t5-xxl@ae7c9136adc7555eeccc78cdd960dfd60fb346ce is not available "
              f"(not in the local cache; pass --fic-download to fetch it): {hub}")
    assert brief_reason(cached, "runs/x") == ("FIC faithfulness model google/flan-t5-xxl is not in the local cache; "
                                             "to score it: `seam-repro score runs/x --fic-download` (~45 GB download).")
    online = cached.replace("not in the local cache; pass --fic-download to fetch it", "offline or not cached")
    assert brief_reason(online, "runs/x").startswith("FIC faithfulness model google/flan-t5-xxl is unavailable "
                                                     "(offline or not cached); to score it online: `seam-repro score "
                                                     "runs/x --fic-download`")
    assert brief_reason("no predictions for this dataset\nsecond line") == "no predictions for this dataset"
    sdir = write_scores(tmp_path, LLAMA8, {"MultiNews": {"metric": "rouge_geo", "instances": [(0, "a", 20.0, True)]},
                                           "FuseReviews": {"metric": "fic_f1", "runs": {0: None},
                                                           "instances": [(0, "f", None, True)]}},
                        protocol=PAPER_PROTOCOL)
    summary = json.loads((sdir / "summary.json").read_text())
    summary["datasets"]["FuseReviews"]["reason"] = cached
    (sdir / "summary.json").write_text(json.dumps(summary))
    out = format_diff(diff_models(load_inputs([tmp_path]), load_reference("paper"), parse_tolerance(None)))
    assert hub not in out and out.count(f"`seam-repro score {tmp_path} --fic-download`") == 1
