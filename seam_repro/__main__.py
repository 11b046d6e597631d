"""`python -m seam_repro` is the same as the `seam-repro` console script."""

from seam_repro.cli import main

if __name__ == "__main__":
    main()
