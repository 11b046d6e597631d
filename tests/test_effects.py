"""Effects of recorded run-level choices on the score (``level_effect`` in
seam_repro.analysis.sensitivity): planted effects recovered on simulated i.i.d. studies, nominal
size without an effect, agreement with statsmodels' ANOVA and hand formulas, and end to end on an
i.i.d. echo replay of the smoke fixtures."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

pytest.importorskip("statsmodels")  # the `sensitivity` extra

from seam_repro.analysis.sensitivity.effects import level_effect  # noqa: E402
from seam_repro.cli import cli  # noqa: E402
from seam_repro.errors import SeamReproError  # noqa: E402

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_sensitivity import effect_calibration, gold_calibration  # noqa: E402


def test_planted_paraphrase_effect_is_recovered_and_the_test_keeps_its_size() -> None:
    # 300 simulated i.i.d. studies (10 runs, 4 paraphrases, a run-level shift from each run's other
    # draws); the fuller check is `python benchmarks/bench_sensitivity.py --effects`.
    null = effect_calibration(300, np.zeros(4))
    planted = effect_calibration(300, np.array([3.0, -1.5, 0.0, -1.5]))
    assert null["tested"] > 250 and planted["tested"] > 250  # the rest drew every level once: no test
    assert 0.02 <= null["rejection_rate"] <= 0.085, null  # nominal 5 %, Monte-Carlo s.e. ~1.3 %
    assert planted["rejection_rate"] > 0.7, planted
    for r in (null, planted):
        assert 0.92 <= r["coverage"] <= 0.98, r  # per-level intervals cover the planted deviations


def test_planted_gold_position_slope_is_recovered_and_the_test_keeps_its_size() -> None:
    # 150 simulated studies (20 instances x 10 runs, one gold document among 10, a new order per run)
    null, planted = gold_calibration(150, 0.0), gold_calibration(150, -4.0)
    assert 0.01 <= null["rejection_rate"] <= 0.1, null  # nominal 5 %, Monte-Carlo s.e. ~1.8 %
    assert planted["rejection_rate"] > 0.9, planted
    for r in (null, planted):
        assert 0.89 <= r["coverage"] <= 0.99, r


def test_f_test_and_intervals_equal_statsmodels_anova_and_hand_formulas() -> None:
    import statsmodels.formula.api as smf
    from scipy import stats
    from statsmodels.stats.anova import anova_lm

    scores = {0: 10.0, 1: 12.5, 2: 9.0, 3: 14.0, 4: 11.0, 5: 8.5, 6: 13.0}
    level_of = {0: 2, 1: 0, 2: 2, 3: 0, 4: 1, 5: 2, 6: 1}
    eff = level_effect(scores, level_of)
    df = pd.DataFrame({"score": [scores[r] for r in scores], "level": [level_of[r] for r in scores]})
    table = anova_lm(smf.ols("score ~ C(level)", data=df).fit())  # treatment coding + intercept: another route
    assert eff["F"] == pytest.approx(table.loc["C(level)", "F"], rel=1e-10)
    assert eff["p_value"] == pytest.approx(table.loc["C(level)", "PR(>F)"], rel=1e-10)
    assert eff["df"] == [2, 4]
    # hand: level means 13.25, 12, 9.1666..; deviation from their mean; Var = s2 * sum_l c_l^2 / n_l
    means = df.groupby("level")["score"].mean()
    n = df.groupby("level").size()
    s2 = ((df["score"] - df["level"].map(means)) ** 2).sum() / 4
    t = stats.t.ppf(0.975, 4)
    for j in range(3):
        c = np.full(3, -1 / 3)
        c[j] += 1
        dev = float(c @ means.to_numpy())
        half = t * np.sqrt(s2 * float((c**2 / n.to_numpy()).sum()))
        assert eff["deviation"][str(j)] == pytest.approx(dev, rel=1e-10)
        assert eff["deviation_ci95"][str(j)] == pytest.approx([dev - half, dev + half], rel=1e-10)
    assert eff["n_runs_per_level"] == {"0": 2, "1": 2, "2": 3}


def test_levels_seen_once_or_a_single_level_say_so_instead_of_a_p_value() -> None:
    once = level_effect({0: 1.0, 1: 2.0, 2: 4.0}, {0: 0, 1: 1, 2: 2})
    assert "p_value" not in once and "seen in one run only" in once["skipped"]
    assert once["n_runs_per_level"] == {"0": 1, "1": 1, "2": 1}
    single = level_effect({0: 1.0, 1: 2.0}, {0: 3, 1: 3})
    assert "p_value" not in single and single["skipped"].startswith("one level (3) over 2")


def _gold_text_positions(prompt: str, gold_texts: set[str]) -> float | None:
    """Relative place of the first gold paragraph among the test block's documents, read from the
    rendered prompt (independent of the kit's document-order bookkeeping)."""
    import re

    block = prompt[prompt.rindex("*Question*:"):]
    docs = re.findall(r"Document \d+: ```(.*?)```", block, flags=re.S)
    hits = [j for j, d in enumerate(docs) if d in gold_texts]
    return hits[0] / (len(docs) - 1) if hits else None


@pytest.fixture(scope="module")
def iid_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """10 i.i.d. runs of the smoke-paraphrase config (its design removed), replayed with echo and scored."""
    tmp = tmp_path_factory.mktemp("iid")
    config = json.loads((ROOT / "manifests" / "smoke-paraphrase.config.json").read_text())
    del config["design"]  # SEAM's i.i.d. runs: every factor redrawn each run
    config["num_different_runs"] = 10
    config["datasets"] = [{**d, "path": str(ROOT / "manifests" / d["path"])} for d in config["datasets"]]
    (tmp / "iid.config.json").write_text(json.dumps(config))
    run_dir = tmp / "runs" / "iid"
    for args in (["sample", str(tmp / "iid.config.json"), "-o", str(tmp / "iid.json"),
                  "--prompts-dir", str(ROOT / "manifests" / "fixtures" / "prompts")],
                 ["replay", str(tmp / "iid.json"), "--out", str(run_dir), "--backend", "echo"],
                 ["score", str(run_dir), "--no-fic"]):
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 0, (args, res.output, res.exception)
    return run_dir


def test_iid_echo_replay_of_the_smoke_fixtures_reports_paraphrase_and_gold_position_effects(
        iid_run: Path, tmp_path: Path) -> None:
    import statsmodels.formula.api as smf

    run_dir, out, out_gold = iid_run, tmp_path / "report", tmp_path / "report-gold"
    for args in (["sensitivity", str(run_dir), "--out", str(out), "--bootstrap", "0"],
                 ["sensitivity", str(run_dir), "--out", str(out_gold), "--bootstrap", "0",
                  "--data-dir", str(ROOT / "manifests" / "fixtures")]):
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 0, (args, res.output, res.exception)
    result = json.loads((out_gold / "sensitivity.json").read_text())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    summary = json.loads((run_dir / "scores" / "echo" / "summary.json").read_text())["datasets"]
    effects = result["designs"][0]["effects"]
    tested = 0
    for dataset in ("MultiNews", "MusiQue", "OpenASP"):
        para = {r["run"]: r["paraphrase_index"] for r in manifest["runs"] if r["dataset"] == dataset}
        eff = effects[dataset]["echo"]["factors"]["paraphrase"]
        counts = pd.Series(list(para.values())).value_counts()
        assert eff["n_runs_per_level"] == {str(k): int(v) for k, v in counts.items()}
        assert "one level (2)" in effects[dataset]["echo"]["factors"]["n_demonstrations"]["skipped"]
        if "deviation" in eff:  # independent of the kit's reading: the level means of summary.json's run scores
            runs = pd.DataFrame({"score": [summary[dataset]["runs"][str(r)] for r in para], "level": list(para.values())})
            means = runs.groupby("level")["score"].mean()
            for lv, m in means.items():
                assert eff["deviation"][str(lv)] == pytest.approx(m - means.mean(), abs=1e-9)
            assert 0 <= eff["p_value"] <= eff["p_holm"] <= 1
            tested += 1
    assert tested >= 1
    # gold position, refitted from the rendered prompts and the fixture's is_supporting flags
    gold_texts = {p["paragraph_text"] for line in (ROOT / "manifests" / "fixtures" / "musique" / "val.jsonl").read_text().splitlines()
                  for p in json.loads(line)["paragraphs"] if p["is_supporting"]}
    prompts = {(x["instance_id"], x["run"]): x["prompt"] for x in map(json.loads, (run_dir / "prompts.jsonl").read_text().splitlines())
               if x["dataset"] == "MusiQue"}
    scores = [x for x in map(json.loads, (run_dir / "scores" / "echo" / "instance_scores.jsonl").read_text().splitlines())
              if x["dataset"] == "MusiQue" and x["score"] is not None]
    df = pd.DataFrame({"score": [x["score"] for x in scores], "instance": [x["instance_id"] for x in scores],
                       "run": [x["run"] for x in scores],
                       "position": [_gold_text_positions(prompts[(x["instance_id"], x["run"])], gold_texts) for x in scores]})
    df = df.dropna()
    fit = smf.ols("score ~ C(instance) + C(run) + position", data=df).fit(
        cov_type="cluster", cov_kwds={"groups": pd.factorize(df["instance"])[0]}, use_t=True)
    gp = effects["MusiQue"]["echo"]["gold_position"]
    assert gp["n_scores"] == len(df) and gp["n_instances"] == df["instance"].nunique()
    assert gp["slope"] == pytest.approx(fit.params["position"], rel=1e-9)
    assert gp["slope_ci95"] == pytest.approx(list(fit.conf_int().loc["position"]), rel=1e-9)
    assert gp["p_value"] == pytest.approx(fit.pvalues["position"], rel=1e-9)
    md_gold = (out_gold / "sensitivity.md").read_text()
    assert "| echo | instruction paraphrase | 0: " in md_gold
    assert "| echo | first gold document's position (0 first, 1 last) | slope: " in md_gold
    # a dataset that marks no gold documents says so in one line; without --data-dir every dataset does
    for dataset in ("MultiNews", "OpenASP"):
        assert md_gold.count(f"- gold-document position: {dataset}'s data marks no gold documents\n") == 1
    assert (out / "sensitivity.md").read_text().count("- gold-document position: not estimated;") == 3


def test_data_dir_that_differs_from_the_manifest_is_one_line_and_writes_nothing(iid_run: Path, tmp_path: Path) -> None:
    import shutil

    data = tmp_path / "data"
    shutil.copytree(ROOT / "manifests" / "fixtures", data, ignore=shutil.ignore_patterns("prompts", "igcs", "zeroscrolls"))
    with (data / "musique" / "val.jsonl").open("a") as fh:
        fh.write("\n")
    res = CliRunner().invoke(cli, ["sensitivity", str(iid_run), "--out", str(tmp_path / "o"), "--bootstrap", "0",
                                   "--data-dir", str(data)])
    assert res.exit_code != 0
    assert isinstance(res.exception, SeamReproError)
    assert "val.jsonl" in str(res.exception) and "\n" not in str(res.exception)
    assert not (tmp_path / "o").exists()


def test_data_dir_without_a_dataset_says_so_in_one_line_and_estimates_the_others(iid_run: Path, tmp_path: Path) -> None:
    import shutil

    data = tmp_path / "data"
    shutil.copytree(ROOT / "manifests" / "fixtures" / "musique", data / "musique")
    out = tmp_path / "o"
    res = CliRunner().invoke(cli, ["sensitivity", str(iid_run), "--out", str(out), "--bootstrap", "0",
                                   "--data-dir", str(data)])
    assert res.exit_code == 0, (res.output, res.exception)
    md = (out / "sensitivity.md").read_text()
    assert md.count(f"- gold-document position: not estimated; --data-dir {data} has no MultiNews data\n") == 1
    assert "| echo | first gold document's position (0 first, 1 last) | slope: " in md
