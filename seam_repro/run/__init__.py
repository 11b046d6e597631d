"""Stage *run*: a manifest's prompts through a backend into a run folder.

``replay`` (generate every prompt, resumable), ``store`` (the run folder's files: ``run.json``,
``prompts.jsonl``, ``predictions/``; crash-safe lines), ``shard`` (split a replay over machines and
merge the parts), ``importer`` (outputs made elsewhere become a run folder) and ``prepare`` (make
an unfrozen manifest whole first: fetch, freeze, verify). Import the module you need; this file
re-exports nothing.
"""
