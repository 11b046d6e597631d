"""Scoring (stage *scoring*): a run folder's predictions become instance scores and run summaries.

``extract`` takes the answer out of a model's raw text (upstream's port and the clean rules) and
``loop`` is the one scoring loop over every suite, driven by ``metrics.registry`` (each metric
says its target form and output validity, ``metrics.validity``). Callers import the module they need.
"""
