"""Controlled designs (seam_repro.design): the base draw is i.i.d. run 0 under both profiles, only the
named factors change, each from the documented seed (recomputed here with hashlib + random, not
with the kit's helpers), the design is sealed in the digest, and bad designs fail in one line."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from seam_repro.cli import cli
from seam_repro.config import parse_config
from seam_repro.errors import InputError
from seam_repro.instances import Document, Instance, LoadedDataset
from seam_repro.sample import draw_all

ROOT = Path(__file__).parents[1]


def _seed(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:4], "big")


def _insts(name: str, split: str, n: int, n_docs: int) -> list[Instance]:
    return [Instance(name, split, f"q{i}", f"q{i}", tuple(Document(str(d), "p") for d in range(n_docs)),
                     question="q") for i in range(n)]


def _prompts(n_prompts: int = 6, n_demos: int = 7) -> dict:
    return {"prompts": [{"id": i, "instructions": f"i{i}"} for i in range(n_prompts)],
            "demonstrations": [{"documents": ["d"], "target": []} for _ in range(n_demos)]}


DATA = {"MusiQue": LoadedDataset("MusiQue", {"val": _insts("MusiQue", "val", 9, 3)}),
        "MultiNews": LoadedDataset("MultiNews", {"test": _insts("MultiNews", "test", 5, 1)})}
PROMPTS = {"MusiQue": _prompts(), "MultiNews": _prompts()}


def _raw(design: object, runs: int = 5, datasets: tuple[str, ...] = ("Musique", "MultiNews")) -> dict:
    split = {"Musique": "val", "MultiNews": "test"}
    return {"random_seed": 7, "num_different_runs": runs, "num_demonstrations": 3, "max_num_samples": 4,
            "design": design, "datasets": [{"name": d, "split_name": split[d]} for d in datasets]}


def _draw(design: object, profile: str, **kw: object) -> list:
    cfg = parse_config(_raw(design, **kw), profile)  # type: ignore[arg-type]
    return draw_all(cfg, profile, DATA, PROMPTS)


FIELDS = {"paraphrase": "paraphrase_index", "document_order": "doc_order", "instance_selection": "instance_ids"}


@pytest.mark.parametrize("profile", ["upstream", "seam-repro-1"])
@pytest.mark.parametrize("factor", ["paraphrase", "document_order", "instance_selection"])
def test_one_factor_design_varies_only_its_factor_from_the_documented_seed(profile: str, factor: str) -> None:
    iid = _draw(None, profile)
    design = _draw({"kind": "one-factor", "factors": [factor]}, profile, datasets=("Musique",))
    runs = [c for c in design if c.dataset == "MusiQue"]
    base = next(c for c in iid if c.dataset == "MusiQue" and c.run == 0)
    assert runs[0] == base  # the base draw is the profile's own run 0 (upstream: the published stream's)
    for c in runs[1:]:
        rng = random.Random(_seed("design", 7, "MusiQue", factor, c.run))
        if factor == "paraphrase":
            expected: object = rng.choice(range(6))
        elif factor == "document_order":
            expected = tuple(rng.sample(range(base.max_num_docs), k=base.max_num_docs))
        else:
            expected = tuple(f"q{i}" for i in rng.sample(range(9), k=4))
        assert getattr(c, FIELDS[factor]) == expected
        for other, fld in FIELDS.items():
            if other != factor:
                assert getattr(c, fld) == getattr(base, fld)
        assert c.demo_indices == base.demo_indices
        assert c.gen_seeds == {i: _seed("generate", 7, "MusiQue", 0, i) for i in c.instance_ids}
    assert len({getattr(c, FIELDS[factor]) for c in runs}) > 1


def test_few_shot_examples_keep_the_base_order_pattern_and_order_permutes_the_base_set() -> None:
    base = _draw(None, "seam-repro-1", datasets=("Musique",))[0]
    ex = _draw({"kind": "one-factor", "factors": ["few_shot_examples"]}, "seam-repro-1", datasets=("Musique",))
    order = _draw({"kind": "one-factor", "factors": ["few_shot_order"]}, "seam-repro-1", datasets=("Musique",))
    rank = [sorted(base.demo_indices).index(d) for d in base.demo_indices]
    for c in ex[1:]:
        new = sorted(random.Random(_seed("design", 7, "MusiQue", "few_shot_examples", c.run)).sample(range(7), k=3))
        assert c.demo_indices == tuple(new[k] for k in rank)
    for c in order[1:]:
        perm = random.Random(_seed("design", 7, "MusiQue", "few_shot_order", c.run)).sample(range(3), k=3)
        assert c.demo_indices == tuple(base.demo_indices[j] for j in perm)
        assert c.paraphrase_index == base.paraphrase_index


@pytest.mark.parametrize("profile", ["upstream", "seam-repro-1"])
def test_decoding_noise_fixes_every_choice_and_takes_the_iid_generation_seeds(profile: str) -> None:
    iid = _draw(None, profile)
    noise = _draw("decoding-noise", profile)
    for c in noise:
        base = next(b for b in iid if b.dataset == c.dataset and b.run == 0)
        assert c._replace(run=0, gen_seeds=base.gen_seeds) == base
        assert c.gen_seeds == {i: _seed("generate", 7, c.dataset, c.run, i) for i in c.instance_ids}


def test_equal_designs_are_written_in_one_sealed_form() -> None:
    a = parse_config(_raw("decoding-noise"), "upstream").as_json()
    b = parse_config(_raw({"kind": "one-factor", "factors": ["generation_seed"]}), "upstream").as_json()
    c = parse_config(_raw({"kind": "one-factor", "factors": ["few_shot_order", "paraphrase"]}), "upstream").as_json()
    assert a["design"] == b["design"] == {"kind": "decoding-noise", "factors": ["generation_seed"]}
    assert c["design"]["factors"] == ["paraphrase", "few_shot_order"]
    assert "design" not in parse_config(_raw(None), "upstream").as_json()  # i.i.d. digests unchanged


@pytest.mark.parametrize(("design", "kw", "field", "words"), [
    ({"kind": "one-factor", "factors": ["temperature"]}, {}, "design.factors[0]", "unknown factor 'temperature'"),
    ({"kind": "one-factor", "factors": []}, {}, "design.factors", "non-empty list"),
    ({"kind": "sideways"}, {}, "design", "expected"),
    ("decoding-noise", {"runs": 1}, "num_different_runs", "at least 2 runs"),
])
def test_bad_designs_fail_in_one_line(design: object, kw: dict, field: str, words: str) -> None:
    with pytest.raises(InputError) as err:
        parse_config(_raw(design, **kw), "upstream")  # type: ignore[arg-type]
    assert err.value.field == field and words in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(("factor", "words"), [
    ("document_order", "1 document slot"), ("instance_selection", "every one of the 4"),
])
def test_a_factor_the_dataset_lacks_is_refused(factor: str, words: str) -> None:
    raw = _raw({"kind": "one-factor", "factors": [factor]}, datasets=("MultiNews",))
    if factor == "instance_selection":
        data = {"MultiNews": LoadedDataset("MultiNews", {"test": _insts("MultiNews", "test", 4, 2)})}
    else:
        data = DATA
    with pytest.raises(InputError) as err:
        draw_all(parse_config(raw, "upstream"), "upstream", data, PROMPTS)
    assert "MultiNews" in str(err.value) and words in str(err.value) and err.value.field == "design.factors"


def test_design_manifest_is_sealed_reproducible_and_verifies(tmp_path: Path) -> None:
    config = json.loads((ROOT / "manifests" / "smoke.config.json").read_text())
    config["design"] = {"kind": "one-factor", "factors": ["paraphrase"]}
    config["datasets"] = [{**d, "path": str(ROOT / "manifests" / d["path"])} for d in config["datasets"]
                          if d["name"] in ("MultiNews", "OpenASP")]
    digests = []
    for lab in ("a", "b"):
        folder = tmp_path / lab
        folder.mkdir()
        (folder / "c.json").write_text(json.dumps(config))
        out = folder / "m.json"
        res = CliRunner().invoke(cli, ["sample", str(folder / "c.json"), "-o", str(out),
                                       "--prompts-dir", str(ROOT / "manifests" / "fixtures" / "prompts")])
        assert res.exit_code == 0, res.output
        digests.append(json.loads(out.read_text())["digest"])
    assert digests[0] == digests[1]
    m = json.loads(out.read_text())
    assert m["config"]["design"] == {"kind": "one-factor", "factors": ["paraphrase"]}
    res = CliRunner().invoke(cli, ["verify", str(out), "--prompts-dir", str(ROOT / "manifests" / "fixtures" / "prompts")])
    assert res.exit_code == 0, res.output
    edited = {**m, "config": {**m["config"], "design": {"kind": "one-factor", "factors": ["document_order"]}}}
    (tmp_path / "edited.json").write_text(json.dumps(edited))
    res = CliRunner().invoke(cli, ["verify", str(tmp_path / "edited.json")])
    assert res.exit_code != 0 and "edited after it was sealed" in str(res.exception)


def test_instances_a_redrawn_selection_brings_in_get_mention_ids_from_their_own_seed() -> None:
    from seam_repro.instances import Mention

    def row(rid: int) -> Instance:
        return Instance("SciCo", "test", str(rid), rid, (), paragraphs=(("w",), ("w",)), paragraph_doc_ids=(0, 1),
                        mentions=tuple(Mention(0, paragraph=0, start=0, end=0) for _ in range(3)))

    data = {"SciCo": LoadedDataset("SciCo", {"test": [row(i) for i in range(6)]})}
    raw = {"random_seed": 7, "num_different_runs": 4, "num_demonstrations": 2, "max_num_samples": 2,
           "design": {"kind": "one-factor", "factors": ["instance_selection"]},
           "datasets": [{"name": "SciCo", "split_name": "test"}]}
    runs = draw_all(parse_config(raw, "seam-repro-1"), "seam-repro-1", data, {"SciCo": _prompts()})
    base = runs[0]
    assert any(iid not in base.mention_ids for c in runs for iid in c.instance_ids)
    for c in runs:
        assert set(c.mention_ids) == set(c.instance_ids)
        for iid, ids in c.mention_ids.items():
            if iid in base.mention_ids:
                assert ids == base.mention_ids[iid]
            else:
                rng = random.Random(_seed("design", 7, "SciCo", "mention_ids", iid))
                assert ids == tuple(rng.sample(range(1, 100), k=3))


def test_a_coreference_dataset_before_another_draws_both() -> None:
    # the mention-id loop once reused the name of the i.i.d. draws, so the next dataset failed
    from seam_repro.instances import Mention

    sci = [Instance("SciCo", "test", str(i), i, (), paragraphs=(("w",),), paragraph_doc_ids=(0,),
                    mentions=(Mention(0, paragraph=0, start=0, end=0),)) for i in range(3)]
    data = {"SciCo": LoadedDataset("SciCo", {"test": sci}), **DATA}
    raw = {"random_seed": 7, "num_different_runs": 3, "num_demonstrations": 2,
           "design": {"kind": "one-factor", "factors": ["paraphrase"]},
           "datasets": [{"name": "SciCo", "split_name": "test"}, {"name": "Musique", "split_name": "val"}]}
    runs = draw_all(parse_config(raw, "seam-repro-1"), "seam-repro-1", data, {"SciCo": _prompts(), **PROMPTS})
    assert [(c.dataset, c.run) for c in runs] == [(d, r) for d in ("SciCo", "MusiQue") for r in range(3)]
