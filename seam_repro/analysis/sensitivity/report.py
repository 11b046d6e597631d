"""The report folder: Markdown, JSON and both figures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from seam_repro.analysis.sensitivity.markdown import markdown
from seam_repro.analysis.sensitivity.plots import plot_agreement, plot_shares

REPORT_FILES = ("sensitivity.md", "sensitivity.json", "variance_shares.png", "ranking_agreement.png")


def write_sensitivity_report(result: Mapping[str, Any], out_dir: Any) -> list[Any]:
    """Write the Markdown tables, the JSON and both plots into ``out_dir``; returns the paths."""
    import json
    from pathlib import Path

    from seam_repro.files.atomic import atomic_write_text, ensure_dir

    out = Path(out_dir)
    ensure_dir(out)
    md, js, shares_png, agree_png = (out / n for n in REPORT_FILES)
    atomic_write_text(md, markdown(result) + "\n")
    atomic_write_text(js, json.dumps(result, indent=1, sort_keys=True) + "\n")
    plot_shares(result, shares_png)
    plot_agreement(result, agree_png)
    return [md, js, shares_png, agree_png]
