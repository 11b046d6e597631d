"""A replay's prompt records on disk, indexed by byte offset: what replay holds per prompt is its key,
its length and where its line starts, not its text.

Replay batches the prompts of a whole run by length (``replay.length_order``), so it must know every
prompt's length before the first batch; holding the rendered prompts for that made its memory grow
with the work (630 MiB at 64k prompts). Here each record is written once, as it is checked, as the
line prompts.jsonl holds; the spool then becomes that file, and each batch reads its lines back.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from seam_repro.errors import PredictionsError
from seam_repro.files import atomic, json_text
from seam_repro.files.atomic import OutputError
from seam_repro.generate.base import GenerationRequest
from seam_repro.manifest.prompts import checked_prompt_records

Key = tuple[str, int, str]


class PromptSpool:
    """Checked prompt records in a JSONL file (each line ``json_text.jsonl_line`` of its record), with
    per record its key, prompt length (characters, what batches are ordered by) and line offset.

    Made by :meth:`write`; :meth:`install` moves the file to where it is then read from (the run
    folder's prompts.jsonl: the same bytes, so the same offsets); :meth:`discard` removes it if it
    was never installed."""

    def __init__(self, path: Path, keys: list[Key], lengths: array, offsets: array, hashes: dict[Key, str]):
        self.path = path
        self.keys = keys
        self.lengths = lengths
        self.offsets = offsets  # len(keys) + 1 entries: line j is bytes offsets[j]:offsets[j + 1]
        self.hashes = hashes
        self.installed = False
        self._fh: Any = None

    @classmethod
    def write(cls, near: Path, records: Iterable[dict[str, Any]]) -> PromptSpool:
        """Spool ``records`` into a private file beside ``near`` (swept if a killed run left it),
        checking each with ``checked_prompt_records`` (fields, prompt hash, no duplicate). On any
        error, the file is removed."""
        fd, tmp = atomic.temp_sibling(Path(str(near) + ".prompts.jsonl"))
        keys: list[Key] = []
        lengths, offsets = array("q"), array("q", [0])
        hashes: dict[Key, str] = {}
        try:
            with os.fdopen(fd, "wb") as fh:
                for key, rec in checked_prompt_records(records, "prompt records", hashes):
                    line = json_text.jsonl_line(rec)
                    fh.write(line)
                    keys.append(key)
                    lengths.append(len(rec["prompt"]))
                    offsets.append(offsets[-1] + len(line))
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if isinstance(exc, OSError):
                raise OutputError(f"{tmp}: cannot write the prompts: {atomic.describe_os_error(exc)}; nothing was "
                                  "generated") from None
            raise
        return cls(Path(tmp), keys, lengths, offsets, hashes)

    def install(self, staged: Path, final: Path) -> None:
        """Move the spooled file to ``staged`` (renamed; copied across file systems), which its
        caller renames to ``final``; records are read from ``final`` from then on."""
        self.close()
        try:
            os.replace(self.path, staged)
        except OSError:
            shutil.copyfile(self.path, staged)
            os.unlink(self.path)
        self.path, self.installed = Path(final), True

    def discard(self) -> None:
        """Close, and remove the file unless it was installed (a run folder's prompts.jsonl stays)."""
        self.close()
        if not self.installed:
            with contextlib.suppress(OSError):
                os.unlink(self.path)

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def record(self, j: int) -> dict[str, Any]:
        """Record ``j``, read back from its line; a line that no longer holds it is refused."""
        if self._fh is None:
            self._fh = open(self.path, "rb")  # noqa: SIM115  (closed by close/discard)
        self._fh.seek(self.offsets[j])
        raw = self._fh.read(self.offsets[j + 1] - self.offsets[j])
        try:
            rec = json.loads(raw)
        except ValueError:
            rec = None
        if not isinstance(rec, dict) or (rec.get("dataset"), rec.get("run"), rec.get("instance_id")) != self.keys[j]:
            raise PredictionsError(f"{self.path}: line {j + 1} no longer holds {self.keys[j]}: the file changed "
                                   "while replay ran; rerun the same command to resume")
        return rec

    def request(self, j: int) -> GenerationRequest:
        return GenerationRequest.from_record(self.record(j))

    def requests(self, indices: Sequence[int]) -> Requests:
        return Requests(self, indices)


class Requests(Sequence[GenerationRequest]):
    """The generation requests of some spooled records, each read when asked for (``--batch-size
    auto`` looks at every prompt of a shard once)."""

    def __init__(self, spool: PromptSpool, indices: Sequence[int]):
        self.spool, self.indices = spool, indices

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self.spool.request(j) for j in self.indices[i]]
        return self.spool.request(self.indices[i])  # IndexError past the end: Sequence's iteration stops
