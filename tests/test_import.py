"""``seam-repro import``: an upstream SEAM predictions folder and a plain JSONL become a run folder
matched to the manifest by prompt hash, scored like a replay; anything that does not match is refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from seam_repro.cli import cli, main
from seam_repro.errors import InputError
from seam_repro.hashing import sha256_text
from seam_repro.run.importer import (
    UPSTREAM_ID_KEYS,
    clean_up_tokenization,
    import_outputs,
    source_id,
    split_prediction,
)

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
    from seam_repro.manifest.prompts import render_records
    from seam_repro.manifest.trust import load_trusted

    return path, list(render_records(load_trusted(path), prompts_dir=PROMPTS_DIR))


def _upstream_dir(root: Path, records: list[dict], edit=None) -> Path:
    files: dict[Path, list[dict]] = {}
    for r in records:
        raw = source_id(r["instance_id"])  # upstream's id: MuSiQue-Full twins share one
        rec = {UPSTREAM_ID_KEYS[r["dataset"]]: int(raw) if raw.isdigit() else raw,
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
    done = import_outputs(path, tmp_path / "run", model=MODEL + "@r1", upstream_dir=up, prompts_dir=PROMPTS_DIR)
    run = done.folder
    assert (done.imported, done.new, done.unchanged, done.replaced) == (len(records), len(records), 0, 0)
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
    assert split_prediction("[INST] P [/INST] answer", "P") == ("[INST] P [/INST]", " answer", "as given")
    assert split_prediction("user\nP\nanswer", "P") == ("user\nP\n", "answer", "as given")
    assert split_prediction("cut prompt answer", "P long") == ("", "cut prompt answer", None)


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


# --- real upstream folders: Llama-3's decoded template, MuSiQue-Full twins, all six datasets -------------
LLAMA3_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
    "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")
"""Meta-Llama-3-8B-Instruct's chat template (tokenizer_config.json): the user message is trimmed."""


