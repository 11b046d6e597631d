"""The floor under one prompt-generation command: what any Python program doing ``sample``'s or
``prompts``' job must spend before it validates, draws or renders anything.

It starts the interpreter, imports click and the standard modules the job needs, reads every input
file once, hashes it and decodes it (JSON, JSONL, CSV), hashes as many prompt bytes as the command
hashes and writes as many bytes as the command writes, with fsync. bench.py runs it beside
``sample`` + ``prompts`` so the table can say how much of their time is this floor and how much is
the kit's own work above it.

Usage: python benchmarks/io_floor.py sample|prompts INPUT_LIST HASHED_BYTES WRITTEN_BYTES OUT
(INPUT_LIST: a text file naming one input path per line)
"""

import csv
import hashlib
import json
import os
import sys
from pathlib import Path

import click  # noqa: F401  (the kit's CLI library: part of every command's start)


def main(which: str, input_list: str, hashed: int, written: int, out: str) -> None:
    if which == "sample":
        import random  # noqa: F401  (the draws)
    for name in Path(input_list).read_text(encoding="utf-8").splitlines():
        data = Path(name).read_bytes()
        hashlib.sha256(data).hexdigest()
        if name.endswith(".csv"):
            list(csv.reader(data.decode("utf-8").splitlines()))
        elif name.endswith(".jsonl"):
            [json.loads(line) for line in data.splitlines() if line]
        else:
            json.loads(data)
    prompt = b"x" * 4096
    for _ in range(hashed // len(prompt)):
        hashlib.sha256(prompt).hexdigest()
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, b"x" * written)
        os.fsync(fd)
    finally:
        os.close(fd)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
