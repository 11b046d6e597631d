"""Stage *sample*: draw every random choice of every (dataset, run).

``upstream`` is a call-for-call port of seam-benchmark/SEAM@6ad83f4 ``scripts/generate_benchmark.py``
and ``datasets_classes/**``: ONE stdlib ``random.Random(random_seed)`` shared by all datasets (in
config order) and all runs, with the same calls in the same order, so it yields the same streams:

    for dataset in config order:                          # generate_benchmark.load_all_datasets
      for run in range(num_different_runs):               # one Dataset.__init__ per run
        doc_order   = sample(range(D0), D0)               # base.__init__; D0 per dataset below
        FuseReviews: choice(prompts); sample(demos, k)    # get_prompt at start of pre_process
        ECB:   for split in train,dev,test x events,entities; for topic (sorted):
                   sample(range(n_mentions), n_mentions)
               D = max docs per topic; doc_order = sample(range(D), D); choice; sample(demos, k)
        SciCo: for split, for row: sample(range(1, 100), n_mentions); after row 0: choice; sample
        others: choice(prompts); sample(demos, k)         # first get_sample2msg
        if max_num_samples > -1: for split in order: if len > cap: sample(split, cap)

D0: ECB 1, MuSiQue 20, FuseReviews 8, SciCo max(doc_ids) (largest index: upstream's off-by-one),
others the largest document count over all splits. ``seam-repro-1`` instead seeds one generator
per (dataset, run) from a hash of the root seed, draws only for the evaluated split, and uses the
true document count, so adding a dataset or a training row changes nothing else.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from functools import partial
from typing import Any, NamedTuple

from seam_repro.config import SeamConfig
from seam_repro.errors import InputError
from seam_repro.instances import Instance, LoadedDataset
from seam_repro.specs import DatasetSpec, SamplingPlan, load_suite


def _seed_of(joined: str) -> int:
    """The first 32 bits of sha256 of the ``|``-joined parts."""
    return int.from_bytes(hashlib.sha256(joined.encode("utf-8")).digest()[:4], "big")


def derive_seed(*parts: object) -> int:
    """A 32-bit seed from a hash of the parts (content-derived sub-seeds, as unitxt does)."""
    return _seed_of("|".join(str(p) for p in parts))


def derive_seeds(parts: Sequence[object], lasts: Sequence[str]) -> dict[str, int]:
    """``{x: derive_seed(*parts, x) for x in lasts}``, the shared ``parts`` joined once: one
    generation seed per instance of a run."""
    prefix = "|".join([*(str(p) for p in parts), ""])
    return {x: _seed_of(prefix + x) for x in lasts}


def _design_rng(cfg: SeamConfig, name: str, factor: str, key: object) -> random.Random:
    """The generator that redraws one design factor of ``name`` for one run (or mention ids for
    one instance)."""
    return random.Random(derive_seed("design", cfg.random_seed, name, factor, key))


class RunChoices(NamedTuple):
    """Everything random about one (dataset, run); rendering needs nothing else. A named tuple, as
    the records of ``instances.py`` are (that module says why)."""

    dataset: str
    run: int
    split: str
    paraphrase_index: int
    demo_indices: tuple[int, ...]
    max_num_docs: int
    doc_order: tuple[int, ...]
    instance_ids: tuple[str, ...]
    """Evaluated instances in prompt order (upstream: the sampled order)."""
    mention_ids: dict[str, tuple[int, ...]]
    """Coreference: drawn id of each gold mention, in the instance's mention order."""
    gen_seeds: dict[str, int]
    sample_seed: int | None = None
    """seam-repro-1: the (dataset, run) sub-seed; None for upstream's shared stream."""


class _PromptDraw:
    """Upstream ``get_prompt``: one paraphrase (``choice``) then demos without replacement."""

    def __init__(self, prompt_file: dict[str, Any], num_demos: int, dataset: str, demo_key: str):
        self.n_prompts = len(prompt_file.get("prompts", []))
        self.n_demos = len(prompt_file.get(demo_key, []))
        self.num_demos = num_demos
        if self.n_prompts == 0:
            raise InputError(f"{dataset}.json", "no paraphrases", field="prompts")
        if num_demos > self.n_demos:
            raise InputError(f"{dataset}.json", f"{num_demos} demonstrations requested, pool has {self.n_demos}",
                             field=demo_key)
        self.paraphrase: int | None = None
        self.demos: tuple[int, ...] = ()

    def draw(self, rng: random.Random) -> None:
        if self.paraphrase is None:
            self.paraphrase = rng.choice(range(self.n_prompts))
            self.demos = tuple(rng.sample(range(self.n_demos), k=self.num_demos))


