"""Domain errors. Each carries a one-line message that names the file, the field and the
expected form; the CLI prints it once and exits with status 2 (bad input)."""

from __future__ import annotations


class SeamReproError(Exception):
    """Base class: a problem with the user's input or environment, not a bug in the kit."""

    exit_code = 2


class InputError(SeamReproError):
    """A malformed file or record. Message form: ``<file>: <record>: <field>: <problem>``."""

    def __init__(self, path: object, problem: str, record: object | None = None, field: str | None = None):
        self.path, self.record, self.field = str(path), record, field
        parts = [self.path]
        if record is not None:
            parts.append(f"record {record}")
        if field is not None:
            parts.append(f"field '{field}'")
        parts.append(problem)
        super().__init__(": ".join(parts))


class HashMismatchError(SeamReproError):
    """A file whose sha256 differs from the pinned value."""

    def __init__(self, artifact: str, path: object, expected: str, actual: str):
        self.artifact, self.path, self.expected, self.actual = artifact, str(path), expected, actual
        super().__init__(f"{artifact}: sha256 mismatch for {path}: expected {expected}, got {actual}")


class MissingDataError(SeamReproError):
    """A source that is needed but neither cached nor given with --data-dir."""


class ManifestError(SeamReproError):
    """A manifest that violates its schema, has a wrong digest, or names unavailable data."""


class PredictionsError(SeamReproError):
    """A predictions store that does not belong to the manifest/model being replayed."""


class PrerequisiteError(SeamReproError):
    """An optional dependency is missing; the message carries the install command."""


def version_mismatch(what: str, found: object, expected: int, written_by: object = None,
                     remedy: str = "") -> str:
    """One line for a file whose format version (``schema_version``, ``bundle_version``) this kit
    does not read: what was found, which seam-repro wrote it (when the file says), and that this
    kit's version is the one that writes the expected format, so the reader knows which side to
    change (an older file: re-create it; a newer one: upgrade the kit)."""
    from seam_repro import __version__

    who = f" (written by seam-repro {written_by})" if isinstance(written_by, str) and written_by else ""
    msg = f"no {what} found{who}" if found is None else f"{what} {found!r} found{who}"
    msg += f"; seam-repro {__version__} (this kit) reads and writes {what} {expected}"
    if isinstance(found, int) and not isinstance(found, bool) and found > expected:
        return msg + "; a newer seam-repro wrote this file: upgrade seam-repro (pip install -U seam-repro) to read it"
    return msg + (f"; {remedy}" if remedy else "")
