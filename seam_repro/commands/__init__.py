"""One module per command group; each command parses options, calls one library function and prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click


class ManifestPath(click.ParamType):
    """A MANIFEST argument: an existing file, or the name of a manifest shipped in the package
    (``smoke``, ``paper``, ...), so an installed kit runs ``seam-repro replay smoke`` with no clone."""

    name = "manifest"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Path:
        from seam_repro.manifest.shipped import resolve_manifest, shipped_names

        if isinstance(value, Path):
            value = str(value)
        found = resolve_manifest(value)
        if found is None:
            if Path(value).is_dir():
                self.fail(f"'{value}' is a folder; expected a manifest file", param, ctx)
            self.fail(f"'{value}' is neither a file nor a shipped manifest (shipped: {', '.join(shipped_names())})",
                      param, ctx)
        return found


MANIFEST = ManifestPath()
