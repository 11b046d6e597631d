"""Controlled designs: which of SEAM's arbitrary choices vary from run to run.

SEAM draws every choice afresh in every run (i.i.d. runs), so its std cannot say which choice
moved the score. A config may instead name a design (key ``design``):

* ``{"kind": "one-factor", "factors": [...]}``: every choice is fixed at a *base draw* and only
  the named factors are redrawn in each run;
* ``"decoding-noise"`` (or ``{"kind": "decoding-noise"}``): every choice fixed, only the generation
  seeds redrawn, so the spread across runs is the decoding-noise floor.

Factors: ``paraphrase`` (instruction paraphrase), ``document_order``, ``instance_selection``,
``few_shot_examples`` (which demonstrations), ``few_shot_order`` (their order) and
``generation_seed``. The demonstrations of a run are a set placed in an order: redrawing only the
examples keeps the base draw's order pattern (the k-th smallest new index takes the place of the
k-th smallest base index); redrawing only the order permutes the base set.

The base draw is run 0 of the i.i.d. draw of the same config and profile (under ``upstream``: run 0
of the published generator, which for later datasets follows the draws of all earlier datasets'
runs); run 0 of a design therefore equals run 0 of SEAM's runs. In run ``r >= 1`` factor ``f`` of
dataset ``d`` is redrawn from its own generator seeded with
``derive_seed("design", random_seed, d, f, r)``, so the factors draw independently of each other and
of the profile's stream. Generation seeds are the i.i.d. ones of run ``r`` when redrawn, of run 0
when fixed. Coreference mention ids stay those of the base draw; an instance that only a redrawn
selection brings in gets ids from ``derive_seed("design", random_seed, d, "mention_ids", id)``.

The normalised design is written into the manifest's sealed config (nothing is written for i.i.d.
runs), so two labs freezing the same design get the same digest, and ``verify``, ``replay``,
``score`` and ``submit`` read the recorded choices as for any manifest.

This module holds what ``config`` reads (it sits in the config layer); the draws live in
``sample.draw_design`` beside the helpers they share with the i.i.d. draws.
"""

from __future__ import annotations

from typing import Any

from seam_repro.errors import InputError

FACTORS = ("paraphrase", "document_order", "instance_selection", "few_shot_examples", "few_shot_order",
           "generation_seed")
"""Canonical factor names, in the order a design records them."""
KINDS = ("one-factor", "decoding-noise")
_FORM = ('"decoding-noise" or {"kind": "one-factor", "factors": [...]} with factors from '
         + ", ".join(FACTORS))


def parse_design(raw: Any, where: str, num_runs: int) -> tuple[str, ...] | None:
    """The factors a config's ``design`` redraws, in canonical order; None for i.i.d. runs."""
    if raw is None or raw == "iid":
        return None
    if isinstance(raw, str):
        raw = {"kind": raw}
    if not isinstance(raw, dict) or raw.get("kind") not in KINDS or set(raw) - {"kind", "factors"}:
        raise InputError(where, f"expected {_FORM}, got {str(raw)[:60]}", field="design")
    if raw["kind"] == "decoding-noise":
        if raw.get("factors") not in (None, ["generation_seed"]):
            raise InputError(where, "a decoding-noise design redraws only generation_seed; name other factors "
                             'with kind "one-factor"', field="design.factors")
        factors = ["generation_seed"]
    else:
        factors = raw.get("factors")
        if not isinstance(factors, list) or not factors:
            raise InputError(where, f"expected a non-empty list of factors from {', '.join(FACTORS)}",
                             field="design.factors")
    for i, name in enumerate(factors):
        if name not in FACTORS:
            raise InputError(where, f"unknown factor {str(name)[:40]!r}; expected one of {', '.join(FACTORS)}",
                             field=f"design.factors[{i}]")
    if len(set(factors)) != len(factors):
        raise InputError(where, "a factor is named twice", field="design.factors")
    if num_runs < 2:
        raise InputError(where, f"a design needs at least 2 runs to vary anything, got {num_runs}",
                         field="num_different_runs")
    return tuple(f for f in FACTORS if f in factors)


def design_json(factors: tuple[str, ...]) -> dict[str, Any]:
    """The sealed form: one spelling per design, so equal designs give equal digests."""
    kind = "decoding-noise" if factors == ("generation_seed",) else "one-factor"
    return {"kind": kind, "factors": list(factors)}


def design_of(config_json: dict[str, Any]) -> dict[str, Any] | None:
    """A manifest config's design (its sealed form), None for i.i.d. runs."""
    design = config_json.get("design")
    return design if isinstance(design, dict) else None
