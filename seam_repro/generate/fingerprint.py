"""Environment fingerprint written into run.json: what produced these predictions.

No upstream counterpart (SEAM recorded only its metadata.json); follows lm-eval's recording of
library versions and inspect_ai's ``EvalSpec.packages``. torch/transformers are only reported if
already importable, and never cause an import failure.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sys
from typing import Any

from seam_repro import __version__


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def environment_fingerprint(include_torch: bool = True) -> dict[str, Any]:
    """Kit, python, libraries, CUDA/GPU, platform and container image digest
    (``SEAM_REPRO_IMAGE_DIGEST``, passed at ``docker run`` time because an image cannot know its own
    digest when it is built; the images also set their variant and source commit)."""
    fp: dict[str, Any] = {
        "seam_repro": __version__, "python": platform.python_version(), "implementation": sys.implementation.name,
        "platform": platform.platform(), "machine": platform.machine(),
        "torch": _version("torch"), "transformers": _version("transformers"), "accelerate": _version("accelerate"),
        "gguf": _version("gguf"), "bitsandbytes": _version("bitsandbytes"), "vllm": _version("vllm"),
        "cuda": None, "gpus": [], "image_digest": os.environ.get("SEAM_REPRO_IMAGE_DIGEST") or None,
        "image_variant": os.environ.get("SEAM_REPRO_IMAGE_VARIANT") or None,
        "source_commit": os.environ.get("SEAM_REPRO_SOURCE_COMMIT") or None,
    }
    if include_torch and fp["torch"] is not None:
        try:
            import torch

            fp["cuda"] = torch.version.cuda
            if torch.cuda.is_available():
                fp["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        except Exception as exc:  # a broken CUDA install must not stop the run; record it instead
            fp["cuda_error"] = f"{type(exc).__name__}: {exc}"
    return fp
