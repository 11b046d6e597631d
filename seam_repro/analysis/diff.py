"""Compare reproduced scores with a reference table (the paper's Table 3).

The paper publishes only mean and population std over 10 runs, rounded to 0.1, so a reproduction
cannot be checked run by run. The default rule counts a reproduced mean as *within spread* when

    |reproduced mean - reference mean| <= reference std + reproduced std + 0.05

i.e. the two ±1 std intervals overlap, with 0.05 of slack for the reference's rounding to 0.1.
Other rules (``--tolerance``): ``Kx`` scales the spread term by K (``2x``), a bare number is an
absolute band in score points (``1.5``), ``P%`` is relative to the reference mean (``10%``).
The rounding slack applies to every rule.

Before any value is compared, the run's protocol (``trust.PROTOCOL_FIELDS``: protocol digest,
profile, runs, limit, temperature, max_new_tokens, prompt path, and whether every instance was
scored) is checked against the reference's. Exit codes (``DiffReport.exit_code``):

* 0 every compared cell is within, and at least one cell was compared;
* 1 some cell is outside;
* 2 bad input (any refused file; raised, not returned);
* 3 the protocol differs from the reference's (unless ``--allow-protocol-mismatch``);
* 4 nothing was compared (no model/dataset has a reference value): a CI job must not pass on it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from seam_repro.analysis.aggregate import ModelScores, summarize
from seam_repro.analysis.reference import ReferenceTable
from seam_repro.errors import InputError
from seam_repro.manifest.trust import PROTOCOL_FIELDS, protocol_differences

EXIT_OK, EXIT_OUTSIDE, EXIT_BAD_INPUT, EXIT_PROTOCOL, EXIT_NOTHING_COMPARED = 0, 1, 2, 3, 4

ROUNDING_SLACK = 0.05
"""Half the reference's rounding unit (Table 3 prints one decimal)."""


@dataclass(frozen=True)
class Tolerance:
    kind: str
    """``spread`` (value = multiplier of ref std + reproduced std), ``abs`` (points) or ``rel`` (%)."""
    value: float

    def allowed(self, ref_mean: float, ref_std: float, repro_std: float) -> float:
        """The largest |delta| still counted as within, rounding slack included."""
        band = {"spread": self.value * (ref_std + repro_std), "abs": self.value,
                "rel": abs(ref_mean) * self.value / 100.0}[self.kind]
        return band + ROUNDING_SLACK

    def describe(self) -> str:
        k = "" if self.value == 1 else f"{self.value:g} x "
        band = {"spread": f"{k}(reference std + reproduced std)", "abs": f"{self.value:g} points",
                "rel": f"{self.value:g}% of the reference mean"}[self.kind]
        return f"|delta| <= {band} + {ROUNDING_SLACK}"


_SPEC = re.compile(r"^(?:(?P<spread>spread)|(?P<k>\d+(?:\.\d+)?)x|(?P<rel>\d+(?:\.\d+)?)%|(?P<abs>\d+(?:\.\d+)?))$")


def parse_tolerance(spec: str | None) -> Tolerance:
    """Parse ``--tolerance``: ``spread`` (default), ``Kx``, ``P%`` or an absolute number of points."""
    m = _SPEC.match("spread" if spec is None else spec.strip().lower())
    if not m:
        raise InputError("--tolerance", f"cannot parse {spec!r}; expected 'spread', 'Kx' (e.g. 2x), 'P%' (e.g. 10%) "
                         "or a number of points (e.g. 1.5)")
    kind = m.lastgroup or ""  # the one group that matched
    if kind in ("spread", "k"):
        return Tolerance("spread", float(m.group("k") or 1.0))
    return Tolerance(kind, float(m.group(kind)))