class Llama3Style:
    """Upstream's generation path (``model_wrappers/hf_pipline_wrap.py``, transformers 4.x) with a
    small byte-level BPE tokenizer carrying Llama-3's special tokens, chat template and
    ``clean_up_tokenization_spaces=True``: the prediction is made by the library, not by the rules
    the importer inverts."""

    def __init__(self, texts: list[str]):
        transformers = pytest.importorskip("transformers")
        tokenizers = pytest.importorskip("tokenizers")
        tok = tokenizers.Tokenizer(tokenizers.models.BPE())
        tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = tokenizers.decoders.ByteLevel()
        tok.train_from_iterator(texts, tokenizers.trainers.BpeTrainer(
            vocab_size=600, initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
            special_tokens=["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]))
        # transformers 5 skips the clean-up for BPE unless forced; 4.x (upstream's) applied it
        self.tok = transformers.PreTrainedTokenizerFast(
            tokenizer_object=tok, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>",
            clean_up_tokenization_spaces=True, clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output=True)
        self.tok.chat_template = LLAMA3_TEMPLATE
        if self.tok.decode(self.tok(" a , b .", add_special_tokens=False)["input_ids"]) != " a, b.":
            pytest.skip("this transformers does not apply clean_up_tokenization_spaces")

    def prediction(self, prompt: str, raw: str, max_length: int = 100_000) -> tuple[str, str]:
        """(upstream's ``generated_text``, its continuation part) for a model that generated ``raw``."""
        enc = self.tok.apply_chat_template([{"role": "user", "content": prompt}], truncation=True, max_length=max_length)
        ids = enc["input_ids"] if hasattr(enc, "keys") else enc
        [decoded_input] = self.tok.batch_decode([ids], skip_special_tokens=True)
        # TextGenerationPipeline (4.x): text = decode(all ids); generated_text = prompt_text + text[len(decode(prompt ids)):]
        prompt_ids = self.tok(decoded_input)["input_ids"]
        text = self.tok.decode(prompt_ids + self.tok(raw, add_special_tokens=False)["input_ids"], skip_special_tokens=True)
        continuation = text[len(self.tok.decode(prompt_ids, skip_special_tokens=True)):]
        return decoded_input + continuation, continuation


def _raw_output(r: dict, i: int) -> str:
    """What a model might generate for record ``r`` (spaced as a tokenizer clean-up changes it)."""
    t = r["target"]
    if r["task"] == "qa":
        return [f" {{'is_answerable': True, 'answer_content': '{t['answer_content']}'}}",
                " I do n't know . {'is_answerable': False, 'answer_content': ''}",
                f" The answer is {t['answer_content']} , it 's clear ."][i % 3]
    if r["task"] == "summarization":
        text = " " + t.replace(".", " .").replace(",", " ,")
        return [text, text + "\n\n*Instructions*: a fabricated next example ?", " They 've said it 's over !"][i % 3]
    if r["task"] == "coreference":
        clusters = [c for c in t if len(c) > 1] or t
        return [f" {clusters}", f" The clusters are {clusters[:1]} , {clusters[1:]}", " [[1, 2], [3"][i % 3]
    return [" " + t["highlights_concat"].replace(".", " ."), " It 's a good place , they 're friendly .",
            ""][i % 3]


@pytest.fixture(scope="module")
def llama3(manifest) -> Llama3Style:
    _, records = manifest
    return Llama3Style([r["prompt"] for r in records] + [_raw_output(r, i) for i, r in enumerate(records)])


def _layout(root: Path, records: list[dict], predictions: dict[tuple, str]) -> Path:
    """``predictions`` in upstream's folder layout and file format (pandas records, escaped slashes)."""
    return _upstream_dir(root, records, lambda r, rec: {**rec, "prediction": predictions[_key(r)]})


def _key(r: dict) -> tuple[str, int, str]:
    return (r["dataset"], r["run"], r["instance_id"])


def _stored(run: Path) -> dict[tuple, dict]:
    return {_key(x): x for p in (run / "predictions").rglob("*.jsonl") for x in map(json.loads, p.read_text().splitlines())}


def test_clean_up_rules_are_transformers_own() -> None:
    transformers = pytest.importorskip("transformers")
    text = "a . b ? c ! d , e ' f n't g 'm h 's i 've j 're k  . l"
    assert clean_up_tokenization(text) == transformers.PreTrainedTokenizerBase.clean_up_tokenization(None, text)


def test_llama3_style_predictions_split_at_the_rendered_prompt(manifest, llama3, tmp_path: Path) -> None:
    """Old main: the raw prompt is not in a Llama-3 prediction (trimmed, spaces cleaned up), so the
    whole prediction, prompt included, became the output that the corrected profile scored."""
    path, records = manifest
    made = {_key(r): llama3.prediction(r["prompt"], _raw_output(r, i)) for i, r in enumerate(records)}
    unseen = sum(r["prompt"] not in made[_key(r)][0] for r in records)
    assert unseen >= len(records) // 3
    run = import_outputs(path, tmp_path / "run", model=MODEL, upstream_dir=_layout(tmp_path / "up", records,
                         {k: v[0] for k, v in made.items()}), prompts_dir=PROMPTS_DIR).folder
    stored = _stored(run)
    for key, (prediction, continuation) in made.items():
        # the prompt's trailing space and the answer's leading one are the same character once trimmed:
        # it may land on either side (both profiles strip it)
        assert stored[key]["output"].lstrip() == continuation.lstrip(), key
        assert stored[key]["upstream_prompt_text"] + stored[key]["output"] == prediction  # upstream profile: exact
    backend = json.loads((run / "run.json").read_text())["models"]["meta-llama__Meta-Llama-3-8B-Instruct"]["backend"]
    assert sum(backend["prompt_rendering"].values()) == len(records)
    assert backend["prompt_rendering"]["as given"] == len(records) - unseen
    assert backend["prompt_rendering"]["template trim + tokenizer cleanup"] > 0


def test_predictions_of_truncated_prompts_are_refused_counted(manifest, llama3, tmp_path: Path) -> None:
    """Prompts truncated to the window (upstream's ``max_length``) leave no way to tell prompt from
    answer: refused in one line with the count, nothing written (old main scored prompt text)."""
    path, records = manifest
    lengths = sorted(len(llama3.tok.apply_chat_template([{"role": "user", "content": r["prompt"]}])["input_ids"])
                     for r in records)
    cut = lengths[len(lengths) // 2]
    preds = {_key(r): llama3.prediction(r["prompt"], _raw_output(r, i), max_length=cut)[0] for i, r in enumerate(records)}
    n_cut = sum(llama3.prediction(r["prompt"], "", max_length=cut) != llama3.prediction(r["prompt"], "") for r in records)
    assert 0 < n_cut < len(records)
    with pytest.raises(InputError) as exc:
        import_outputs(path, tmp_path / "run", model=MODEL, upstream_dir=_layout(tmp_path / "up", records, preds),
                       prompts_dir=PROMPTS_DIR)
    message = str(exc.value)
    assert "\n" not in message and f"{n_cut} of {len(records)} predictions do not hold their prompt" in message
    assert not (tmp_path / "run").exists()


class TextFic:
    """FIC stand-in whose score depends on the response text, so a different extraction shows."""

    def score(self, prediction: str, target: dict) -> object:
        from seam_repro.metrics.fic import FicResult

        f = int(sha256_text(prediction)[:4], 16) / 65535
        return FicResult(f, 1 - f, 100 * 2 * f * (1 - f))

    def version(self) -> str:
        return "text-fake"


def _scored(run: Path, out: Path, profile: str) -> tuple[dict[tuple, dict], dict]:
    from seam_repro.scoring.loop import score_run_dir

    [summary] = score_run_dir(run, out_dir=out, profile=profile, fic_factory=TextFic)
    lines = {_key(x): x for x in map(json.loads, (summary.parent / "instance_scores.jsonl").read_text().splitlines())}
    for line in lines.values():
        line["details"].pop("upstream_text", None)  # names where upstream's text came from: differs by design
    return lines, json.loads(summary.read_text())["datasets"]


def test_upstream_folder_of_six_datasets_scores_as_the_same_outputs_replayed(manifest, llama3, tmp_path: Path) -> None:
    """Done-when of issue 28: outputs replayed through the kit (a backend returning them) and the same
    outputs as upstream's Llama-3 files (decoded template, MuSiQue-Full twins under one id) score
    identically, instance for instance and run for run, in both profiles."""
    from seam_repro.config import GenerationSettings
    from seam_repro.generate.base import EchoBackend, GenerationResult
    from seam_repro.manifest.format import load_manifest
    from seam_repro.run.replay import run_generation

    path, records = manifest
    assert {r["dataset"] for r in records} == set(UPSTREAM_ID_KEYS)
    assert any(r["instance_id"].endswith("#unanswerable") and r["instance_id"].split("#")[0] in
               {x["instance_id"] for x in records if x["run"] == r["run"]} for r in records)  # twins in one run
    made = {_key(r): llama3.prediction(r["prompt"], _raw_output(r, i)) for i, r in enumerate(records)}

    class Canned(EchoBackend):
        def generate(self, requests, settings):  # type: ignore[no-untyped-def]
            return [GenerationResult(made[q.key][1], sha256_text(q.prompt), 0, 0) for q in requests]

    manifest_obj = load_manifest(path)
    settings = GenerationSettings.from_manifest(manifest_obj["config"]["generation"], source=str(path))
    run_generation(records, Canned(model_id=MODEL, revision="r1"), settings, tmp_path / "replayed", manifest_obj,
                   progress=False)
    imported = import_outputs(path, tmp_path / "imported", model=MODEL + "@r1", prompts_dir=PROMPTS_DIR,
                              upstream_dir=_layout(tmp_path / "up", records, {k: v[0] for k, v in made.items()})).folder
    for profile in ("upstream", "seam-repro-1"):
        want, want_runs = _scored(tmp_path / "replayed", tmp_path / f"s_r_{profile}", profile)
        got, got_runs = _scored(imported, tmp_path / f"s_i_{profile}", profile)
        assert set(got) == set(want) == {_key(r) for r in records}
        for key in want:
            assert got[key] == want[key], (profile, key)
        assert got_runs == want_runs, profile
        scores = [x["score"] for x in want.values() if x["score"] is not None]
        assert len(set(scores)) > 5  # the comparison is not of zeros


def test_musique_full_twins_are_told_apart_by_their_prompt(manifest, tmp_path: Path) -> None:
    """Old main keyed on the raw id: upstream's twin records (one id) were refused as a duplicate,
    or as "not in the manifest" where only the unanswerable twin was drawn."""
    path, records = manifest
    twins = [r for r in records if r["dataset"] == "MusiQue" and r["run"] == 2]
    assert sorted(r["instance_id"] for r in twins) == ["2hop__301_402", "2hop__301_402#unanswerable"]

    def tagged(r: dict, rec: dict) -> dict:
        return {**rec, "prediction": rec["prediction"] + " " + r["instance_id"]}

    run = import_outputs(path, tmp_path / "run", model=MODEL, upstream_dir=_upstream_dir(tmp_path / "up", records, tagged),
                         prompts_dir=PROMPTS_DIR).folder
    stored = _stored(run)
    for r in records:
        assert stored[_key(r)]["output"].endswith(" " + r["instance_id"]), _key(r)
    # the JSONL form: a source id with the prompt is resolved the same way; without it, ambiguity is refused
    base = [{"dataset": r["dataset"], "run": r["run"], "instance_id": source_id(r["instance_id"]),
             "output": r["instance_id"], "prompt": r["prompt"]} for r in twins]
    jl = tmp_path / "twins.jsonl"
    jl.write_text("".join(json.dumps(x) + "\n" for x in base))
    run2 = import_outputs(path, tmp_path / "run2", model=MODEL, jsonl=jl, prompts_dir=PROMPTS_DIR).folder
    assert {k[2]: v["output"] for k, v in _stored(run2).items()} == {r["instance_id"]: r["instance_id"] for r in twins}
    jl.write_text("".join(json.dumps({k: v for k, v in x.items() if k != "prompt"}) + "\n" for x in base))
    with pytest.raises(InputError, match="duplicate output for .*2hop__301_402.*2 instances share this source id"):
        import_outputs(path, tmp_path / "run3", model=MODEL, jsonl=jl, prompts_dir=PROMPTS_DIR)
    lone = next(r for r in records if r["dataset"] == "MusiQue" and r["run"] == 1 and "#" in r["instance_id"])
    # without the prompt, a source id whose only instance in the run is the unanswerable twin is not guessed
    jl.write_text(json.dumps({k: v for k, v in base[0].items() if k != "prompt"} | {"run": 1}) + "\n")
    with pytest.raises(InputError, match=f"is the source id of {lone['instance_id']}, not an instance id"):
        import_outputs(path, tmp_path / "run5", model=MODEL, jsonl=jl, prompts_dir=PROMPTS_DIR)
    other = next(r for r in records if r["dataset"] == "MusiQue" and r["instance_id"] == "3hop1__55_66_77")
    jl.write_text(json.dumps({**base[0], "prompt": other["prompt"]}) + "\n")
    with pytest.raises(InputError, match="none of the manifest's prompts of the 2 instances"):
        import_outputs(path, tmp_path / "run4", model=MODEL, jsonl=jl, prompts_dir=PROMPTS_DIR)


def _cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of the console entry point, as a shell sees them."""
    capsys.readouterr()
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("text", ["", "\n", "  \n\n \t\n"])
def test_empty_jsonl_is_refused(manifest, tmp_path: Path, capsys, text: str) -> None:
    """Old main made an empty run and exited 0."""
    path, _ = manifest
    jl = tmp_path / "o.jsonl"
    jl.write_text(text)
    code, _, err = _cli(capsys, "import", path, "--jsonl", jl, "--model", MODEL, "--out", tmp_path / "run",
                        "--prompts-dir", PROMPTS_DIR)
    assert code == 2 and f"{jl}: holds no outputs" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_upstream_file_without_records_is_refused(manifest, tmp_path: Path) -> None:
    path, records = manifest
    up = _upstream_dir(tmp_path / "up", [r for r in records if r["dataset"] != "ECB"])
    (up / "ECB" / "meta-llama").mkdir(parents=True)
    (up / "ECB" / "meta-llama" / "Meta-Llama-3-8B-Instruct_0.json").write_text("[]")
    with pytest.raises(InputError, match="Meta-Llama-3-8B-Instruct_0.json: holds no records"):
        import_outputs(path, tmp_path / "run", model=MODEL, upstream_dir=up, prompts_dir=PROMPTS_DIR)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("where", ["dataset", "org", "file", "dangling"])
def test_links_that_lead_nowhere_are_refused(manifest, tmp_path: Path, capsys, where: str) -> None:
    """Old main's glob skipped a looping or dangling link, and every output behind it, silently."""
    path, records = manifest
    up = _upstream_dir(tmp_path / "up", [r for r in records if r["dataset"] != "ECB"])
    link = {"dataset": up / "ECB", "org": up / "ECB" / "meta-llama",
            "file": up / "ECB" / "meta-llama" / "Meta-Llama-3-8B-Instruct_0.json", "dangling": up / "ECB"}[where]
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(tmp_path / "gone" if where == "dangling" else link.name)  # a link to itself: a loop
    code, _, err = _cli(capsys, "import", path, "--upstream-dir", up, "--model", MODEL, "--out", tmp_path / "run",
                        "--prompts-dir", PROMPTS_DIR)
    assert code == 2 and f"{link}: a symbolic link that leads nowhere" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("inside", [".", "runs/l3"])
def test_out_inside_the_upstream_folder_is_refused(manifest, tmp_path: Path, capsys, inside: str) -> None:
    """Old main wrote the run folder into the folder it was reading."""
    path, records = manifest
    up = _upstream_dir(tmp_path / "up", records)
    before = sorted(p.relative_to(up) for p in up.rglob("*"))
    code, _, err = _cli(capsys, "import", path, "--upstream-dir", up, "--model", MODEL, "--out", up / inside,
                        "--prompts-dir", PROMPTS_DIR)
    assert code == 2 and f"--out {up / inside}: lies inside {up}, which this command reads" in err
    assert len(err.splitlines()) == 1
    assert sorted(p.relative_to(up) for p in up.rglob("*")) == before


def test_second_import_into_the_same_model(manifest, tmp_path: Path, capsys) -> None:
    """Old main kept the first outputs and printed that it had imported the second ones. Now: the
    same outputs again change nothing and say so; outputs that differ are refused unless --replace,
    which replaces exactly them and keeps every other line byte for byte; other (dataset, run)
    pairs than the folder holds are refused in one line."""
    path, records = manifest
    out = tmp_path / "run"
    changed = [r for r in records if r["dataset"] == "ECB" and r["run"] == 1]

    def run_import(jl_records: list[dict], tag: str, *extra: str) -> tuple[int, str, str]:
        jl = tmp_path / f"{tag}.jsonl"
        jl.write_text("".join(json.dumps({"dataset": r["dataset"], "run": r["run"], "instance_id": r["instance_id"],
                                          "output": f"{tag if r in changed else 'first'} {r['instance_id']}"}) + "\n"
                              for r in jl_records))
        return _cli(capsys, "import", path, "--jsonl", jl, "--model", MODEL, "--out", out, "--prompts-dir", PROMPTS_DIR,
                    *extra)

    n = len(records)
    assert run_import(records, "first")[:2] == (0, f"imported {n} outputs into {out}: {n} new\n")
    assert run_import(records, "first")[:2] == (0, f"imported {n} outputs into {out}: 0 new, {n} already stored "
                                                   "identically\n")
    before = {p: p.read_bytes() for p in (out / "predictions").rglob("*.jsonl")}
    code, _, err = run_import(records, "second")
    assert code == 2 and f"{out}: {len(changed)} of the {n} imported outputs differ from those already stored" in err
    assert "--replace" in err and len(err.splitlines()) == 1
    assert {p: p.read_bytes() for p in (out / "predictions").rglob("*.jsonl")} == before
    code, stdout, _ = run_import(records, "second", "--replace")
    assert (code, stdout) == (0, f"imported {n} outputs into {out}: 0 new, {n - len(changed)} already stored "
                                 f"identically, {len(changed)} replaced (score the run again)\n")
    assert {k: v["output"].split()[0] for k, v in _stored(out).items()} == {
        _key(r): "second" if r in changed else "first" for r in records}
    after = {p: p.read_bytes() for p in (out / "predictions").rglob("*.jsonl")}
    assert [p for p in after if after[p] != before[p]] == [out / "predictions" / "meta-llama__Meta-Llama-3-8B-Instruct"
                                                           / "ECB" / "run_1.jsonl"]
    assert _cli(capsys, "score", out, "--no-fic")[0] == 0
    code, _, err = run_import([r for r in records if r["dataset"] == "MusiQue"], "first")
    assert code == 2 and "holds the prompts of 18 (dataset, run) pairs and this import covers 3" in err
    assert len(err.splitlines()) == 1
