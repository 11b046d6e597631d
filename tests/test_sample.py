"""The upstream profile's random-call sequence, written by hand from upstream-seam.md §2, on a tiny
config; and the independence properties of seam-repro-1."""

from __future__ import annotations

import random

import pytest

from seam_repro.config import parse_config
from seam_repro.errors import InputError
from seam_repro.instances import Document, Instance, LoadedDataset, Mention
from seam_repro.sample import derive_seed, derive_seeds, draw_all


class RecordingRandom(random.Random):
    """A stdlib Random that logs every sample/choice call with its population and k."""

    def __init__(self, seed: int):
        super().__init__(seed)
        self.calls: list[tuple] = []

    def sample(self, population, k):  # type: ignore[override]
        self.calls.append(("sample", population.start, population.stop, k))
        return super().sample(population, k)

    def choice(self, seq):  # type: ignore[override]
        self.calls.append(("choice", seq.start, seq.stop))
        return super().choice(seq)


def _prompts(n_prompts: int = 4, n_demos: int = 5, key: str = "demonstrations") -> dict:
    return {"prompts": [{"id": i, "instructions": f"i{i}"} for i in range(n_prompts)],
            key: [{"documents": ["d"], "target": []} for _ in range(n_demos)]}


def _ecb_topic(split: str, topic: str, n_mentions: int, n_docs: int) -> Instance:
    docs = tuple(Document(f"{topic}_{d}") for d in range(n_docs))
    mentions = tuple(Mention(i, f"{topic}_{i % n_docs}", (i,)) for i in range(n_mentions))
    return Instance("ECB", split, topic, topic, docs, mentions=mentions)


def _scico_row(split: str, rid: int, n_mentions: int, doc_ids: tuple[int, ...]) -> Instance:
    return Instance("SciCo", split, str(rid), rid, (), paragraphs=tuple(("w",) for _ in doc_ids),
                    paragraph_doc_ids=doc_ids, mentions=tuple(Mention(0, paragraph=0, start=0, end=0)
                                                             for _ in range(n_mentions)))


def _musique(n: int) -> list[Instance]:
    return [Instance("MusiQue", "val", f"q{i}", f"q{i}", (Document("0", "p"),), question="q") for i in range(n)]


DATA = {
    "ECB": LoadedDataset("ECB", {
        "train_events": [_ecb_topic("train_events", "1", 2, 1)],
        "train_entities": [_ecb_topic("train_entities", "1", 1, 1)],
        "dev_events": [], "dev_entities": [],
        "test_events": [_ecb_topic("test_events", "36", 3, 2), _ecb_topic("test_events", "37", 1, 1)],
        "test_entities": [],
    }),
    "SciCo": LoadedDataset("SciCo", {
        "train": [_scico_row("train", 0, 2, (0, 1))],
        "validation": [_scico_row("validation", 1, 1, (0, 0, 1, 2))],
        "test": [_scico_row("test", 2, 3, (0,))],
    }),
    "MusiQue": LoadedDataset("MusiQue", {"val": _musique(3)}),
}
PROMPTS = {"ECB": _prompts(), "SciCo": _prompts(), "MusiQue": _prompts(21, 5)}
RAW = {"random_seed": 42, "num_different_runs": 2, "num_demonstrations": 2, "max_num_samples": 1,
       "datasets": [{"name": "ECB", "split_name": "test_events"}, {"name": "SciCo", "split_name": "test"},
                    {"name": "Musique", "split_name": "val"}]}

