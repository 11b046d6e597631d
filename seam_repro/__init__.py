"""seam-repro: exact, resumable reproductions of the SEAM benchmark.

The pipeline, one module per stage: config -> sample -> manifest -> render -> generate -> parse ->
score -> aggregate -> report/diff. Heavy dependencies (torch, transformers) are imported lazily so
that `seam-repro --help`, `verify` and scoring start fast.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
