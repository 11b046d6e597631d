"""Metrics (stage *metrics*): one module per metric family and the registry that names them.

``registry`` lists every metric of every suite with its response extraction, instance computation
and run aggregation; ``rouge``, ``musique``, ``coref``/``coref_parse``/``conll_io``/``unflushed``
(CoNLL scoring), ``fic``, ``zeroscrolls`` and ``igcs`` compute them; ``literal`` and ``scan`` are
the safe parsers they share. Callers import the module they need.
"""