ECB_RUN = [
    ("sample", 0, 1, 1),     # base __init__: get_max_num_docs() == 1 at first
    ("sample", 0, 2, 2),     # train_events topic 1: 2 mention ids
    ("sample", 0, 1, 1),     # train_entities topic 1
    ("sample", 0, 3, 3),     # test_events topic 36
    ("sample", 0, 1, 1),     # test_events topic 37
    ("sample", 0, 2, 2),     # update_shuffled_doc_ids: max docs per topic = 2
    ("choice", 0, 4),        # paraphrase
    ("sample", 0, 5, 2),     # demos
    ("sample", 0, 2, 1),     # _random_sampling: only test_events has > 1 topic
]
SCICO_RUN = [
    ("sample", 0, 2, 2),     # max(doc_ids) over all rows = 2 (largest index, not the count 3)
    ("sample", 1, 100, 2),   # train row 0 mention ids
    ("choice", 0, 4),        # get_prompt fires after the first row's ids
    ("sample", 0, 5, 2),
    ("sample", 1, 100, 1),   # validation row
    ("sample", 1, 100, 3),   # test row; no split has > 1 row, so no subsampling
]
MUSIQUE_RUN = [("sample", 0, 20, 20), ("choice", 0, 21), ("sample", 0, 5, 2), ("sample", 0, 3, 1)]


def test_upstream_call_sequence_matches_the_generator():
    cfg = parse_config(RAW, "upstream")
    rng = RecordingRandom(42)
    draw_all(cfg, "upstream", DATA, PROMPTS, rng=rng)
    assert rng.calls == ECB_RUN * 2 + SCICO_RUN * 2 + MUSIQUE_RUN * 2


def test_upstream_values_are_those_of_one_shared_stdlib_random():
    cfg = parse_config(RAW, "upstream")
    choices = draw_all(cfg, "upstream", DATA, PROMPTS)
    ref = random.Random(42)
    ref.sample(range(1), 1)
    ids_t1 = ref.sample(range(2), 2)  # noqa: F841 - consumed exactly as upstream does
    ref.sample(range(1), 1)
    ids_36 = ref.sample(range(3), 3)
    ids_37 = ref.sample(range(1), 1)
    order = ref.sample(range(2), 2)
    para = ref.choice(range(4))
    demos = ref.sample(range(5), 2)
    picked = ref.sample(range(2), 1)
    ecb0 = choices[0]
    assert (ecb0.doc_order, ecb0.paraphrase_index, ecb0.demo_indices) == (tuple(order), para, tuple(demos))
    assert ecb0.instance_ids == (["36", "37"][picked[0]],)
    assert ecb0.mention_ids == {ecb0.instance_ids[0]: tuple(ids_36 if picked[0] == 0 else ids_37)}


def test_upstream_ignores_max_num_instances_and_says_so():
    raw = {**RAW, "max_num_instances": 1}
    raw.pop("max_num_samples")
    cfg = parse_config(raw, "upstream")
    assert cfg.max_instances == -1 and any("ignored" in n for n in cfg.notes)
    assert parse_config(raw, "seam-repro-1").max_instances == 1


def test_upstream_runs_depend_on_earlier_datasets_but_corrected_ones_do_not():
    full = parse_config(RAW, "upstream")
    only_musique = parse_config({**RAW, "datasets": RAW["datasets"][2:]}, "upstream")
    a = draw_all(full, "upstream", DATA, PROMPTS)[-1]
    b = draw_all(only_musique, "upstream", DATA, PROMPTS)[-1]
    assert (a.doc_order, a.paraphrase_index) != (b.doc_order, b.paraphrase_index)
    full1 = parse_config(RAW, "seam-repro-1")
    only1 = parse_config({**RAW, "datasets": RAW["datasets"][2:]}, "seam-repro-1")
    assert draw_all(full1, "seam-repro-1", DATA, PROMPTS)[-1] == draw_all(only1, "seam-repro-1", DATA, PROMPTS)[-1]


def test_generation_seeds_are_per_instance_and_stable():
    cfg = parse_config({**RAW, "max_num_samples": -1}, "upstream")
    runs = draw_all(cfg, "upstream", DATA, PROMPTS)
    mus = [r for r in runs if r.dataset == "MusiQue"]
    assert mus[0].gen_seeds != mus[1].gen_seeds  # run index is part of the seed
    assert mus[0].gen_seeds == draw_all(cfg, "upstream", DATA, PROMPTS)[4].gen_seeds


