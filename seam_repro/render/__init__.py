"""Render prompts from recorded choices (stage *render*). One module per template family; which
template a dataset uses is declared by its spec (``data/suites/<suite>.json``), which the run
context carries, not coded here.

Rendering is pure: instance + recorded run choices → (prompt text, gold target). Rendering a whole
manifest is ``manifest.prompts.iter_rendered_parts`` (manifest imports render, never the reverse).
"""
