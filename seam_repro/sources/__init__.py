"""Stage *sources*: the pinned inputs (``lock``), their verified download (``fetch``) and where a run
finds them (``resolve``). Import the module you need; this file re-exports nothing.
"""
