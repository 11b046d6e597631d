"""Which factor moves the score: variance attribution, intervals, ranking and effects (issues 24, 35).

One idea per module:

* ``design``: the components a manifest's runs vary and one (model, dataset)'s observations;
* ``reml``: REML variance components, every fit checked for convergence and for a variance at 0;
* ``intervals``: intervals on the shares (generalised pivotal quantities or a parametric bootstrap);
* ``ranking``: P(model A ranks above B) with an interval, and ranking agreement against runs;
* ``effects``: per-level effects of recorded run-level choices and the gold-document position;
* ``analyse``: scored run folders to one result (every cell reported or skipped with one line);
* ``markdown``, ``plots``, ``report``: the report folder.

Callers import the module they need; this file holds no code.
"""