def test_generation_seeds_are_derive_seed_of_each_instance():
    """derive_seeds (the run's parts joined once) gives exactly derive_seed(*parts, id) per id."""
    cfg = parse_config({**RAW, "max_num_samples": -1}, "upstream")
    for r in draw_all(cfg, "upstream", DATA, PROMPTS):
        assert r.gen_seeds == {i: derive_seed("generate", cfg.random_seed, r.dataset, r.run, i)
                               for i in r.instance_ids}
    ids = ["", "a|b", "é✓", "x" * 300, "12", "ünï|"]
    for parts in [("generate", 42, "ECB", 0), ("generate", -1, "näme", 3), ("one",)]:
        assert derive_seeds(parts, ids) == {i: derive_seed(*parts, i) for i in ids}


def test_scico_with_more_than_99_mentions_is_a_clear_error():
    data = dict(DATA, SciCo=LoadedDataset("SciCo", {"train": [_scico_row("train", 0, 100, (0,))],
                                                    "test": [_scico_row("test", 1, 1, (0,))]}))
    cfg = parse_config(RAW, "upstream")
    with pytest.raises(InputError, match="100 mentions"):
        draw_all(cfg, "upstream", data, PROMPTS)


def test_empty_evaluated_split_is_refused():
    data = dict(DATA, SciCo=LoadedDataset("SciCo", {"train": [_scico_row("train", 0, 1, (0,))], "test": []},
                                          files={"test.jsonl": "0" * 64}))
    with pytest.raises(InputError, match=r"split 'test' has no instances \(read test.jsonl\)"):
        draw_all(parse_config(RAW, "upstream"), "upstream", data, PROMPTS)


@pytest.mark.parametrize(("patch", "field"), [
    ({"generation": {"temperature": "hot"}}, "temperature"),
    ({"generation": {"max_new_tokens": 0}}, "max_new_tokens"),
    ({"generation": {"temperature": float("nan")}}, "temperature"),
    ({"generation": {"temperature": float("inf")}}, "temperature"),
    ({"max_num_samples": -5}, "max_num_samples"),
    ({"max_num_samples": 0}, "max_num_samples"),
    ({"num_different_runs": 10**9}, "num_different_runs"),
    ({"random_seed": 10**30}, "random_seed"),
    ({"random_seed": 1.5}, "random_seed"),
    ({"datasets": [{"name": "MusiQue", "split_name": ""}]}, "split_name"),
])
def test_config_semantics_refused_at_parse_time(patch, field):
    """One validation for `sample` and for every manifest loader: nothing is written that is refused later."""
    with pytest.raises(InputError, match=field):
        parse_config({**RAW, **patch}, "upstream")


def test_unknown_profile_and_dataset_are_rejected():
    with pytest.raises(InputError, match="unknown profile"):
        parse_config(RAW, "latest")
    with pytest.raises(InputError, match="unknown dataset 'CNN'"):
        parse_config({**RAW, "datasets": [{"name": "CNN"}]}, "upstream")


def test_grouped_units_are_subsampled_by_group_and_plain_instances_as_before():
    from seam_repro.sample import _subsample

    plain = _musique(5)
    picked = _subsample(random.Random(3), {"val": plain}, 2, "val")
    ref = random.Random(3).sample(range(5), k=2)
    assert [i.instance_id for i in picked] == [f"q{j}" for j in ref]
    units = [inst._replace(instance_id=f"{inst.instance_id}#doc{k}", extra={"group": inst.instance_id})
             for inst in plain for k in range(3)]
    picked = _subsample(random.Random(3), {"val": units}, 2, "val")
    assert [i.instance_id for i in picked] == [f"q{j}#doc{k}" for j in ref for k in range(3)]
