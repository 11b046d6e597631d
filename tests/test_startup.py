"""Start-up cost stays low: light commands do not import the heavy libraries, and the manifest
schema check (fastjsonschema) accepts exactly what jsonschema accepts."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from seam_repro.manifest.format import SCHEMA_PATH
from seam_repro.schema_check import conforms

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "pandas", "scipy.optimize", "matplotlib", "rouge_score", "spacy", "jsonschema")
PROBE = """
import sys
sys.argv = ["seam-repro"] + sys.argv[1:]
from seam_repro.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print("LOADED", sorted(m for m in {heavy!r} if m in sys.modules), code, file=sys.stderr)
"""

CONLL = "#begin document (d); part 000\nd\t0\t0\tA\t(1)\nd\t0\t1\tB\t(1)\nd\t0\t2\tC\t-\n#end document\n"


@pytest.mark.parametrize("args", [["replay", "--help"], ["score", "--help"]])
def test_cli_entry_points_import_nothing_heavy(args: list[str]) -> None:
    loaded = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), *args], capture_output=True, text=True, cwd=REPO
    ).stderr
    assert "LOADED [] 0" in loaded, loaded


def test_conll_score_imports_nothing_heavy(tmp_path: Path) -> None:
    key = tmp_path / "k.conll"
    key.write_text(CONLL)
    out = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), "conll-score", str(key), str(key)],
                         capture_output=True, text=True, cwd=REPO).stderr
    assert "LOADED [] 0" in out, out


FIXED_COST = ("importlib.resources", "numpy")
"""Modules that the prompt-generation and start-up paths do not need and that cost more than a
share of a millisecond: numpy (scoring). The standard library is imported at the top of the
module that uses it (a few milliseconds in all, under 1 % of any command at the paper's scale)."""


@pytest.mark.parametrize(("args", "allowed"), [
    (["--version"], ()),
    (["--help"], ()),
    (["verify", "manifests/smoke.json"], ()),
    (["prompts", "manifests/smoke.json", "--out", "{tmp}/p.jsonl"], ()),
    (["sample", "manifests/smoke.config.json", "--out", "{tmp}/m.json", "--prompts-dir", "manifests/fixtures/prompts"],
     ()),
])
def test_start_up_imports_only_what_the_command_uses(args: list[str], allowed: tuple[str, ...], tmp_path: Path) -> None:
    """No command imports a heavy library it does not use."""
    watched = tuple(m for m in HEAVY + FIXED_COST if m not in allowed)
    out = subprocess.run([sys.executable, "-c", PROBE.format(heavy=watched), *(a.format(tmp=tmp_path) for a in args)],
                         capture_output=True, text=True, cwd=REPO).stderr
    assert "LOADED [] 0" in out, out


def test_editable_install_needs_no_import_hook() -> None:
    """``make install``'s ``pip install -e .`` gives a plain path .pth only when the package layout
    is spelled out (setuptools' "simple layout" rule); without it every Python start in .venv loads
    setuptools' finder (~12 ms of CPU: ``python -c pass`` 22 -> 10 ms measured). Wheels are unchanged."""
    import tomllib

    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert setuptools["package-dir"] == {"": "."}
    assert setuptools["packages"]["find"]["include"] == ["seam_repro*"]


def _jsonschema_ok(doc: object) -> bool:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return not list(jsonschema.Draft202012Validator(schema).iter_errors(doc))


def _mutations(manifest: dict) -> list[object]:
    """The manifest broken (and not broken) in ways each keyword of the schema decides."""
    out: list[object] = [manifest, [], "x", {}]
    edits = [
        ("schema_version", 2), ("schema_version", 1.0), ("schema_version", True), ("profile", "other"),
        ("frozen", "yes"), ("kit_version", 1), ("digest", "ABC"), ("digest", "0" * 63), ("prompt_digest", None),
        ("prompt_digest", 5), ("extra_field", 1), ("sources", []), ("runs", {}), ("command", None),
    ]
    for field, value in edits:
        m = copy.deepcopy(manifest)
        m[field] = value
        out.append(m)
    for field in ("config", "runs", "digest"):
        m = copy.deepcopy(manifest)
        del m[field]
        out.append(m)
    cfg_edits = [("num_different_runs", 0), ("num_different_runs", 1.5), ("max_instances", -2), ("datasets", []),
                 ("max_instances_key", "other"), ("max_instances_key", None), ("notes", [1]), ("models", "m"),
                 ("suite", ""), ("random_seed", "42")]
    for field, value in cfg_edits:
        m = copy.deepcopy(manifest)
        m["config"][field] = value
        out.append(m)
    for field, value in [("temperature", -1), ("max_new_tokens", 0), ("top_p", "0.9"), ("batch_size", 0),
                         ("do_sample", 1)]:
        m = copy.deepcopy(manifest)
        m["config"]["generation"][field] = value
        out.append(m)
    run_edits = [("run", -1), ("paraphrase_index", -2), ("demo_indices", [-1]), ("doc_order", ["0"]),
                 ("sample_seed", None), ("sample_seed", 1.5), ("extra", 1), ("prompt_digest", "x")]
    for field, value in run_edits:
        m = copy.deepcopy(manifest)
        m["runs"][0][field] = value
        out.append(m)
    inst_edits = [("id", ""), ("id", 3), ("gen_seed", -1), ("mention_ids", ["1"]), ("prompt_sha256", "z" * 64),
                  ("extra", 0)]
    for field, value in inst_edits:
        m = copy.deepcopy(manifest)
        m["runs"][0]["instances"][0][field] = value
        out.append(m)
    m = copy.deepcopy(manifest)
    del m["runs"][0]["instances"][0]["target_sha256"]
    out.append(m)
    return out


@pytest.mark.parametrize("name", ["smoke.json", "igcs-mini.json", "zeroscrolls-mini.json"])
def test_fast_schema_check_agrees_with_jsonschema(name: str) -> None:
    path = REPO / "manifests" / name
    if not path.exists():
        pytest.skip(f"{path} absent")
    docs = _mutations(json.loads(path.read_text(encoding="utf-8")))
    verdicts = [(conforms(d, SCHEMA_PATH), _jsonschema_ok(d)) for d in docs]
    assert verdicts[0] == (True, True)
    assert any(v == (False, False) for v in verdicts)
    for i, (fast, slow) in enumerate(verdicts):
        assert fast == slow, f"mutation {i}: fastjsonschema says {fast}, jsonschema says {slow}"


OPENS = """
import collections, sys
seen = collections.Counter()
def hook(event, args):
    if event == "open" and isinstance(args[0], str) and "/manifests/fixtures/" in args[0]:
        seen[args[0]] += 1
sys.addaudithook(hook)
sys.argv = ["seam-repro"] + sys.argv[1:]
from seam_repro.cli import main
try:
    main()
except SystemExit:
    pass
print("OPENED-TWICE", sorted(p for p, n in seen.items() if n > 1), len(seen), file=sys.stderr)
"""


@pytest.mark.parametrize("command", [["verify", "manifests/smoke.json"], ["prompts", "manifests/smoke.json", "-o", "-"]])
def test_each_data_and_prompt_file_is_read_once(command: list[str]) -> None:
    """Provenance hashes come from the bytes that were parsed, not from a second read."""
    err = subprocess.run([sys.executable, "-c", OPENS, *command], capture_output=True, text=True, cwd=REPO).stderr
    line = next(x for x in err.splitlines() if x.startswith("OPENED-TWICE"))
    assert line.startswith("OPENED-TWICE [] ") and int(line.rsplit(" ", 1)[1]) >= 20, err


def test_edited_schema_is_compiled_afresh(tmp_path: Path) -> None:
    schema = json.loads(Path(SCHEMA_PATH).read_text(encoding="utf-8"))
    schema["properties"]["frozen"] = {"const": True}
    edited = tmp_path / "manifest.schema.json"
    edited.write_text(json.dumps(schema), encoding="utf-8")
    assert not conforms({**json.loads((Path(__file__).parents[1] / "manifests" / "smoke.json").read_text()),
                         "frozen": False}, edited)
