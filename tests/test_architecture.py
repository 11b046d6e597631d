"""The package's shape (issue 17): no import circle, and imports only go down the pipeline's layers.

Imports are read with ``ast`` from the source, lazy ones inside functions included: a circle that
is only hidden by a function-level import is still a circle in the design.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "seam_repro"

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # (layer, module prefixes), lowest first. A module may import its own layer and any lower one.
    ("foundation", ("seam_repro", "seam_repro.errors", "seam_repro.hashing", "seam_repro.network",
                    "seam_repro.instances", "seam_repro.verbosity")),
    # files/: one room per idea, each may use only those listed before it
    ("files: json text", ("seam_repro.files", "seam_repro.files.json_text")),
    ("files: bounded reading", ("seam_repro.files.reading",)),
    ("files: atomic writes", ("seam_repro.files.atomic",)),
    ("files: output guard", ("seam_repro.files.guard",)),
    ("specs", ("seam_repro.specs",)),
    ("config", ("seam_repro.config", "seam_repro.design")),
    ("datasets", ("seam_repro.datasets",)),
    ("sources", ("seam_repro.sources",)),  # resolves and checks data folders with the datasets' loaders
    ("sample", ("seam_repro.sample",)),
    ("render", ("seam_repro.render",)),
    ("manifest", ("seam_repro.manifest",)),
    ("generate", ("seam_repro.generate",)),
    ("run", ("seam_repro.run",)),
    ("metrics", ("seam_repro.metrics",)),
    ("scoring", ("seam_repro.scoring",)),
    ("analysis", ("seam_repro.analysis",)),
    ("view", ("seam_repro.view",)),
    ("commands", ("seam_repro.commands", "seam_repro.cli", "seam_repro.docs", "seam_repro.__main__")),
]

AWAITING_PHASE_2: dict[str, str] = {
    # Old modules that sit in the right layer but not yet in their stage's package (issue 17, phase 2).
}

KNOWN_UPWARD: dict[tuple[str, str], str] = {
    # Upward imports phase 2 removes; listed so that no new one can appear unnoticed.
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports (``from pkg import sub`` counts as importing ``sub``)."""
    mods = modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    targets.add(sub if sub in mods else node.module)
            elif isinstance(node, ast.ImportFrom) and node.level:
                raise AssertionError(f"{path}: relative import; the package uses absolute imports")
        graph[name] = {t for t in targets if t in mods and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer_of(module: str) -> int:
    """Index of the layer whose longest prefix matches ``module``."""
    best, best_len = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = i, len(prefix)
    if best < 0:
        raise AssertionError(f"{module} is in no layer of tests/test_architecture.py::LAYERS")
    return best


def test_cycle_finder_finds_a_planted_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle() -> None:
    assert cycles(import_graph()) == []


def test_every_module_has_a_layer() -> None:
    for name in modules():
        layer_of(name)


def test_imports_only_go_down_the_layers() -> None:
    upward = {(a, b) for a, targets in import_graph().items() for b in targets if layer_of(b) > layer_of(a)}
    new = sorted(upward - set(KNOWN_UPWARD))
    assert not new, "upward imports (a lower layer importing a higher one):\n" + "\n".join(
        f"  {a} ({LAYERS[layer_of(a)][0]}) -> {b} ({LAYERS[layer_of(b)][0]})" for a, b in new)
    gone = sorted(set(KNOWN_UPWARD) - upward)
    assert not gone, f"fixed upward imports still listed in KNOWN_UPWARD (remove them): {gone}"


def test_phase_2_list_names_only_modules_that_still_wait() -> None:
    """Moving a module into its stage package must also drop it from AWAITING_PHASE_2."""
    mods = modules()
    assert sorted(m for m in AWAITING_PHASE_2 if m not in mods) == []


def test_commands_are_the_top_layer() -> None:
    assert LAYERS[-1][0] == "commands"
    graph = import_graph()
    below = [m for m in graph if layer_of(m) < len(LAYERS) - 1]
    assert not [(m, t) for m in below for t in graph[m] if layer_of(t) == len(LAYERS) - 1]


@pytest.mark.parametrize("stage", ["manifest", "analysis", "sources", "run", "metrics", "scoring"])
def test_stage_packages_reexport_nothing(stage: str) -> None:
    """A stage package's __init__ holds no code: callers import the module they need."""
    tree = ast.parse((PKG / stage / "__init__.py").read_text(encoding="utf-8"))
    assert all(isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) for n in tree.body)


def test_one_profile_list() -> None:
    """The manifest schema's profile enum (data) equals the one list in code."""
    from seam_repro.config import PROFILES

    schema = json.loads((PKG / "data" / "manifest.schema.json").read_text(encoding="utf-8"))
    assert tuple(schema["properties"]["profile"]["enum"]) == PROFILES
    for suite in sorted((PKG / "data" / "suites").glob("*.json")):
        for name, spec in json.loads(suite.read_text(encoding="utf-8"))["datasets"].items():
            assert set(spec["metrics"]) <= set(PROFILES), f"{suite.name}: {name}: metrics keyed by unknown profile"


def test_rendering_never_looks_a_dataset_up_by_name() -> None:
    """The render context carries the dataset's spec: no render module reaches for the suite files."""
    for path in sorted((PKG / "render").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        used |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        used |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        assert not used & {"load_suite", "shipped_suites", "parse_suite"}, path.name


RUN_FOLDER_FILES = {"run.json", "manifest.json", "prompts.jsonl", "predictions", "scores"}
KNOWN_RUN_FOLDER_PATHS: dict[str, str] = {
    # Modules (by prefix) that still build run-folder paths themselves; run/store.py is the one that should.
}


def run_folder_joins(source: str) -> list[int]:
    """Lines where ``source`` joins a run folder's file name onto a path (``x / "run.json"``)."""
    return sorted(node.lineno for node in ast.walk(ast.parse(source))
                  if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
                  and isinstance(node.right, ast.Constant) and node.right.value in RUN_FOLDER_FILES)


def test_run_folder_finder_sees_a_path_join() -> None:
    assert run_folder_joins('p = run_dir / "run.json"\nq = "run.json"\nr = d / "other" / "scores"') == [1, 3]


def test_only_the_store_builds_run_folder_paths() -> None:
    """``run/store.py`` is the code that touches a run folder's files; every other module asks it."""
    found = {m: lines for m, path in modules().items() if m != "seam_repro.run.store"
             if (lines := run_folder_joins(path.read_text(encoding="utf-8")))}
    known = {m for m in found if any(m == k or m.startswith(k + ".") for k in KNOWN_RUN_FOLDER_PATHS)}
    assert not {m: found[m] for m in sorted(set(found) - known)}, "build run-folder paths with run/store.py"
    gone = sorted(k for k in KNOWN_RUN_FOLDER_PATHS if not any(m == k or m.startswith(k + ".") for m in found))
    assert not gone, f"no longer building run-folder paths (remove from KNOWN_RUN_FOLDER_PATHS): {gone}"
