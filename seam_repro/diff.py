"""Compare reproduced scores with a reference table (the paper's Table 3).

The paper publishes only mean and population std over 10 runs, rounded to 0.1, so a reproduction
cannot be checked run by run. The default rule counts a reproduced mean as *within spread* when

    |reproduced mean - reference mean| <= reference std + reproduced std + 0.05

i.e. the two ±1 std intervals overlap, with 0.05 of slack for the reference's rounding to 0.1.
Other rules (``--tolerance``): ``Kx`` scales the spread term by K (``2x``), a bare number is an
absolute band in score points (``1.5``), ``P%`` is relative to the reference mean (``10%``).
The rounding slack applies to every rule.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from seam_repro.aggregate import ModelScores, summarize
from seam_repro.errors import InputError
from seam_repro.reference import ReferenceTable

ROUNDING_SLACK = 0.05
"""Half the reference's rounding unit (Table 3 prints one decimal)."""


@dataclass(frozen=True)
class Tolerance:
    kind: str
    """``spread`` (value = multiplier of ref std + reproduced std), ``abs`` (points) or ``rel`` (%)."""
    value: float

    def allowed(self, ref_mean: float, ref_std: float, repro_std: float) -> float:
        """The largest |delta| still counted as within, rounding slack included."""
        if self.kind == "spread":
            band = self.value * (ref_std + repro_std)
        elif self.kind == "abs":
            band = self.value
        else:
            band = abs(ref_mean) * self.value / 100.0
        return band + ROUNDING_SLACK

    def describe(self) -> str:
        if self.kind == "spread":
            k = "" if self.value == 1 else f"{self.value:g} x "
            return f"|delta| <= {k}(reference std + reproduced std) + {ROUNDING_SLACK}"
        if self.kind == "abs":
            return f"|delta| <= {self.value:g} points + {ROUNDING_SLACK}"
        return f"|delta| <= {self.value:g}% of the reference mean + {ROUNDING_SLACK}"


_SPEC = re.compile(r"^(?:(?P<spread>spread)|(?P<k>\d+(?:\.\d+)?)x|(?P<rel>\d+(?:\.\d+)?)%|(?P<abs>\d+(?:\.\d+)?))$")


def parse_tolerance(spec: str | None) -> Tolerance:
    """Parse ``--tolerance``: ``spread`` (default), ``Kx``, ``P%`` or an absolute number of points."""
    if spec is None:
        return Tolerance("spread", 1.0)
    m = _SPEC.match(spec.strip().lower())
    if not m:
        raise InputError("--tolerance", f"cannot parse {spec!r}; expected 'spread', 'Kx' (e.g. 2x), 'P%' (e.g. 10%) "
                         "or a number of points (e.g. 1.5)")
    if m.group("spread"):
        return Tolerance("spread", 1.0)
    if m.group("k"):
        return Tolerance("spread", float(m.group("k")))
    if m.group("rel"):
        return Tolerance("rel", float(m.group("rel")))
    return Tolerance("abs", float(m.group("abs")))


@dataclass(frozen=True)
class DiffRow:
    model_id: str
    reference_model: str | None
    dataset: str
    n_runs: int
    mean: float
    std: float
    ref_mean: float | None
    ref_std: float | None
    delta: float | None
    allowed: float | None
    status: str
    """``within``, ``outside`` or ``no-reference`` (not a failure)."""
    note: str = ""


@dataclass(frozen=True)
class DiffReport:
    reference: str
    rule: str
    rows: list[DiffRow]

    @property
    def exit_code(self) -> int:
        """0 when every comparable cell is within, 1 when any is outside."""
        return 1 if any(r.status == "outside" for r in self.rows) else 0

    def to_json(self) -> dict[str, object]:
        return {"reference": self.reference, "rule": self.rule, "exit_code": self.exit_code,
                "rows": [asdict(r) for r in self.rows]}


def diff_models(models: list[ModelScores], reference: ReferenceTable, tolerance: Tolerance,
                as_name: str | None = None) -> DiffReport:
    """One row per (model, dataset) of the runs; the model is matched by HF id or ``as_name``."""
    if as_name is not None:
        if as_name not in reference.models:
            raise InputError("--as", f"{as_name!r} is not a reference model; choose one of {sorted(reference.models)}")
        ids = {m.model_id for m in models}
        if len(ids) > 1:
            raise InputError("--as", f"applies to one model but the runs hold {sorted(ids)}")
    rows: list[DiffRow] = []
    for ms in models:
        ref_name = as_name or reference.name_for_hf_id(ms.model_id)
        for ds_name, ds in ms.datasets.items():
            s = summarize(ds)
            base = dict(model_id=ms.model_id, reference_model=ref_name, dataset=ds_name, n_runs=len(s.runs),
                        mean=s.mean, std=s.std)
            ref_ds = reference.datasets.get(ds_name)
            row = ref_ds.row(ref_name) if (ref_ds is not None and ref_name is not None) else None
            if ref_name is None:
                note = f"model id {ms.model_id} is not in the reference; map it with --as NAME"
            elif ref_ds is None:
                note = f"dataset {ds_name} is not in the reference"
            elif row is None or row.mean is None or row.std is None:
                note = (row.note if row is not None and row.note else None) or f"no reference value for {ref_name}"
            else:
                note = ""
            if note:
                rows.append(DiffRow(**base, ref_mean=None, ref_std=None, delta=None, allowed=None,  # type: ignore[arg-type]
                                    status="no-reference", note=note))
                continue
            assert row is not None and row.mean is not None and row.std is not None
            delta = s.mean - row.mean
            allowed = tolerance.allowed(row.mean, row.std, s.std)
            status = "within" if abs(delta) <= allowed + 1e-12 else "outside"
            rows.append(DiffRow(**base, ref_mean=row.mean, ref_std=row.std, delta=delta,  # type: ignore[arg-type]
                                allowed=allowed, status=status))
    return DiffReport(reference.path, tolerance.describe(), rows)


def format_diff(report: DiffReport) -> str:
    """A Markdown table plus the rule, for the terminal and for files."""
    lines = [f"Reference: {report.reference}", f"Rule: {report.rule}", "",
             "| model | dataset | runs | reproduced | reference | delta | allowed | status |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in report.rows:
        name = r.reference_model or r.model_id
        ref = f"{r.ref_mean:.1f} ± {r.ref_std:.1f}" if r.ref_mean is not None and r.ref_std is not None else "–"
        delta = f"{r.delta:+.2f}" if r.delta is not None else "–"
        allowed = f"{r.allowed:.2f}" if r.allowed is not None else "–"
        status = r.status + (f" ({r.note})" if r.note else "")
        lines.append(f"| {name} | {r.dataset} | {r.n_runs} | {r.mean:.2f} ± {r.std:.2f} | {ref} | {delta} | "
                     f"{allowed} | {status} |")
    n_out = sum(r.status == "outside" for r in report.rows)
    n_in = sum(r.status == "within" for r in report.rows)
    n_na = sum(r.status == "no-reference" for r in report.rows)
    lines += ["", f"{n_in} within, {n_out} outside, {n_na} without reference"]
    return "\n".join(lines)
