"""No network unless asked.

Only ``fetch``, ``--fic-download`` and a Hub model id given to ``replay --model`` may reach the
network. Every other command runs with the Hugging Face libraries switched to offline mode
(``HF_HUB_OFFLINE=1`` and friends, set before they are imported), so a model or tokenizer that is
not in the local cache is an immediate, clear error instead of a download or ~30 s of retries.
When a Hub model is asked for but not cached, the Hub is probed once with a short timeout: an
offline machine fails in seconds with one line, not after the client's retry loop.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from seam_repro.errors import InputError

OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
               "HF_HUB_DISABLE_TELEMETRY": "1"}
PROBE_TIMEOUT_S = 1.5
"""One probe's whole budget, name lookup included: offline is known in under 2 s."""

_probed: dict[tuple[str, int], str | None] = {}


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


def apply_policy(args: list[str]) -> None:
    """Switch the Hugging Face libraries offline unless ``args`` asks for the network. Must run
    before those libraries are imported."""
    if network_wanted(args):
        return
    os.environ.update(OFFLINE_ENV)
    # The libraries read these at import; when something imported them earlier, switch them too
    # (huggingface_hub otherwise fetches an agent registry even for local_files_only loads).
    hub_constants = sys.modules.get("huggingface_hub.constants")
    if hub_constants is not None:
        hub_constants.HF_HUB_OFFLINE = True
        hub_constants.HF_HUB_DISABLE_TELEMETRY = True


def first_hop(url: str) -> tuple[str, int]:
    """Host and port a request for ``url`` first connects to: the HTTPS/HTTP proxy when one is set
    and ``NO_PROXY`` does not exempt the host (urllib and huggingface_hub both honour them), else
    the URL's own host."""
    from urllib.request import proxy_bypass_environment  # brings http.client, email and ssl: a probe's alone

    target = urlsplit(url)
    proxy_var = "HTTPS_PROXY" if target.scheme == "https" else "HTTP_PROXY"
    proxy = os.environ.get(proxy_var) or os.environ.get(proxy_var.lower())
    if proxy and target.hostname and proxy_bypass_environment(target.hostname):  # NO_PROXY names it
        proxy = None
    hop = urlsplit(proxy) if proxy else target
    default = 443 if hop.scheme == "https" else 80
    try:
        port = hop.port or default
    except ValueError:  # a port that is not a number
        port = default
    return hop.hostname or "", port


def hub_address() -> tuple[str, int]:
    """Host and port a Hub request would first connect to (the HTTPS proxy when one is set)."""
    host, port = first_hop(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    return host or "huggingface.co", port


def unreachable_reason(host: str, port: int, timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """None when a TCP connection to ``host:port`` opens within ``timeout`` (name lookup included),
    else why not; probed once per address per process. The lookup runs in a daemon thread because no
    socket timeout covers it (an unreachable resolver waits 20 s or more)."""
    if (host, port) in _probed:
        return _probed[(host, port)]
    where = f"{host}:{port}"
    found: list[Any] = []

    def lookup() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as exc:
            found.append(exc)

    start = time.monotonic()
    thread = threading.Thread(target=lookup, daemon=True, name=f"probe {where}")
    thread.start()
    thread.join(timeout)
    reason: str | None
    if not found:
        reason = f"{where} cannot be reached (its name did not resolve within {timeout:g} s)"
    elif isinstance(found[0], OSError):
        reason = f"{where} cannot be reached (the host name does not resolve: {found[0].strerror or found[0]})"
    else:
        reason = f"{where} cannot be reached (no address answered)"
        for family, kind, proto, _, address in found[0]:
            left = timeout - (time.monotonic() - start)
            if left <= 0:
                reason = f"{where} cannot be reached (no answer within {timeout:g} s)"
                break
            with socket.socket(family, kind, proto) as sock:
                try:
                    sock.settimeout(left)
                    sock.connect(address)
                    reason = None
                    break
                except OSError as exc:
                    reason = f"{where} cannot be reached ({exc.strerror or type(exc).__name__})"
    _probed[(host, port)] = reason
    return reason


class _RetryChatter(logging.Filter):
    """Keeps huggingface_hub's ``Retrying in Ns [Retry k/n]`` warnings off the terminal (the kit reports
    a failed download itself, once); they go to the ``seam_repro`` logger at debug level instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith("Retrying in"):
            logging.getLogger("seam_repro.network").debug("%s: %s", record.name, record.getMessage())
            return False
        return True


def quiet_retries() -> None:
    """Install :class:`_RetryChatter` on the loggers huggingface_hub retries through (once)."""
    for name in ("huggingface_hub.utils._http", "huggingface_hub.hf_api", "huggingface_hub.file_download"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _RetryChatter) for f in logger.filters):
            logger.addFilter(_RetryChatter())


def is_cached(model_id: str, revision: str | None) -> bool:
    """Whether the model's config.json at ``revision`` is in the local Hugging Face cache."""
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(model_id, "config.json", revision=revision), str)


def require_hub_or_cache(model_id: str, revision: str | None) -> None:
    """Fail fast, in one line, when a Hub model is neither cached nor reachable (offline machine)."""
    if Path(model_id).is_dir() or is_cached(model_id, revision):
        return
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        why = "HF_HUB_OFFLINE is set"
    else:
        reason = unreachable_reason(*hub_address())
        if reason is None:
            return
        why = f"the Hub is offline: {reason}"
    raise InputError("--model", f"cannot resolve {model_id}@{revision}: not in the local Hugging Face cache and "
                     f"{why}; download it on a connected machine or pass a local model folder")
