"""Stage *manifest*: the sealed file that freezes a benchmark's choices and hashes, and its checks.

``format`` (schema, seal, digests, load), ``prompts`` (render every recorded instance, prompt
store), ``freeze`` (``sample``/``freeze``: draw, render, seal, write), ``verify`` (re-derive and
compare), ``trust`` (every consumer's checks against a run's manifest) and ``seeds``
(``seeds/<name>.json`` records). Import the module you need; this file re-exports nothing.
"""
