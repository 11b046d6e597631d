"""Stage *analysis*: from scores to conclusions. ``aggregate`` (run and model summaries), ``aso``
(Almost Stochastic Order rankings), ``reference`` (published tables), ``report`` and ``plots``
(Markdown/JSON/PNG), ``diff`` (a run against a reference, with tolerances) and ``submit``
(leaderboard bundles). Import the module you need; this file re-exports nothing.
"""
