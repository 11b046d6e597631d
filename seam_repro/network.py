"""No network unless asked.

Only ``fetch``, ``--fic-download`` and a Hub model id given to ``replay --model`` may reach the
network. Every other command runs with the Hugging Face libraries switched to offline mode
(``HF_HUB_OFFLINE=1`` and friends, set before they are imported), so a model or tokenizer that is
not in the local cache is an immediate, clear error instead of a download or ~30 s of retries.
When a Hub model is asked for but not cached, the Hub is probed once with a short timeout: an
offline machine fails in seconds with one line, not after the client's retry loop.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from urllib.parse import urlsplit

from seam_repro.errors import InputError

OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
               "HF_HUB_DISABLE_TELEMETRY": "1"}
PROBE_TIMEOUT_S = 5.0


def _option_value(args: list[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def network_wanted(args: list[str]) -> bool:
    """Whether this command line asks for the network: ``fetch``, ``--fic-download``, or ``replay``
    of a Hub model id (not the embedded model, not the echo backend, not a local model folder)."""
    command = next((a for a in args if not a.startswith("-")), None)
    if command == "fetch" or "--fic-download" in args:
        return True
    if command == "replay":
        model = _option_value(args, "--model")
        backend = _option_value(args, "--backend") or "hf"
        return model is not None and backend != "echo" and not Path(model.split("@")[0]).is_dir()
    return False


def apply_policy(args: list[str]) -> bool:
    """Switch the Hugging Face libraries offline unless ``args`` asks for the network; returns
    whether the network stays allowed. Must run before those libraries are imported."""
    if network_wanted(args):
        return True
    os.environ.update(OFFLINE_ENV)
    # The libraries read these at import; when something imported them earlier, switch them too
    # (huggingface_hub otherwise fetches an agent registry even for local_files_only loads).
    hub_constants = sys.modules.get("huggingface_hub.constants")
    if hub_constants is not None:
        hub_constants.HF_HUB_OFFLINE = True
        hub_constants.HF_HUB_DISABLE_TELEMETRY = True
    return False


def _hub_address() -> tuple[str, int]:
    """Host and port a Hub request would first connect to (the HTTPS proxy when one is set)."""
    proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
    url = urlsplit(proxy or os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    return url.hostname or "huggingface.co", url.port or (443 if url.scheme == "https" else 80)


def hub_unreachable_reason(timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """None when a TCP connection to the Hub (or proxy) opens within ``timeout``; else why not."""
    host, port = _hub_address()
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as exc:
        return f"{host}:{port} cannot be reached ({exc.strerror or type(exc).__name__})"


def is_cached(model_id: str, revision: str | None) -> bool:
    """Whether the model's config.json at ``revision`` is in the local Hugging Face cache."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    found = try_to_load_from_cache(model_id, "config.json", revision=revision)
    return isinstance(found, str)


def require_hub_or_cache(model_id: str, revision: str | None) -> None:
    """Fail fast, in one line, when a Hub model is neither cached nor reachable (offline machine)."""
    if Path(model_id).is_dir() or is_cached(model_id, revision):
        return
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        raise InputError("--model", f"cannot resolve {model_id}@{revision}: not in the local Hugging Face cache "
                         "and HF_HUB_OFFLINE is set; download it on a connected machine or pass a local model folder")
    reason = hub_unreachable_reason()
    if reason is not None:
        raise InputError("--model", f"cannot resolve {model_id}@{revision}: not in the local Hugging Face cache "
                         f"and the Hub is offline: {reason}; download it on a connected machine or pass a local model folder")
