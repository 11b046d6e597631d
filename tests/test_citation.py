"""CITATION.cff: valid CFF 1.2.0 (official JSON schema), cites the kit and asks for the SEAM paper."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
PAPERS = Path("/work/shared/papers")


def _plain(obj: Any) -> Any:
    """YAML dates as ISO strings, the form the CFF schema's string+format rules expect."""
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    return obj.isoformat() if isinstance(obj, dt.date) else obj


@pytest.fixture(scope="module")
def cff() -> dict[str, Any]:
    yaml = pytest.importorskip("yaml")
    return _plain(yaml.safe_load((REPO / "CITATION.cff").read_text("utf-8")))


def test_valid_against_the_cff_1_2_0_schema(cff: dict[str, Any]) -> None:
    import jsonschema

    schema = json.loads((REPO / "tests" / "fixtures" / "cff" / "schema-1.2.0.json").read_text("utf-8"))
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())
    errors = sorted(validator.iter_errors(cff), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]
    broken = dict(cff, **{"cff-version": "1.2.0", "authors": []})
    assert list(validator.iter_errors(broken))  # the check can fail: an empty author list is invalid


def test_cites_kit_and_paper(cff: dict[str, Any]) -> None:
    from seam_repro import __version__

    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software" and cff["version"] == __version__
    assert "SEAM paper" in cff["message"]
    paper = cff["preferred-citation"]
    assert paper["title"].startswith("SEAM: A Stochastic Benchmark for Multi-Document Tasks")
    assert "2406.16086" in paper["url"]


def test_paper_authors_match_the_paper() -> None:
    """Independent check against the paper's own title page (when the paper text is available)."""
    yaml = pytest.importorskip("yaml")
    texts = [p.read_text("utf-8", "replace") for p in sorted(PAPERS.glob("*.txt"))] if PAPERS.is_dir() else []
    page = next((t for t in texts if re.search(r"SEAM: A Stochastic Benchmark", t, re.I)), None)
    if page is None:
        pytest.skip("SEAM paper text not available")
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text("utf-8"))
    head = page[:1500]
    names = [f"{a['given-names']} {a['family-names']}" for a in cff["preferred-citation"]["authors"]]
    assert all(n in head for n in names), names
    found = re.findall(r"(Gili Lior|Avi Caciularu|Arie Cattan|Shahar Levy|Ori Shapira|Gabriel Stanovsky)", head)
    assert list(dict.fromkeys(found)) == names  # same authors, same order
