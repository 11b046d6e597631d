"""The run explorer: ``seam-repro view`` writes a static site over run folders and bundles."""
