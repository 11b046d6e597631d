"""Stage *sources*: the pinned inputs and where a run finds them.

``lock`` (read ``data/sources.lock.json``: what is pinned, with which hashes), ``fetch``
(download into the cache and verify every file), ``resolve`` (find and load a config's dataset
folders and prompt files, checking the hashes a manifest records). Import the module you need;
this file re-exports nothing.
"""
