"""The variance components a manifest's runs vary, and one (model, dataset)'s observations.

Per (manifest, model, dataset) the instance scores ``y[i, r]`` (instance ``i``, run ``r``) follow
a linear mixed model with crossed random effects::

    y = mu + a[instance] + sum_k b_k[level of component k in run r] + e

The components are the manifest's varied factors, each keyed on the level it recorded in a run
(paraphrase index, document order, demonstration set, demonstration order). Factors whose levels
split the runs the same way (in i.i.d. runs every run draws a new order and new demonstrations)
cannot be told apart and form one component named ``a + b``. Generation seeds are drawn per
instance and run, so decoding noise sits in the residual ``e`` with the instance x factor
interaction; a redrawn instance selection acts through the instance component.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from seam_repro.errors import InputError

INSTANCE = "instance"
RESIDUAL = "residual"
LEVEL_FACTORS = ("paraphrase", "document_order", "few_shot_examples", "few_shot_order")
"""Factors with a run-level value a component can be keyed on (see the module docstring)."""


def run_level(factor: str, run: Mapping[str, Any]) -> Any:
    """The level a manifest run records for ``factor`` (hashable)."""
    demos = list(run["demo_indices"])
    if factor == "paraphrase":
        return run["paraphrase_index"]
    if factor == "document_order":
        return tuple(run["doc_order"])
    if factor == "few_shot_examples":
        return tuple(sorted(demos))
    if factor == "few_shot_order":
        return tuple(sorted(range(len(demos)), key=lambda j: demos[j]))
    raise ValueError(factor)


def _partition(levels: Mapping[int, Any]) -> tuple[int, ...]:
    """How the runs are split by their levels, independent of the level values."""
    first: dict[Any, int] = {}
    return tuple(first.setdefault(levels[r], len(first)) for r in sorted(levels))


def components(runs: Sequence[Mapping[str, Any]], factors: Sequence[str], where: str) -> dict[str, dict[int, Any]]:
    """``{component: {run: level}}`` of one dataset's manifest runs: the varied factors with a
    run-level value, merged where they split the runs alike. A named factor that took one level
    over all runs cannot be estimated: one line saying so."""
    by_partition: dict[tuple[int, ...], list[str]] = {}
    levels: dict[str, dict[int, Any]] = {}
    for factor in factors:
        if factor not in LEVEL_FACTORS:
            continue
        lv = {int(r["run"]): run_level(factor, r) for r in runs}
        if len(set(lv.values())) < 2:
            raise InputError(where, f"factor '{factor}' took one level over {len(lv)} runs, too few runs to estimate "
                             "its share; expected at least 2 levels (add runs to the design)",
                             field="config.num_different_runs")
        levels[factor] = lv
        by_partition.setdefault(_partition(lv), []).append(factor)
    return {" + ".join(names): levels[names[0]] for names in by_partition.values()}


def iid_components(runs: Sequence[Mapping[str, Any]]) -> dict[str, dict[int, Any]]:
    """i.i.d. runs: every factor with a run-level value that took more than one level."""
    varied = [f for f in LEVEL_FACTORS if len({run_level(f, r) for r in runs}) > 1]
    return components(runs, varied, "") if varied else {}


def design_label(manifest: Mapping[str, Any]) -> dict[str, Any]:
    from seam_repro.design import design_of

    return design_of(manifest["config"]) or {"kind": "iid", "factors": list(LEVEL_FACTORS)}


@dataclass(frozen=True)
class Observations:
    """One (model, dataset)'s instance scores with the level of every component in their run."""

    y: np.ndarray
    instance: np.ndarray
    run: np.ndarray
    levels: dict[str, dict[int, Any]]

    def groups(self) -> dict[str, np.ndarray]:
        return {INSTANCE: self.instance.astype(str),
                **{name: np.array([str(lv[int(r)]) for r in self.run]) for name, lv in self.levels.items()}}

    def supported(self) -> tuple[Observations, list[str]]:
        """These observations with only the components that took two or more levels over the runs
        scored here (a model scored on part of a manifest's runs may see one paraphrase only), and
        one line per component left out."""
        runs = sorted({int(r) for r in self.run})
        keep = {name: lv for name, lv in self.levels.items() if len({lv[r] for r in runs}) >= 2}
        notes = [f"'{name}' took one level over the {len(runs)} run(s) scored here: not estimated"
                 for name in self.levels if name not in keep]
        return Observations(self.y, self.instance, self.run, keep), notes


def check_estimable(obs: Observations, where: str) -> None:
    """Enough instances and runs for every component and a residual; one line otherwise."""
    n_inst, n_runs = len(set(obs.instance.tolist())), len(set(obs.run.tolist()))
    if n_inst < 2:
        raise InputError(where, f"{n_inst} scored instance; expected at least 2 to estimate the instance share")
    if n_runs < 2:
        raise InputError(where, f"{n_runs} scored run; expected at least 2 runs to estimate any run-level share",
                         field="config.num_different_runs")
    if len(obs.y) <= 1 + len(obs.levels) + 1 + (n_inst - 1):
        raise InputError(where, f"{len(obs.y)} scores leave no residual degrees of freedom; expected more runs",
                         field="config.num_different_runs")
