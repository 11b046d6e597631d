"""Reference score tables (the SEAM paper's Table 3) as typed, validated data.

The packaged table ``data/reference/paper_table3.json`` transcribes Table 3 of Lior et al. (2024):
per dataset and model the mean and population std over 10 runs (x100), the rank and the ASO
dominance over the next-ranked model. Only these summary statistics are published, never the
per-run scores, so reports that mix reference models with new runs must say so (see ``report.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from seam_repro.errors import InputError
from seam_repro.files.reading import is_a, is_finite_number, parse_json_text, read_json

PAPER_DATASET_NAMES: dict[str, str] = {"OpenAsp": "OpenASP", "MuSiQue": "MusiQue", "ECB+": "ECB"}
"""Paper column titles that differ from the kit's (upstream generate.json) dataset names."""


@dataclass(frozen=True)
class ReferenceRow:
    """One (dataset, model) cell of the reference table."""

    model: str
    rank: int | None
    mean: float | None
    """Mean over runs, 0-100 scale; ``None`` where the paper prints NA."""
    std: float | None
    """Population std over runs (ddof=0, as upstream ``np.std``)."""
    dominance_over_next: float | None
    note: str | None = None


@dataclass(frozen=True)
class ReferenceDataset:
    name: str
    paper_name: str
    metric: str
    """The paper's description of the metric (shown in notes, too long for an axis)."""
    rows: tuple[ReferenceRow, ...]
    metric_key: str = ""
    """The kit's metric name (``rouge_geo``, ...), the same word a scored run shows for the dataset."""

    def row(self, model: str) -> ReferenceRow | None:
        """The row of ``model`` or ``None`` when the table has no such model."""
        return next((r for r in self.rows if r.model == model), None)


@dataclass(frozen=True)
class ReferenceTable:
    """A table of published scores (``--reference``): its models, rows per dataset and protocol."""

    source: str
    path: str
    models: dict[str, str]
    """Reference model name -> Hugging Face id."""
    datasets: dict[str, ReferenceDataset]
    protocol: dict[str, Any] | None = None
    """The reference's protocol (``"protocol"`` in the file): what a run must share to be compared."""

    def name_for_hf_id(self, hf_id: str) -> str | None:
        """Map a run's model id to the reference row name (case-insensitive, revision suffix ignored)."""
        base = hf_id.split("@", 1)[0].strip().lower()
        return next((name for name, ref_id in self.models.items() if ref_id.lower() == base), None)


def _num(path: str, value: Any, record: str, field: str) -> float | None:
    if value is None:
        return None
    if not is_finite_number(value):
        raise InputError(path, f"expected a finite number or null, got {value!r}", record, field)
    return float(value)


def _objects(path: str, data: dict[str, Any], key: str, shape: str, inner: str, kind: type, what: str,
             ) -> dict[str, Any]:
    """``data[key]``, checked to be a non-empty object whose values are objects holding ``inner``."""
    raw = data.get(key)
    if not isinstance(raw, dict) or not raw:
        raise InputError(path, f"expected a non-empty object {shape}", field=key)
    for name, value in raw.items():
        if not isinstance(value, dict) or not isinstance(value.get(inner), kind):
            raise InputError(path, f"expected an object with {what}", f"{key}.{name}", inner)
    return raw


def parse_reference(data: Any, path: str) -> ReferenceTable:
    """Validate the reference JSON shape and build the typed table."""
    if not isinstance(data, dict):
        raise InputError(path, "expected a JSON object with 'models' and 'datasets'")
    models = {name: info["hf_id"] for name, info in _objects(
        path, data, "models", "{name: {'hf_id': ...}}", "hf_id", str, "a string 'hf_id'").items()}
    datasets: dict[str, ReferenceDataset] = {}
    for key, ds in _objects(path, data, "datasets", "{dataset: {'rows': [...]}}", "rows", list, "a 'rows' list").items():
        name = PAPER_DATASET_NAMES.get(key, key)
        rows = []
        for i, r in enumerate(ds["rows"]):
            rec = f"datasets.{key}.rows[{i}]"
            if not isinstance(r, dict) or not isinstance(r.get("model"), str):
                raise InputError(path, "expected an object with a string 'model'", rec, "model")
            if r["model"] not in models:
                raise InputError(path, f"model {r['model']!r} is not listed under 'models'", rec, "model")
            rank = r.get("rank")
            if rank is not None and not is_a(rank, int):
                raise InputError(path, f"expected an integer or null, got {rank!r}", rec, "rank")
            mean, std = _num(path, r.get("mean"), rec, "mean"), _num(path, r.get("std"), rec, "std")
            if (mean is None) != (std is None):
                raise InputError(path, "mean and std must both be numbers or both null", rec, "std")
            if std is not None and std < 0:
                raise InputError(path, f"expected std >= 0, got {std}", rec, "std")
            dom = _num(path, r.get("dominance_over_next"), rec, "dominance_over_next")
            rows.append(ReferenceRow(r["model"], rank, mean, std, dom, r.get("note")))
        datasets[name] = ReferenceDataset(name, str(ds.get("paper_name", key)), str(ds.get("metric", "")),
                                          tuple(rows), str(ds.get("metric_key", "")))
    protocol = data.get("protocol")
    if protocol is not None and not isinstance(protocol, dict):
        raise InputError(path, "expected an object of protocol fields", field="protocol")
    return ReferenceTable(str(data.get("source", "")), path, models, datasets, protocol)


def load_reference(spec: str | Path = "paper") -> ReferenceTable:
    """Load ``paper`` (the packaged Table 3) or a JSON file of the same shape."""
    if str(spec) == "paper":
        res = resources.files("seam_repro").joinpath("data/reference/paper_table3.json")
        return parse_reference(parse_json_text(res.read_text(encoding="utf-8"), "paper_table3.json"),
                               "paper_table3.json")
    path = Path(spec)
    if not path.is_file():
        raise InputError(path, "reference not found; use 'paper' or a JSON file shaped like paper_table3.json")
    return parse_reference(read_json(path, what="reference", expect=None), str(path))