def _max_docs_upstream(plan: SamplingPlan, name: str, data: LoadedDataset) -> int:
    """Document slots before any per-row draw (upstream ``get_max_num_docs``), over ALL splits."""
    if plan.doc_slots == "fixed":
        return int(plan.fixed_slots or 1)
    everything = [inst for split in data.splits.values() for inst in split]
    if not everything:
        raise InputError(name, "no instances in any split")
    if plan.doc_slots == "max_doc_index":
        return max(max(inst.paragraph_doc_ids) for inst in everything)
    return max(len(inst.documents) for inst in everything)


def _mention_ids(rng: random.Random, plan: SamplingPlan, inst: Instance, corrected: bool = False) -> tuple[int, ...]:
    n = len(inst.mentions)
    if plan.mention_population == "permutation":
        return tuple(rng.sample(range(n), k=n))
    low, high = plan.mention_population  # type: ignore[misc]
    if corrected:
        high = max(high, low + n)
    if n > high - low:
        raise InputError(inst.dataset, f"{n} mentions, but upstream draws ids from {low}..{high - 1} "
                         "without replacement", record=inst.instance_id, field="mentions")
    return tuple(rng.sample(range(low, high), k=n))


def _groups(insts: list[Instance]) -> list[list[Instance]]:
    """Units that belong together (``extra["group"]``: the documents of one instance under
    document-level inference) stay together; every other instance is its own group."""
    order: dict[Any, list[Instance]] = {}
    for i, inst in enumerate(insts):
        order.setdefault(inst.extra.get("group", ("__single__", i)), []).append(inst)
    return list(order.values())


def _subsample(rng: random.Random, splits: dict[str, list[Instance]], cap: int, evaluated: str) -> list[Instance]:
    """Upstream ``_random_sampling``: every split longer than the cap is sampled (draws consumed
    even for splits never evaluated). The cap counts instances; grouped units are drawn by group."""
    chosen = list(splits[evaluated])
    if cap <= -1:
        return chosen
    for name, insts in splits.items():
        groups = _groups(insts)
        if len(groups) > cap:
            picked = rng.sample(range(len(groups)), k=cap)
            if name == evaluated:
                chosen = [unit for i in picked for unit in groups[i]]
    return chosen


def draw_run_upstream(rng: random.Random, spec: DatasetSpec, split: str, data: LoadedDataset,
                      prompt_file: dict[str, Any], cfg: SeamConfig, run: int) -> RunChoices:
    """One upstream ``Dataset.__init__``: consumes ``rng`` exactly as upstream does, following the
    dataset's declared sampling plan (which factors, and when the prompt is drawn)."""
    name, plan = spec.name, spec.sampling
    data.split(split)  # fail early with the list of available splits
    max_docs = _max_docs_upstream(plan, name, data)
    doc_order = rng.sample(range(max_docs), k=max_docs)
    prompt = _PromptDraw(prompt_file, cfg.num_demos, name, plan.demo_key)
    mention_ids: dict[str, tuple[int, ...]] = {}
    if plan.prompt_draw == "before_rows":
        prompt.draw(rng)
    if plan.mention_population is not None:
        for split_name, insts in data.splits.items():
            for inst in insts:
                ids = _mention_ids(rng, plan, inst)
                if plan.prompt_draw == "after_first_row_mentions":
                    prompt.draw(rng)  # fires once, right after the first row's ids (SciCo)
                if split_name == split:
                    mention_ids[inst.instance_id] = ids
    if plan.recount_after_mentions:  # ECB: real slot count known only after marking every split
        max_docs = max(len(inst.documents) for insts in data.splits.values() for inst in insts)
        doc_order = rng.sample(range(max_docs), k=max_docs)
    if any(data.splits.values()):
        prompt.draw(rng)  # "first_row" / "after_mentions"; a no-op when already drawn
    chosen = _subsample(rng, data.splits, cfg.max_instances, split)
    return _choices(name, run, split, prompt, max_docs, doc_order, chosen, mention_ids, cfg, None)


