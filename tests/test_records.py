"""The kit's records are named tuples, not dataclasses (``instances.py`` says why): what that
changes is pinned here, and prompt generation is guarded against defining a dataclass again."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_startup import PROBE

from seam_repro.config import GenerationSettings
from seam_repro.datasets import load_dataset
from seam_repro.instances import Document, Instance, LoadedDataset, Mention
from seam_repro.specs import parse_suite

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "manifests" / "fixtures"


@pytest.mark.parametrize("args", [
    ["sample", "manifests/smoke.config.json", "--out", "{tmp}/m.json", "--prompts-dir", "manifests/fixtures/prompts"],
    ["prompts", "manifests/smoke.json", "--out", "{tmp}/p.jsonl"],
])
def test_prompt_generation_imports_no_dataclasses(args: list[str], tmp_path: Path) -> None:
    """Each frozen dataclass compiles its methods when defined (0.5-2.7 ms per class per command,
    issue 16); ``sample`` and ``prompts`` define none, so they do not even import the module."""
    out = subprocess.run([sys.executable, "-c", PROBE.format(heavy=("dataclasses",)),
                          *(a.format(tmp=tmp_path) for a in args)], capture_output=True, text=True, cwd=REPO).stderr
    assert "LOADED [] 0" in out, out


def test_instance_extra_counts_in_equality_and_loads_stay_equal() -> None:
    """A dataclass left ``extra`` out of ``==``; a named tuple compares it. Equal source rows give
    equal extras, so two loads of the same files are still equal, instance by instance."""
    a = Instance("MultiNews", "test", "7", 7, (Document("0", "text"),), target="t", extra={"k": 1})
    assert a == a._replace(extra={"k": 1})
    assert a != a._replace(extra={"k": 2})
    for name, folder in (("ECB", "ecb"), ("SciCo", "scico"), ("FuseReviews", "fusereviews")):
        assert load_dataset(name, FIX / folder) == load_dataset(name, FIX / folder)


def test_empty_defaults_are_one_read_only_mapping() -> None:
    """A named tuple's default is shared by every record: the empty ``extra`` and ``files`` cannot
    be written through, so no record can change another's (the dataclass made a fresh dict)."""
    one, two = Instance("D", "test", "1", 1, ()), Instance("D", "test", "2", 2, ())
    assert one.extra == {} and one.extra is two.extra
    with pytest.raises(TypeError):
        one.extra["k"] = 1  # type: ignore[index]
    data = LoadedDataset("D", {"test": [one, two]})
    assert data.files == {} and data.split("test") == [one, two]
    with pytest.raises(TypeError):
        data.files["a.json"] = "0" * 64  # type: ignore[index]


def test_records_stay_frozen_and_keep_their_field_order() -> None:
    """Positional construction and attribute access are as the dataclasses had them; fields cannot
    be assigned."""
    m = Mention(10, "36_1ecb", (2, 3))
    assert (m.cluster_id, m.doc_id, m.token_ids, m.paragraph, m.start, m.end) == (10, "36_1ecb", (2, 3), -1, -1, -1)
    with pytest.raises(AttributeError):
        m.cluster_id = 11  # type: ignore[misc]
    assert GenerationSettings(0.8, 500, True, None, None, 3) == GenerationSettings()


def test_generation_settings_as_dict_keeps_the_recorded_keys_in_order() -> None:
    """Recorded with every prediction: ``_asdict`` gives the fields in the order ``asdict`` did."""
    assert list(GenerationSettings().as_dict().items()) == [
        ("temperature", 0.8), ("max_new_tokens", 500), ("do_sample", True), ("top_p", None), ("context_window", None)]


def test_template_options_count_in_spec_equality() -> None:
    """Specs whose templates read different options render differently, so they are unequal now
    (the dataclass ignored ``template_options`` in ``==``)."""
    base = {"task": "t", "default_split": "test", "loader": "seam_repro.datasets.igcs",
            "template": "seam_repro.render.igcs:TEMPLATE", "prompt_file": "p.json",
            "sampling": {"doc_slots": "max_documents", "prompt_draw": "first_row"}}

    def spec(**extra: object) -> object:
        return parse_suite({"datasets": {"D": {**base, **extra}}}, "s.json").spec("D")

    assert spec() == spec(template_options={})
    assert spec(template_options={"selection_type": "sentences"}) != spec()
