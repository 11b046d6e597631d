"""``seam-repro datasets check --data-dir DIR``: per dataset, which folder was found under DIR, the
size of every split, and what is missing (the folder, the evaluated split, the prompt file)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from seam_repro.errors import SeamReproError


@dataclass
class DatasetCheck:
    """What ``datasets check`` found for one dataset."""

    name: str
    evaluated_split: str
    folder: Path | None = None
    splits: dict[str, int] = field(default_factory=dict)
    files: int = 0
    missing: list[str] = field(default_factory=list)
    prompt_file: Path | None = None

    @property
    def ok(self) -> bool:
        return not self.missing


def check_data_dir(data_dir: Path, suite: str = "seam", prompts_dir: Path | None = None) -> list[DatasetCheck]:
    """Find and load every dataset of ``suite`` under ``data_dir`` (the loaders' own validation runs,
    so a folder that is found but malformed is reported with the loader's one-line error)."""
    from seam_repro.datasets.layout import describe_expected, find_dataset_dir
    from seam_repro.sources.resolve import read_prompt_file
    from seam_repro.specs import load_suite

    spec = load_suite(suite)
    out = []
    for name, ds in spec.datasets.items():
        res = DatasetCheck(name, ds.default_split, find_dataset_dir(Path(data_dir), name))
        if res.folder is None:
            res.missing.append(f"data: expected {describe_expected(name)}")
        else:
            try:
                loaded = spec.spec(name).load(res.folder)
            except SeamReproError as exc:
                res.missing.append(f"readable data: {exc}")
            else:
                res.splits = {k: len(v) for k, v in loaded.splits.items()}
                res.files = len(loaded.files)
                if ds.default_split not in loaded.splits:
                    res.missing.append(f"split '{ds.default_split}' (the one evaluated); found "
                                       f"{', '.join(loaded.splits) or 'none'}")
                elif not loaded.splits[ds.default_split]:
                    res.missing.append(f"instances in split '{ds.default_split}' (it is empty)")
        if prompts_dir is not None:
            candidate = Path(prompts_dir) / ds.prompt_file
            if not candidate.is_file():
                res.missing.append(f"prompt file {candidate}")
            else:  # read as sample/replay will: a truncated or malformed file is not "found"
                try:
                    read_prompt_file(candidate, spec.spec(name))
                except SeamReproError as exc:
                    res.missing.append(f"readable prompt file: {exc}")
                else:
                    res.prompt_file = candidate
        out.append(res)
    return out


def render_checks(checks: list[DatasetCheck], data_dir: Path) -> str:
    """Plain-text report: one block per dataset."""
    lines = [f"data dir: {data_dir}"]
    width = max((len(c.name) for c in checks), default=0) + 1
    for c in checks:
        lines.append(f"{c.name:<{width}}{'ok' if c.ok else 'MISSING'}")
        if c.folder is not None:
            lines.append(f"  found:   {c.folder}")
        if c.splits:
            sizes = ", ".join(f"{k} {v}" + (" (evaluated)" if k == c.evaluated_split else "")
                              for k, v in c.splits.items())
            lines.append(f"  splits:  {sizes}")
        if c.prompt_file is not None:
            lines.append(f"  prompts: {c.prompt_file}")
        lines += [f"  missing: {m}" for m in c.missing]
    lines.append(f"{sum(c.ok for c in checks)} of {len(checks)} datasets complete")
    return "\n".join(lines)
