"""Further suites beyond SEAM that the same manifest machinery can replay.

* ``zeroscrolls`` — ZeroSCROLLS (Shaham et al., 2023, §3): prompt structure, context trimming to a
  token budget and the per-task metrics (ROUGE geometric mean, F1, accuracy, exponential
  similarity, concordance index).
* ``igcs`` — instruction-guided content selection (Amar et al., IGCS): answers as JSON arrays of
  source spans, grounding to the source, token-level precision/recall/F1 and document-level
  inference.
* ``metrics_registry`` — every metric of every suite with its extraction, instance computation and run
  aggregation (used by ``seam-repro metric`` and by the scoring loop).
"""
