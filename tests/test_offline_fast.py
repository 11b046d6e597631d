"""Offline is known in under 2 s, in one probe, and the HTTP libraries' retry chatter never reaches
the user (issue 26: an uncached Hub model failed after 25-28 s; ``fetch`` printed 15 ``Retrying in
Ns`` lines over 71 s). The first hop is made unreachable two ways: a proxy whose host name does not
resolve (``.invalid`` never resolves, RFC 6761) and a closed port on 127.0.0.1."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from seam_repro import network
from seam_repro.cli import main


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(params=["unresolvable", "closed-port"])
def unreachable(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    """Every request's first hop is a proxy that cannot be reached; the Hub libraries are online
    (as on a machine that believes it has a network) and their cache is empty."""
    proxy = ("http://no-such-proxy.invalid:3128" if request.param == "unresolvable"
             else f"http://127.0.0.1:{closed_port()}")
    for var in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.setenv(var, proxy)
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    constants = pytest.importorskip("huggingface_hub.constants")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # an earlier command may have switched it off
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    monkeypatch.setattr(network, "_probed", {})
    yield request.param


def run_timed(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, float]:
    capsys.readouterr()
    start = time.monotonic()
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    seconds = time.monotonic() - start
    captured = capsys.readouterr()
    return code, captured.out + captured.err, seconds


def test_fetch_knows_it_is_offline_in_under_2_s_without_retry_chatter(
        unreachable: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    # SciCo: one URL source (prompts) and one Hugging Face dataset source
    code, output, seconds = run_timed(["fetch", "--only", "SciCo", "--cache", str(tmp_path / "cache"),
                                       "--no-progress"], capsys)
    assert code == 1
    assert seconds < 2.0, (seconds, output)
    assert "Retrying" not in output and "Retrying" not in caplog.text
    assert output.count("offline:") == 2 and "cannot be reached" in output, output
    assert "2 source(s) failed" in output


def test_an_uncached_hub_model_is_refused_in_under_2_s(unreachable: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from trust_helpers import smoke_copy

    model = "org/model@" + "0" * 40
    code, output, seconds = run_timed(["replay", str(smoke_copy(tmp_path)), "--model", model, "--out",
                                       str(tmp_path / "run")], capsys)
    assert code == 2
    assert seconds < 2.0, (seconds, output)
    assert "not in the local Hugging Face cache and the Hub is offline" in output and "Retrying" not in output
    assert output.strip().count("\n") == 0, output  # one line


def test_one_probe_whatever_the_resolver_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """A resolver that hangs (an unreachable DNS server) cannot hold the probe past its budget:
    ``socket.create_connection``'s timeout does not cover the name lookup, so the lookup runs in a
    thread that is given up on; and the answer is reused for the next source on that host."""
    calls: list[str] = []

    def hanging(host: str, *args: object, **kwargs: object) -> object:
        calls.append(host)
        time.sleep(30)
        raise socket.gaierror(-3, "Temporary failure in name resolution")

    monkeypatch.setattr(socket, "getaddrinfo", hanging)
    monkeypatch.setattr(network, "_probed", {})
    start = time.monotonic()
    reason = network.unreachable_reason("hub.example", 443)
    assert time.monotonic() - start < network.PROBE_TIMEOUT_S + 1.0  # not the 30 s the resolver hangs (margin for a loaded CI)
    assert reason == f"hub.example:443 cannot be reached (its name did not resolve within {network.PROBE_TIMEOUT_S:g} s)"
    assert network.unreachable_reason("hub.example", 443) == reason and calls == ["hub.example"]


def test_the_retry_warnings_of_huggingface_hub_are_kept_off_the_terminal() -> None:
    """A logger's filters run before any handler sees the record (the library's own stream handler
    included): the retry warning reaches none, and goes to the kit's log at debug level."""
    import logging

    class Keep(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.DEBUG)
            self.lines: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.lines.append(f"{record.levelname} {record.getMessage()}")

    hub, kit = Keep(), Keep()
    logger = logging.getLogger("huggingface_hub.utils._http")
    logger.addHandler(hub)
    logging.getLogger("seam_repro").addHandler(kit)
    try:
        network.quiet_retries()
        network.quiet_retries()  # once, however often asked
        logger.warning("Retrying in 8s [Retry 4/5].")
        logger.warning("something else")
    finally:
        logger.removeHandler(hub)
        logging.getLogger("seam_repro").removeHandler(kit)
    assert hub.lines == ["WARNING something else"]
    assert kit.lines == ["DEBUG huggingface_hub.utils._http: Retrying in 8s [Retry 4/5]."]


def test_the_first_hop_is_the_proxy_unless_no_proxy_exempts_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    assert network.first_hop("https://huggingface.co/x") == ("huggingface.co", 443)
    assert network.first_hop("http://mirror.lan:8080/x") == ("mirror.lan", 8080)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.lan:3128")
    assert network.first_hop("https://huggingface.co/x") == ("proxy.lan", 3128)
    monkeypatch.setenv("NO_PROXY", "huggingface.co")
    assert network.first_hop("https://huggingface.co/x") == ("huggingface.co", 443)
