"""``seam-repro import``: an upstream SEAM predictions folder and a plain JSONL become a run folder
matched to the manifest by prompt hash, scored like a replay; anything that does not match is refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from seam_repro.cli import cli
from seam_repro.errors import InputError
from seam_repro.run.importer import UPSTREAM_ID_KEYS, import_outputs, split_prediction

REPO = Path(__file__).resolve().parents[1]
PROMPTS_DIR = REPO / "manifests" / "fixtures" / "prompts"
MODEL = "meta-llama/Meta-Llama-3-8B-Instruct"
OUTPUTS = {"qa": "{'is_answerable': True, 'answer_content': 'Oreth'} or {'is_answerable': False}",
           "summarization": "The race drew four hundred people.\n\n*Answer*: a fabricated next answer",
           "coreference": "The clusters are [[0, 1], [2, 3", "fic": "The coffee was strong."}


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    config = REPO / "manifests" / "smoke.config.json"
    if not config.is_file() or not PROMPTS_DIR.is_dir():
        pytest.skip("smoke config or fixture prompts not in this checkout")
    tmp = tmp_path_factory.mktemp("m")
    path = tmp / "smoke.json"
    result = CliRunner().invoke(cli, ["sample", str(config), "-o", str(path), "--prompts-dir", str(PROMPTS_DIR)])
    assert result.exit_code == 0, result.output
    from seam_repro.manifest.format import load_manifest
    from seam_repro.manifest.prompts import render_records

    return path, render_records(load_manifest(path), prompts_dir=PROMPTS_DIR, base=path)


def _upstream_dir(root: Path, records: list[dict], edit=None) -> Path:
    files: dict[Path, list[dict]] = {}
    for r in records:
        rec = {UPSTREAM_ID_KEYS[r["dataset"]]: int(r["instance_id"]) if r["instance_id"].isdigit() else r["instance_id"],
               "final_msgs": [{"role": "user", "content": r["prompt"]}], "target": r.get("target"),
               "prediction": "user\n\n" + r["prompt"] + OUTPUTS[r["task"]]}
        if edit:
            rec = edit(r, rec)
        if rec is not None:
            files.setdefault(root / r["dataset"] / "meta-llama" / f"Meta-Llama-3-8B-Instruct_{r['run']}.json",
                             []).append(rec)
    for path, recs in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(recs).replace("/", "\\/"), "utf-8")  # pandas escapes slashes
    return root


def _instance_lines(run: Path) -> dict[tuple, dict]:
    [path] = (run / "scores").rglob("instance_scores.jsonl")
    return {(x["dataset"], x["run"], x["instance_id"]): x for x in map(json.loads, path.read_text().splitlines())}


def test_upstream_folder_and_jsonl_import_then_score(manifest, tmp_path: Path) -> None:
    path, records = manifest
    up = _upstream_dir(tmp_path / "up", records)
    run, n = import_outputs(path, tmp_path / "run", model=MODEL + "@r1", upstream_dir=up, prompts_dir=PROMPTS_DIR)
    assert n == len(records)
    preds = {(r["dataset"], r["run"], r["instance_id"]): r for p in (run / "predictions").rglob("*.jsonl")
             for r in map(json.loads, p.read_text().splitlines())}
    for r in records:
        rec = preds[(r["dataset"], r["run"], r["instance_id"])]
        assert rec["output"] == OUTPUTS[r["task"]] and rec["upstream_prompt_text"] == "user\n\n" + r["prompt"]
        assert rec["prompt_sha256"] == r["prompt_sha256"]
    run_json = json.loads((run / "run.json").read_text())
    assert run_json["models"]["meta-llama__Meta-Llama-3-8B-Instruct"]["backend"]["format"] == "upstream-seam-predictions"
    result = CliRunner().invoke(cli, ["score", str(run), "--no-fic"])
    assert result.exit_code == 0, result.output
    lines = _instance_lines(run)
    bundle = tmp_path / "b.json"
    result = CliRunner().invoke(cli, ["submit", str(run), "--out", str(bundle)])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(cli, ["report", str(bundle), "--out", str(tmp_path / "report")])
    assert result.exit_code == 0, result.output
    mq = next(v for k, v in lines.items() if k[0] == "MusiQue")
    assert mq["details"]["upstream"]["parsed_dict"] is True and mq["details"]["upstream_text"] == "recorded prompt text"

    jl = tmp_path / "outputs.jsonl"
    jl.write_text("".join(json.dumps({"dataset": r["dataset"], "run": r["run"], "instance_id": r["instance_id"],
                                      "output": OUTPUTS[r["task"]], "prompt": r["prompt"]}) + "\n" for r in records))
    result = CliRunner().invoke(cli, ["import", str(path), "--jsonl", str(jl), "--model", MODEL + "@r1",
                                      "--out", str(tmp_path / "run2"), "--prompts-dir", str(PROMPTS_DIR)])
    assert result.exit_code == 0, result.output
    CliRunner().invoke(cli, ["score", str(tmp_path / "run2"), "--no-fic"])
    other = _instance_lines(tmp_path / "run2")
    for key, line in lines.items():  # same continuation: the same corrected scores and the same upstream ones
        assert other[key]["details"]["corrected"]["score"] == line["details"]["corrected"]["score"], key
        assert other[key]["score"] == line["score"], key


@pytest.mark.parametrize("edit,message", [
    (lambda r, rec: {**rec, "final_msgs": [{"role": "user", "content": r["prompt"] + " "}]}, "differs from the manifest"),
    (lambda r, rec: {**rec, UPSTREAM_ID_KEYS[r["dataset"]]: "nope"}, "is not in the manifest"),
    (lambda r, rec: None if r["instance_id"] == "2" else rec, "have no output"),
    (lambda r, rec: {**rec, "prediction": None}, "generated_text"),
])
def test_upstream_folder_that_does_not_match_is_refused(manifest, tmp_path: Path, edit, message) -> None:
    path, records = manifest
    up = _upstream_dir(tmp_path / "up", records, edit)
    with pytest.raises(InputError, match=message):
        import_outputs(path, tmp_path / "run", model=MODEL + "@r1", upstream_dir=up, prompts_dir=PROMPTS_DIR)
    assert not (tmp_path / "run" / "predictions").exists()


def test_jsonl_refusals(manifest, tmp_path: Path) -> None:
    path, records = manifest
    r = records[0]
    base = {"dataset": r["dataset"], "run": r["run"], "instance_id": r["instance_id"], "output": "x"}
    for lines, message in [([base, base], "duplicate"), ([{**base, "prompt_sha256": "0" * 64}], "differs"),
                           ([{**base, "run": 99}], "not in the manifest"), ([{**base, "output": 3}], "not a str")]:
        jl = tmp_path / "o.jsonl"
        jl.write_text("".join(json.dumps(x) + "\n" for x in lines))
        with pytest.raises(InputError, match=message):
            import_outputs(path, tmp_path / "run", model=MODEL + "@r1", jsonl=jl, prompts_dir=PROMPTS_DIR)
    shutil.rmtree(tmp_path / "run", ignore_errors=True)


def test_split_prediction_keeps_the_whole_text() -> None:
    assert split_prediction("[INST] P [/INST] answer", "P") == ("[INST] P [/INST]", " answer", True)
    assert split_prediction("user\nP\nanswer", "P") == ("user\nP\n", "answer", True)
    assert split_prediction("cut prompt answer", "P long") == ("", "cut prompt answer", False)


def test_import_refuses_prompts_that_do_not_hash_to_the_manifest(manifest, tmp_path: Path) -> None:
    """Old main: import rendered prompts from the data given and matched outputs to them without
    checking them against the manifest, so drifted data re-keyed outputs under the manifest's digest."""
    from trust_helpers import forge

    from seam_repro.errors import ManifestError
    from seam_repro.manifest.format import dump_manifest

    path, records = manifest
    m = json.loads(path.read_text())
    inst = m["runs"][0]["instances"][0]
    inst["prompt_sha256"] = "0" * 64
    resealed = tmp_path / "resealed.json"
    resealed.write_text(dump_manifest(forge(m)))
    jsonl = tmp_path / "outputs.jsonl"
    jsonl.write_text("".join(json.dumps({"dataset": r["dataset"], "run": r["run"], "instance_id": r["instance_id"],
                                         "prompt_sha256": r["prompt_sha256"], "output": "x"}) + "\n" for r in records))
    with pytest.raises(ManifestError) as exc:
        import_outputs(resealed, tmp_path / "run", model=MODEL, jsonl=jsonl, prompts_dir=PROMPTS_DIR)
    assert "1 rendered prompt(s) do not match" in str(exc.value).splitlines()[0]
    assert f"{m['runs'][0]['dataset']} run {m['runs'][0]['run']} instance {inst['id']}" in str(exc.value)
    assert not (tmp_path / "run").exists()