@dataclass(frozen=True, kw_only=True)
class DiffRow:
    model_id: str
    reference_model: str | None
    dataset: str
    n_runs: int = 0
    mean: float | None = None
    std: float | None = None
    ref_mean: float | None = None
    ref_std: float | None = None
    delta: float | None = None
    allowed: float | None = None
    status: str
    """``within``, ``outside``, ``no-reference`` or ``not-scored`` (the last two compare nothing)."""
    note: str = ""
    protocol: str = ""
    """Protocol fields that differ from the reference's ('' when they agree)."""


@dataclass(frozen=True)
class DiffReport:
    reference: str
    rule: str
    rows: list[DiffRow]
    protocol: dict[str, list[str]] = field(default_factory=dict)
    """Per model id: the protocol fields that differ from the reference's."""
    allow_protocol_mismatch: bool = False
    token_notes: list[str] = field(default_factory=list)
    """Whether each run's predictions are batch-invariant, and whether two runs of one model compare
    token for token (``run/invariance.py``)."""

    @property
    def n_compared(self) -> int:
        return sum(r.status in ("within", "outside") for r in self.rows)

    @property
    def exit_code(self) -> int:
        """See the module docstring: 3 protocol mismatch, 1 outside, 4 nothing compared, else 0."""
        if any(self.protocol.values()) and not self.allow_protocol_mismatch:
            return EXIT_PROTOCOL
        if any(r.status == "outside" for r in self.rows):
            return EXIT_OUTSIDE
        if self.n_compared == 0:
            return EXIT_NOTHING_COMPARED
        return EXIT_OK

    def to_json(self) -> dict[str, object]:
        return {"reference": self.reference, "rule": self.rule, "exit_code": self.exit_code,
                "compared": self.n_compared, "protocol_differences": self.protocol,
                "allow_protocol_mismatch": self.allow_protocol_mismatch, "token_comparability": self.token_notes,
                "rows": [asdict(r) for r in self.rows]}


_UNAVAILABLE = re.compile(r"^(?P<what>FIC \w+ model \S+?)@\S+ is not available \((?P<why>[^)]*)\)")


def run_hint(ms: ModelScores) -> str:
    """The run folder to name in a command: scores come from ``RUN/scores/<slug>``; a bundle cannot
    be re-scored, only the run it was made from."""
    src = Path(ms.source)
    return "RUN_DIR" if not ms.source or src.suffix == ".json" else str(src.parent.parent)


def brief_reason(reason: str, run: str = "RUN_DIR") -> str:
    """One short line for why a dataset has no score, with the command that scores it.

    The scorer records the library's whole exception (hundreds of characters of Hub chatter); what
    a reader needs is which model is missing and what to run. Other reasons keep their first line."""
    m = _UNAVAILABLE.match(reason)
    if m:
        cached = "--fic-download" in m.group("why")
        return (f"{m.group('what')} is {'not in the local cache' if cached else 'unavailable (offline or not cached)'}; "
                f"to score it{'' if cached else ' online'}: `seam-repro score {run} --fic-download` (~45 GB download).")
    first = reason.strip().splitlines()[0] if reason.strip() else "the scorer gave no reason"
    return first if len(first) <= 160 else first[:159] + "…"


def reference_protocol(reference: ReferenceTable) -> dict[str, object] | None:
    """The comparable fields of the reference's protocol, or None when it states none."""
    protocol = reference.protocol
    return {k: protocol[k] for k in PROTOCOL_FIELDS if k in protocol} if protocol else None