def _max_docs_corrected(spec: DatasetSpec, insts: Sequence[Instance], prompt_file: dict[str, Any]) -> int:
    """The true slot count: no document of an instance or a demo is ever dropped."""
    plan = spec.sampling
    if plan.doc_slots == "fixed" and not plan.recount_after_mentions:
        fixed = int(plan.fixed_slots or 1)
        if all(len(i.documents) <= fixed for i in insts):
            return fixed
    counts = [len(i.documents) for i in insts]
    counts += [max(i.paragraph_doc_ids) + 1 for i in insts if i.paragraph_doc_ids]
    counts += [len(d.get("documents", [])) for d in prompt_file.get(plan.demo_key, []) if isinstance(d, dict)]
    return max(counts or [1])


def draw_run_corrected(spec: DatasetSpec, split: str, data: LoadedDataset, prompt_file: dict[str, Any],
                       cfg: SeamConfig, run: int) -> RunChoices:
    """seam-repro-1: an independent generator per (dataset, run); only the evaluated split draws."""
    name, plan = spec.name, spec.sampling
    seed = derive_seed("seam-repro-1", "sample", cfg.random_seed, name, run)
    rng = random.Random(seed)
    insts = data.split(split)
    max_docs = _max_docs_corrected(spec, insts, prompt_file)
    doc_order = rng.sample(range(max_docs), k=max_docs)
    prompt = _PromptDraw(prompt_file, cfg.num_demos, name, plan.demo_key)
    prompt.draw(rng)
    mention_ids: dict[str, tuple[int, ...]] = {}
    if plan.mention_population is not None:
        for inst in insts:
            mention_ids[inst.instance_id] = _mention_ids(rng, plan, inst, corrected=True)
    chosen = _subsample(rng, {split: list(insts)}, cfg.max_instances, split)
    return _choices(name, run, split, prompt, max_docs, doc_order, chosen, mention_ids, cfg, seed)


def _choices(name: str, run: int, split: str, prompt: _PromptDraw, max_docs: int, doc_order: Sequence[int],
             chosen: Sequence[Instance], mention_ids: dict[str, tuple[int, ...]], cfg: SeamConfig,
             seed: int | None) -> RunChoices:
    ids = [inst.instance_id for inst in chosen]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise InputError(name, f"duplicate instance id '{dup}' in split '{split}'", field="id")
    return RunChoices(
        dataset=name, run=run, split=split,
        paraphrase_index=prompt.paraphrase if prompt.paraphrase is not None else -1,
        demo_indices=prompt.demos, max_num_docs=max_docs, doc_order=tuple(doc_order),
        instance_ids=tuple(ids),
        mention_ids={i: mention_ids[i] for i in ids if i in mention_ids},
        gen_seeds=derive_seeds(("generate", cfg.random_seed, name, run), ids),
        sample_seed=seed,
    )


def draw_all(cfg: SeamConfig, profile: str, data: dict[str, LoadedDataset],
             prompt_files: dict[str, dict[str, Any]], rng: random.Random | None = None) -> list[RunChoices]:
    """Choices of every (dataset, run) in config order. ``rng`` may be injected (tests record calls).
    A config naming a controlled design draws through ``seam_repro.design``."""
    if cfg.design is not None:
        return draw_design(cfg, profile, data, prompt_files, rng)
    suite = load_suite(cfg.suite)
    specs = {entry.name: suite.spec(entry.name) for entry in cfg.datasets}  # once per dataset, not per run
    for entry in cfg.datasets:
        check_split_not_empty(data[entry.name], entry.split)
    draw = draw_run_corrected
    if profile == "upstream":
        draw = partial(draw_run_upstream, rng if rng is not None else random.Random(cfg.random_seed))
    return [draw(specs[entry.name], entry.split, data[entry.name], prompt_files[entry.name], cfg, run)
            for entry in cfg.datasets for run in range(cfg.num_runs)]


def check_split_not_empty(data: LoadedDataset, split: str) -> None:
    """An evaluated split with no instances (an empty file, a CSV with only a header) would freeze a
    manifest that measures nothing: refuse it, naming the file(s) read."""
    if not data.split(split):
        files = ", ".join(sorted(data.files)) or "no files"
        raise InputError(data.name, f"split '{split}' has no instances (read {files}); expected at least one",
                         field="split_name")


