"""Which bytes of upstream's unflushed ``/tmp/gold.conll`` the perl scorer could read.

Upstream SEAM's ``evaluation_classes/coreference.py::Coref._evaluate`` (6ad83f4) writes the gold
file with ``target_file = open("/tmp/gold.conll", "w")`` and one ``write`` per line, then runs
``perl scorer.pl all /tmp/gold.conll /tmp/predictions.conll`` while ``target_file`` is still open
and unflushed (the predictions file *is* closed). perl therefore reads only what CPython had
already handed to the operating system. In CPython 3.11 (C ``_io``):

* ``TextIOWrapper.write`` collects encoded text in a pending list and passes it on once it holds
  ``chunk_size`` = 8192 bytes; a write that would push the pending bytes past 8192 first passes on
  what is pending;
* ``BufferedWriter.write`` (buffer size = the file's ``st_blksize``, the file system block size:
  4096 on ext4/xfs/tmpfs) keeps data that fits in its free space; otherwise it writes its buffer
  to the file, then writes the new data straight to the file if it exceeds the buffer size, else
  keeps it.

So a gold file under ~8 KiB is empty for perl (CoNLL-F1 0.0), and a larger one loses its tail:
whole documents, and possibly part of one (cut mid-line). ``bytes_on_disk`` replays these two
rules (tests check it against CPython writing real files read from another process).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from seam_repro.metrics.conll_io import gold_assignment

TEXT_CHUNK_SIZE = 8192
"""CPython's ``TextIOWrapper._CHUNK_SIZE`` default."""
DEFAULT_BLOCK_SIZE = 4096
"""``st_blksize`` of ext4/xfs/tmpfs, hence the ``BufferedWriter`` size ``open()`` picks there."""

_COMPLETE_LAST_LINE = re.compile(rb"#\s*begin document .*|[0-9]+\t\([0-9]+\)|#\s*end document", re.DOTALL)


def bytes_on_disk(write_sizes: Iterable[int], block_size: int = DEFAULT_BLOCK_SIZE) -> int:
    """Bytes in the file after ``write`` calls of these encoded sizes on ``open(path, "w")`` whose
    buffer is ``block_size``, before any flush or close."""
    if block_size < 1:
        raise ValueError(f"block size must be positive, got {block_size}")
    pending = on_disk = buffered = 0

    def buffered_write(n: int) -> None:
        nonlocal on_disk, buffered
        if n <= block_size - buffered:
            buffered += n
            return
        on_disk += buffered
        buffered = 0
        if n > block_size:
            on_disk += n
        else:
            buffered = n

    for size in write_sizes:
        if pending + size > TEXT_CHUNK_SIZE:
            if pending:
                buffered_write(pending)
            pending = size
        else:
            pending += size
        if pending >= TEXT_CHUNK_SIZE:
            buffered_write(pending)
            pending = 0
    return on_disk


def upstream_gold_writes(gold: Sequence[tuple[str, Sequence[Sequence[int]]]]) -> list[bytes]:
    """The exact ``write`` arguments of upstream's gold loop (UTF-8), one per call."""
    writes = []
    for sample_id, clusters in gold:
        assignment = gold_assignment(clusters, "gold", sample_id)
        writes.append(f"#begin document id={sample_id}\n".encode())
        writes.extend(f"{m}\t({assignment[m]})\n".encode() for m in sorted(assignment))
        writes.append(b"#end document\n")
    return writes


def perl_view(data: bytes) -> bytes:
    """``data`` as the scorer's reader uses it: a cut last line that is not a whole gold line
    (``12\\t(3`` opens a mention that never closes; perl drops it at end of file without error; a
    cut ``#end docu`` or ``12`` is a token with no mention) is removed. A cut ``#begin document id=1``
    stays: perl reads it as an (empty) document of that name."""
    cut = data.rfind(b"\n") + 1
    if cut == len(data) or _COMPLETE_LAST_LINE.fullmatch(data[cut:]):
        return data
    return data[:cut]


def published_gold(gold: Sequence[tuple[str, Sequence[Sequence[int]]]],
                   block_size: int = DEFAULT_BLOCK_SIZE) -> tuple[bytes, int]:
    """(the gold bytes perl read, as ``perl_view`` hands them to the reader; the whole file's size)."""
    writes = upstream_gold_writes(gold)
    whole = b"".join(writes)
    return perl_view(whole[: bytes_on_disk(map(len, writes), block_size)]), len(whole)
