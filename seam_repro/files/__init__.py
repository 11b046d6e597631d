"""The kit's I/O rooms, one idea each: ``reading`` (bounded JSON/JSONL reading with one-line
errors), ``json_text`` (the kit's JSON text form), ``atomic`` (atomic writes, and the sweep of what
a killed writer left) and ``guard`` (a command's outputs kept off its inputs).

Why one folder: every command reads user-supplied JSON (manifests, configs, prediction lines,
run.json, summaries, bundles) and writes artifacts that other commands trust. Reading must never
raise a traceback on hostile input (deep nesting, binary junk, NaN) and writing must never leave a
half-written file behind (kill, full disk, read-only folder): a reader sees the old file or the
new one, never a torn one.
"""