def diff_models(models: list[ModelScores], reference: ReferenceTable, tolerance: Tolerance,
                as_name: str | None = None, allow_protocol_mismatch: bool = False) -> DiffReport:
    """One row per (model, dataset) of the runs; the model is matched by HF id or ``as_name``.
    Datasets a model has no score for get a ``not-scored`` row with the reason."""
    if as_name is not None:
        if as_name not in reference.models:
            raise InputError("--as", f"{as_name!r} is not a reference model; choose one of {sorted(reference.models)}")
        ids = {m.model_id for m in models}
        if len(ids) > 1:
            raise InputError("--as", f"applies to one model but the runs hold {sorted(ids)}")
    rows: list[DiffRow] = []
    ref_protocol = reference_protocol(reference)
    protocol: dict[str, list[str]] = {}
    for ms in models:
        ref_name = as_name or reference.name_for_hf_id(ms.model_id)
        protocol[ms.model_id] = differs = protocol_differences(ms.extra.get("protocol"), ref_protocol)
        for ds_name, reason in sorted(ms.unscored.items()):
            rows.append(DiffRow(model_id=ms.model_id, reference_model=ref_name, dataset=ds_name, status="not-scored",
                                note=brief_reason(reason, run_hint(ms)), protocol="; ".join(differs)))
        for ds_name, ds in ms.datasets.items():
            s = summarize(ds)
            base = dict(model_id=ms.model_id, reference_model=ref_name, dataset=ds_name, n_runs=len(s.runs),
                        mean=s.mean, std=s.std, protocol="; ".join(differs))
            ref_ds = reference.datasets.get(ds_name)
            row = ref_ds.row(ref_name) if (ref_ds is not None and ref_name is not None) else None
            if ref_name is None:
                note = f"model id {ms.model_id} is not in the reference; map it with --as NAME"
            elif ref_ds is None:
                note = f"dataset {ds_name} is not in the reference"
            elif row is None or row.mean is None or row.std is None:
                note = (row.note if row is not None else None) or f"no reference value for {ref_name}"
            else:
                note = ""
            if note:
                rows.append(DiffRow(**base, status="no-reference", note=note))  # type: ignore[arg-type]
                continue
            assert row is not None and row.mean is not None and row.std is not None
            delta = s.mean - row.mean
            allowed = tolerance.allowed(row.mean, row.std, s.std)
            status = "within" if abs(delta) <= allowed + 1e-12 else "outside"
            missing = (f"run(s) {', '.join(map(str, s.missing_runs))} have no score "
                       f"({'; '.join(sorted(set(s.missing_runs.values())))})") if s.missing_runs else ""
            rows.append(DiffRow(**base, ref_mean=row.mean, ref_std=row.std, delta=delta,  # type: ignore[arg-type]
                                allowed=allowed, status=status, note=missing))
    from seam_repro.run.invariance import scored_comparability

    notes = scored_comparability([(ms.label, ms.model_id, ms.revision, (ms.extra.get("protocol") or {}).get("generation"))
                                  for ms in models])
    return DiffReport(reference.path, tolerance.describe(), rows, protocol, allow_protocol_mismatch, notes)


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
        status = r.status + (f" ({r.note})" if r.note else "") + (" [protocol differs]" if r.protocol else "")
        mine = "–" if r.status == "not-scored" else f"{r.mean:.2f} ± {r.std:.2f}"
        lines.append(f"| {name} | {r.dataset} | {r.n_runs} | {mine} | {ref} | {delta} | {allowed} | {status} |")
    n = Counter(r.status for r in report.rows)
    lines += ["", f"{n['within']} within, {n['outside']} outside, {n['no-reference']} without reference, "
              f"{n['not-scored']} not scored"]
    for model, differs in report.protocol.items():
        if differs:
            lines.append(f"Protocol of {model} differs from the reference: {'; '.join(differs)}"
                         + (" (allowed by --allow-protocol-mismatch)" if report.allow_protocol_mismatch else ""))
    lines += report.token_notes
    code = report.exit_code
    why = {EXIT_OK: "every compared cell is within", EXIT_OUTSIDE: "some cell is outside",
           EXIT_PROTOCOL: "the protocol differs from the reference's; pass --allow-protocol-mismatch to compare anyway",
           EXIT_NOTHING_COMPARED: "nothing was compared (no cell has a reference value)"}[code]
    lines.append(f"exit {code}: {why}")
    return "\n".join(lines)