def _design_lacks(factor: str, base: RunChoices, cfg: SeamConfig, data: LoadedDataset, n_prompts: int,
                  n_pool: int) -> str | None:
    """Why ``factor`` cannot vary on this dataset (None when it can)."""
    if factor == "paraphrase" and n_prompts < 2:
        return f"the prompt file has {n_prompts} paraphrase"
    if factor == "document_order" and base.max_num_docs < 2:
        return f"prompts have {base.max_num_docs} document slot"
    if factor == "instance_selection":
        n = len(_groups(list(data.split(base.split))))
        if cfg.max_instances == -1 or n <= cfg.max_instances:
            return f"every one of the {n} instances is evaluated (max_num_samples is -1 or >= {n})"
    if factor == "few_shot_examples" and (cfg.num_demos == 0 or n_pool <= cfg.num_demos):
        return f"{cfg.num_demos} demonstrations are taken from a pool of {n_pool}"
    if factor == "few_shot_order" and cfg.num_demos < 2:
        return f"{cfg.num_demos} demonstration(s) have one order"
    if factor == "generation_seed" and not cfg.generation.get("do_sample", True):
        return "generation.do_sample is false, so the seed changes no output"
    return None


def _design_demos(base: tuple[int, ...], n_pool: int, cfg: SeamConfig, name: str, run: int,
                  factors: tuple[str, ...]) -> tuple[int, ...]:
    demos = list(base)
    if "few_shot_examples" in factors:
        rank = sorted(range(len(demos)), key=lambda j: demos[j])  # rank[k]: slot of the k-th smallest
        new = sorted(_design_rng(cfg, name, "few_shot_examples", run).sample(range(n_pool), k=len(demos)))
        for k, slot in enumerate(rank):
            demos[slot] = new[k]
    if "few_shot_order" in factors:
        perm = _design_rng(cfg, name, "few_shot_order", run).sample(range(len(demos)), k=len(demos))
        demos = [demos[j] for j in perm]
    return tuple(demos)


def draw_design(cfg: SeamConfig, profile: str, data: dict[str, LoadedDataset],
                prompt_files: dict[str, dict[str, Any]], rng: random.Random | None = None) -> list[RunChoices]:
    """Choices of every (dataset, run) of ``cfg``'s controlled design (``seam_repro.design`` says how
    the base draw is made and from which seeds each named factor is redrawn)."""
    factors = cfg.design or ()
    iid_draws = draw_all(cfg._replace(design=None), profile, data, prompt_files, rng)
    suite = load_suite(cfg.suite)
    out: list[RunChoices] = []
    for entry in cfg.datasets:
        name, spec = entry.name, suite.spec(entry.name)
        base = next(c for c in iid_draws if c.dataset == name and c.run == 0)
        n_prompts = len(prompt_files[name].get("prompts", []))
        n_pool = len(prompt_files[name].get(spec.sampling.demo_key, []))
        for factor in factors:
            why = _design_lacks(factor, base, cfg, data[name], n_prompts, n_pool)
            if why is not None:
                raise InputError(name, f"design factor '{factor}' cannot vary on this dataset: {why}",
                                 field="design.factors")
        insts = {i.instance_id: i for i in data[name].split(base.split)}
        out.append(base)
        for run in range(1, cfg.num_runs):
            gen = partial(_design_rng, cfg, name, key=run)
            paraphrase = gen("paraphrase").choice(range(n_prompts)) if "paraphrase" in factors \
                else base.paraphrase_index
            order = tuple(gen("document_order").sample(range(base.max_num_docs), k=base.max_num_docs)) \
                if "document_order" in factors else base.doc_order
            ids = base.instance_ids
            if "instance_selection" in factors:
                chosen = _subsample(gen("instance_selection"), {base.split: list(insts.values())},
                                    cfg.max_instances, base.split)
                ids = tuple(i.instance_id for i in chosen)
            mentions = {}
            if spec.sampling.mention_population is not None:
                for iid in ids:
                    mentions[iid] = base.mention_ids[iid] if iid in base.mention_ids else _mention_ids(
                        _design_rng(cfg, name, "mention_ids", iid), spec.sampling, insts[iid],
                        corrected=profile != "upstream")
            seed_run = run if "generation_seed" in factors else 0
            out.append(base._replace(
                run=run, paraphrase_index=paraphrase, doc_order=order, instance_ids=ids, mention_ids=mentions,
                demo_indices=_design_demos(base.demo_indices, n_pool, cfg, name, run, factors),
                gen_seeds=derive_seeds(("generate", cfg.random_seed, name, seed_run), ids)))
    return out
