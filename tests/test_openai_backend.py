"""OpenAI-compatible backend against a scripted local server: retries, faults, concurrency, seeds,
served metadata, resume through the store, and an API key that is sent but never written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from openai_fake import FakeServer

from seam_repro.config import GenerationSettings
from seam_repro.errors import InputError
from seam_repro.generate import make_backend
from seam_repro.generate.base import GenerationRequest
from seam_repro.generate.openai_compat import ServerError, _retry_after, make_openai_backend

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "manifests" / "smoke.json"


def reqs(n: int = 3) -> list[GenerationRequest]:
    return [GenerationRequest("D", 0, str(i), f"prompt number {i}", "", 1000 + i) for i in range(n)]


def backend(server: FakeServer, **kw: object):
    args = {"base_url": server.base_url, "backoff": 0.01, "timeout": 5.0, **kw}
    return make_openai_backend("fake-model", "unpinned", args)


def test_chat_request_carries_seed_settings_and_records_usage_and_fingerprint() -> None:
    with FakeServer() as srv:
        b = backend(srv)
        out = b.generate(reqs(), GenerationSettings(max_new_tokens=7, top_p=0.9))
    bodies = sorted((r["body"] for r in srv.requests), key=lambda x: x["seed"])
    assert [x["seed"] for x in bodies] == [1000, 1001, 1002]
    assert all(x["max_tokens"] == 7 and x["temperature"] == 0.8 and x["top_p"] == 0.9 for x in bodies)
    assert bodies[0]["messages"] == [{"role": "user", "content": "prompt number 0"}]
    assert all(r["path"] == "/v1/chat/completions" for r in srv.requests)
    assert [o.output.split()[1] for o in out] == ["seed=1000", "seed=1001", "seed=1002"]  # request order kept
    assert (out[0].n_prompt_tokens, out[0].n_output_tokens) == (11, 3)
    assert out[0].served == {"model": "fake-model", "system_fingerprint": "fp_fake", "finish_reason": "stop"}


def test_completions_endpoint_sends_raw_prompt_and_greedy_sends_temperature_zero() -> None:
    with FakeServer() as srv:
        b = backend(srv, endpoint="completions", send_seed=False)
        out = b.generate(reqs(1), GenerationSettings(do_sample=False, temperature=0.0))
    body = srv.requests[0]["body"]
    assert srv.requests[0]["path"] == "/v1/completions" and body["prompt"] == "prompt number 0"
    assert body["temperature"] == 0.0 and "seed" not in body and "top_p" not in body
    assert out[0].output.startswith("answer seed=None")


def test_transient_faults_are_retried_until_success() -> None:
    faults = ["429", "500", "502", "503", "truncated", "malformed", "no_usage", "timeout"]
    with FakeServer(script=faults, slow=1.0) as srv:
        b = backend(srv, max_retries=len(faults), timeout=0.3)
        out = b.generate(reqs(1), GenerationSettings())
    assert out[0].output.startswith("answer seed=1000")
    assert len(srv.requests) == len(faults) + 1 and b.retries == len(faults)


def test_retries_exhausted_is_one_clear_error() -> None:
    with FakeServer(default="500") as srv:
        b = backend(srv, max_retries=2)
        with pytest.raises(ServerError, match=r"gave up after 3 attempts; last: HTTP 500"):
            b.generate(reqs(1), GenerationSettings())
    assert len(srv.requests) == 3


def test_auth_error_is_not_retried_and_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", "sk-wrong")
    with FakeServer(default="401") as srv:
        b = backend(srv, api_key_env="MY_KEY")
        with pytest.raises(ServerError, match=re.escape("HTTP 401 (is $MY_KEY set to a valid key?)")):
            b.generate(reqs(1), GenerationSettings())
    assert len(srv.requests) == 1 and srv.requests[0]["headers"]["Authorization"] == "Bearer sk-wrong"


def test_concurrency_is_bounded() -> None:
    with FakeServer(delay=0.5) as srv:
        b = backend(srv, concurrency=3)
        b.generate(reqs(9), GenerationSettings())
    assert 1 < srv.max_in_flight <= 3


def test_one_thread_pool_serves_every_batch() -> None:
    """Threads are started once per run, not per batch (a pause between batches the server sees)."""
    import threading

    with FakeServer() as srv:
        b = backend(srv, concurrency=3)
        real, names = b._request, set()

        def named(*a: object) -> object:
            names.add(threading.current_thread().name)
            return real(*a)

        b._request = named  # type: ignore[method-assign]
        for _ in range(4):
            b.generate(reqs(3), GenerationSettings())
        b.close()
    assert 1 < len(names) <= 3 and len({n.rsplit("_", 1)[0] for n in names}) == 1


def test_the_next_batch_is_sent_while_a_batch_is_answered(tmp_path: Path) -> None:
    """Batches of one wave (2 requests, concurrency 2), the first request to arrive answered after
    1 s: the next batch's first request reaches the server while that answer is awaited (the pool
    does not drain at a batch's end), and every prediction is written once, in the store's order."""
    from seam_repro.hashing import sha256_text
    from seam_repro.run.replay import run_generation

    recs = [{"dataset": "D", "run": 0, "instance_id": str(i), "prompt": f"prompt {i}",
             "prompt_sha256": sha256_text(f"prompt {i}"), "gen_seed": i} for i in range(6)]
    with FakeServer(script=["timeout"], slow=1.0) as srv:
        b = backend(srv, concurrency=2)
        summary = run_generation(recs, b, GenerationSettings(), tmp_path / "run", {"digest": "d"}, batch_size=2,
                                 progress=False)
    assert summary.generated == 6
    assert [r["in_flight"] for r in srv.requests][:3] == [0, 1, 1]  # before: the third arrived to an idle server
    lines = (tmp_path / "run" / "predictions" / "fake-model" / "D" / "run_0.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["instance_id"] for x in lines) == [str(i) for i in range(6)]


def test_retry_after_header_and_bad_values() -> None:
    assert _retry_after("2") == 2.0 and _retry_after("9999") == 60.0
    assert _retry_after(None) is None and _retry_after("Wed, 21 Oct 2015 07:28:00 GMT") is None


def test_model_args_validation() -> None:
    with pytest.raises(InputError, match=r"unknown key 'api_key' for the openai backend; accepted: api_key_env, .*"
                                         r"pass the key through api_key_env"):
        make_backend("openai", "m", model_args="base_url=http://x/v1,api_key=sk-123")
    with pytest.raises(InputError, match="needs base_url=URL"):
        make_backend("openai", "m", model_args="concurrency=2")
    with pytest.raises(InputError, match=r"key concurrency: expected a value in 1\.\.256, got '0'"):
        make_backend("openai", "m", model_args="base_url=http://x/v1,concurrency=0")
    with pytest.raises(InputError, match="needs --model NAME"):
        make_backend("openai", None, model_args="base_url=http://x/v1")
    with pytest.raises(InputError, match="the server decides"):
        make_backend("openai", "m", dtype="bf16", model_args="base_url=http://x/v1")


def _run_files_text(root: Path) -> str:
    return "".join(p.read_bytes().decode("utf-8", "replace") for p in root.rglob("*") if p.is_file())


@pytest.mark.skipif(not SMOKE.is_file(), reason="shipped smoke manifest not in this checkout")
def test_replay_resumes_after_server_failure_and_never_writes_the_key(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from seam_repro.cli import cli

    secret = "sk-test-SECRET-4f1c9a"
    monkeypatch.setenv("SEAM_TEST_KEY", secret)
    out = tmp_path / "run"
    runner = CliRunner()
    # 5 good answers, then a server that only fails: the replay stops with a clear error
    with FakeServer(script=["ok"] * 5, default="500") as srv:
        args = ["replay", str(SMOKE), "--backend", "openai", "--model", "fake-model@v1", "--name", "Fake served",
                "--out", str(out), "--limit", "1", "--no-score", "--batch-size", "1", "--model-args",
                f"base_url={srv.base_url},api_key_env=SEAM_TEST_KEY,max_retries=1,backoff=0.01,concurrency=1"]
        first = runner.invoke(cli, args)
    assert isinstance(first.exception, ServerError) and "gave up after 2 attempts" in str(first.exception)
    written = [json.loads(line) for p in out.rglob("run_*.jsonl") for line in p.read_text().splitlines()]
    assert len(written) == 5
    with FakeServer() as srv2:
        args[-1] = args[-1].replace(srv.base_url, srv2.base_url)
        second = runner.invoke(cli, args)
    assert second.exit_code == 0, second.output
    assert "5 already stored" in second.output
    assert all(r["headers"].get("Authorization") == f"Bearer {secret}" for r in srv.requests + srv2.requests)
    preds = [json.loads(line) for p in out.rglob("run_*.jsonl") for line in p.read_text().splitlines()]
    keys = [(r["dataset"], r["run"], r["instance_id"]) for r in preds]
    n_prompts = len((out / "prompts.jsonl").read_text().splitlines())
    assert len(keys) == len(set(keys)) == n_prompts == 18
    assert all(r["served"]["system_fingerprint"] == "fp_fake" and r["n_output_tokens"] == 3 for r in preds)
    assert all(r["model"] == {"id": "fake-model", "revision": "v1"} for r in preds)
    rj = json.loads((out / "run.json").read_text())
    entry = rj["models"]["fake-model"]
    assert entry["name"] == "Fake served" and entry["backend"]["served_models"] == ["fake-model"]
    assert entry["model_args"]["api_key_env"] == "SEAM_TEST_KEY" and entry["backend"]["api_key_sent"] is True
    assert entry["batch_size"] == 1  # --batch-size given; without it a batch is at least `concurrency` requests
    assert secret not in _run_files_text(out)  # sent in headers, never written


@pytest.mark.skipif(not SMOKE.is_file(), reason="shipped smoke manifest not in this checkout")
def test_replay_batches_are_at_least_the_concurrency(tmp_path: Path) -> None:
    """The smoke manifest's batch size is 4; concurrency 6 must not be capped by it: a batch is
    ``BATCH_WAVES`` waves of 6 requests, so the server is kept busy across a batch's end."""
    from seam_repro.manifest.trust import load_trusted
    from seam_repro.run.replay import ReplayOptions, replay

    with FakeServer(delay=0.3) as srv:
        summary = replay(load_trusted(SMOKE), tmp_path / "run", ReplayOptions(
            backend="openai", model="fake-model", limit=1, progress=False,
            model_args=f"base_url={srv.base_url},concurrency=6,backoff=0.01"))
    assert summary.generated == 18 and srv.max_in_flight == 6
    assert json.loads((tmp_path / "run" / "run.json").read_text())["models"]["fake-model"]["batch_size"] == 6 * 4


def test_a_failed_request_cuts_the_others_short() -> None:
    """One request of a concurrent batch fails for good: the rest are abandoned, not awaited, also
    when the failure is not the first request in order (the last to reach the server fails)."""
    import time

    with FakeServer(script=["timeout", "timeout", "timeout", "401"], default="timeout", slow=30.0) as srv:
        b = backend(srv, concurrency=4, timeout=30.0)
        start = time.monotonic()
        with pytest.raises(ServerError, match="HTTP 401"):
            b.generate(reqs(4), GenerationSettings())
        elapsed = time.monotonic() - start
    assert elapsed < 20.0, elapsed  # not the 30 s the other requests would take (margin for a loaded machine)


def test_unreachable_server_fails_before_the_run(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    b = make_openai_backend("m", "unpinned", {"base_url": f"http://127.0.0.1:{port}/v1"})
    with pytest.raises(ServerError, match=r"cannot connect .*is the server running"):
        b.describe()


# -- the API key never comes back (issue 28: a server that echoes the Authorization header) ----------

SECRET = "sk-LEAK-7b2e91c04d5f"


def _leaks(text: str) -> bool:
    """True when any 10 consecutive characters of SECRET appear (a cut excerpt leaks a prefix)."""
    return any(SECRET[i:i + 10] in text for i in range(len(SECRET) - 9))


@pytest.mark.parametrize("behaviour", ["echo_text", "echo_meta", "echo_escaped", "echo_field"])
def test_a_key_echoed_in_an_answer_is_redacted_before_it_is_read(monkeypatch: pytest.MonkeyPatch,
                                                                 behaviour: str) -> None:
    from seam_repro.generate.redact import MASK

    monkeypatch.setenv("SEAM_TEST_KEY", SECRET)
    with FakeServer(default=behaviour, echo_models=True) as srv:
        b = backend(srv, api_key_env="SEAM_TEST_KEY")
        facts = b.describe()
        out = b.generate(reqs(2), GenerationSettings())
    assert srv.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"  # sent, and echoed back
    seen = repr([(o.output, o.served) for o in out]) + json.dumps(facts)
    assert not _leaks(seen)
    assert facts["served_models"] == ["fake-model", f"Bearer {MASK}"]
    if behaviour != "echo_field":  # the extra field is not read; the others show where the key was
        assert f"Bearer {MASK}" in seen


@pytest.mark.parametrize(("behaviour", "retries"), [("401echo", 0), ("400echo", 0), ("400late", 0),
                                                    ("400raw", 0), ("malformed_echo", 1)])
def test_a_key_echoed_in_an_error_body_is_not_in_the_error(monkeypatch: pytest.MonkeyPatch, behaviour: str,
                                                           retries: int) -> None:
    monkeypatch.setenv("SEAM_TEST_KEY", SECRET)
    with FakeServer(default=behaviour) as srv:
        b = backend(srv, api_key_env="SEAM_TEST_KEY", max_retries=retries)
        with pytest.raises(ServerError) as err:
            b.generate(reqs(1), GenerationSettings())
    assert "Bearer" in str(err.value) and not _leaks(str(err.value)), str(err.value)


def _main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Run the console entry point; returns (exit status, stdout + stderr)."""
    from seam_repro.cli import main

    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = 0 if exc.code is None else int(exc.code)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.skipif(not SMOKE.is_file(), reason="shipped smoke manifest not in this checkout")
def test_replay_against_an_echoing_server_writes_and_prints_no_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Every route at once through the CLI: answers, metadata, /models, then a 401 that quotes the key;
    the key also sits in argv (``--name``) to show the run.json route; a trailing newline (from a .env
    file) is dropped with a note."""
    from seam_repro.generate.redact import MASK

    monkeypatch.setenv("SEAM_TEST_KEY", SECRET + "\n")
    out = tmp_path / "run"
    script = ["echo_text", "echo_meta", "echo_escaped", "echo_field"] * 4
    with FakeServer(script=script, default="401echo", echo_models=True) as srv:
        argv = ["replay", str(SMOKE), "--backend", "openai", "--model", "fake-model@v1", "--name", f"n {SECRET}",
                "--out", str(out), "--limit", "1", "--no-score", "--batch-size", "1", "--model-args",
                f"base_url={srv.base_url},api_key_env=SEAM_TEST_KEY,max_retries=0,concurrency=1"]
        code, printed = _main(argv, capsys)
    assert code == 2 and "HTTP 401" in printed and "Bearer [REDACTED]" in printed, printed
    assert "whitespace around the key" in printed
    assert all(r["headers"]["Authorization"] == f"Bearer {SECRET}" for r in srv.requests)  # stripped once
    written = _run_files_text(out)
    assert len(list(out.rglob("run_*.jsonl"))) > 0 and MASK in written
    assert not _leaks(written) and not _leaks(printed)


@pytest.mark.parametrize(("value", "problem"), [
    (SECRET[:6] + "\u00e9" + SECRET[6:], "a non-ASCII character"),
    (SECRET[:6] + " " + SECRET[6:], "a space or control character"),
    (SECRET[:6] + "\x00" + SECRET[6:], "a space or control character"),
    (" \n", "only whitespace"),
])
def test_a_key_no_header_can_carry_is_one_line_exit_2(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str], value: str,
                                                      problem: str) -> None:
    import os

    if "\x00" in value:  # an environment cannot hold NUL; the check is the same function
        from seam_repro.generate.openai_compat import read_api_key

        monkeypatch.setattr(os, "environ", {**os.environ, "SEAM_TEST_KEY": value})
        with pytest.raises(InputError, match=problem):
            read_api_key("SEAM_TEST_KEY")
        return
    monkeypatch.setenv("SEAM_TEST_KEY", value)
    code, printed = _main(["replay", str(SMOKE), "--backend", "openai", "--model", "m", "--out", "/nonexistent/x",
                           "--allow-unfrozen", "--no-score", "--model-args",
                           "base_url=http://127.0.0.1:9/v1,api_key_env=SEAM_TEST_KEY"], capsys)
    assert code == 2, printed
    assert printed.startswith("error: $SEAM_TEST_KEY: expected an API key") and problem in printed
    assert printed.count("\n") == 1 and not _leaks(printed)


def test_a_key_pasted_into_model_args_is_never_quoted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEAM_TEST_KEY", raising=False)
    b64 = "QWxhZGRpbjpvcGVuIHNlc2FtZQxYz=="  # a base64 key splits at its padding into a "key" and a value
    for text in (f"base_url=http://x/v1,{SECRET}", SECRET, f"base_url=http://x/v1,api_key_env={SECRET}",
                 f"base_url=http://x/v1,{b64}"):
        with pytest.raises(InputError) as err:
            make_backend("openai", "m", model_args=text)
        assert not _leaks(str(err.value)) and b64[:10] not in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(InputError, match=r"unknown key a text of 29 characters \(not shown in case it is a secret\)"):
        make_backend("openai", "m", model_args=f"base_url=http://x/v1,{b64}")
    with pytest.raises(InputError, match=r"got part 2 of 2: a text of 20 characters \(not shown in case it is a secret"):
        make_backend("openai", "m", model_args=f"base_url=http://x/v1,{SECRET}")
    with pytest.raises(InputError, match=r"api_key_env: \$SEAM_TEST_KEY is not set"):
        make_backend("openai", "m", model_args="base_url=http://x/v1,api_key_env=SEAM_TEST_KEY")


def test_the_cli_redacts_internal_errors_and_the_debug_traceback(monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Whatever raised it, no printed line holds a registered key (here an internal error whose
    message holds the key after 195 characters: the 200-character excerpt must not leak a prefix)."""
    import sys
    import types

    import click

    import seam_repro.cli as cli_module
    from seam_repro.generate.redact import register_secret

    register_secret(SECRET)

    @click.command()
    def boom() -> None:
        """Fail with the key in the message."""
        raise RuntimeError("x" * 195 + SECRET)

    module = types.ModuleType("seam_repro_test_secret_boom")
    module.boom = boom  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(cli_module.COMMANDS, "boom", f"{module.__name__}:boom")
    monkeypatch.delenv("SEAM_REPRO_DEBUG", raising=False)
    code, printed = _main(["boom"], capsys)
    assert code == 70 and "internal error (RuntimeError" in printed and not _leaks(printed), printed
    monkeypatch.setenv("SEAM_REPRO_DEBUG", "1")
    code, printed = _main(["boom"], capsys)
    assert code == 70 and "Traceback" in printed and "[REDACTED]" in printed and not _leaks(printed)


@pytest.mark.parametrize(("url", "problem"), [
    ("http://127.0.0.1/" + "v" * 70000, "at most 2048 characters"),
    ("http://" + "a" * 300 + ".example/v1", "valid host name"),
    ("http://127.0.0.1:99999/v1", "port 99999 is outside 1..65535"),
    ("http://[::1/v1", "expected an http(s) URL"),
    ("http:///v1", "with a host"),
    ("ftp://127.0.0.1/v1", "with a host"),
    ("http://user:pw@127.0.0.1/v1", "without user:password@"),
])
def test_a_base_url_the_client_cannot_use_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], url: str,
                                                             problem: str) -> None:
    code, printed = _main(["replay", str(SMOKE), "--backend", "openai", "--model", "m", "--out", "/nonexistent/x",
                           "--allow-unfrozen", "--no-score", "--model-args", f"base_url={url}"], capsys)
    assert code == 2 and printed.startswith("error: --model-args: openai backend, key base_url: expected"), printed
    assert problem in printed and printed.count("\n") == 1 and len(printed) < 400


@pytest.mark.parametrize("model_args", [f"base_url=http://127.0.0.1:9/v1,endpoint={SECRET}", f"base_url={SECRET}",
                                        f"base_url=http://127.0.0.1:99999/v1?k={SECRET}"])
def test_an_error_about_another_value_does_not_quote_the_key(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str],
                                                             model_args: str) -> None:
    """The key (in the default variable) is registered before any value is checked, so a value that
    holds it is masked in the error line however the line quotes it."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    code, printed = _main(["replay", str(SMOKE), "--backend", "openai", "--model", "m", "--out", "/nonexistent/x",
                           "--allow-unfrozen", "--no-score", "--model-args", model_args], capsys)
    assert code == 2 and printed.startswith("error: --model-args: openai backend, key ") and "[REDACTED]" in printed
    assert not _leaks(printed) and printed.count("\n") == 1, printed


def test_a_non_finite_number_in_an_answer_is_a_malformed_answer() -> None:
    """Before: ``NaN`` parsed into the served metadata and the prediction write failed with
    ValueError (exit 70). Now it is a malformed answer: retried, then one clear error."""
    with FakeServer(script=["nan_meta"]) as srv:
        assert backend(srv, max_retries=1).generate(reqs(1), GenerationSettings())[0].served["system_fingerprint"] \
            == "fp_fake"
    with FakeServer(default="nan_meta") as srv:
        with pytest.raises(ServerError, match=r"gave up after 1 attempts; last: response: not valid JSON \(NaN is not "
                                              r"valid JSON \(expected a finite number\)\)"):
            backend(srv, max_retries=0).generate(reqs(1), GenerationSettings())


def test_usage_counts_must_be_integers_not_booleans() -> None:
    """JSON true is no token count, though Python counts True as the int 1."""
    from seam_repro.generate.openai_compat import _response_problem

    ok = {"choices": [{"text": "x"}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}
    assert _response_problem(ok, "completions") is None
    for bad in (True, 1.0, "1", None):
        body = {**ok, "usage": {"prompt_tokens": 3, "completion_tokens": bad}}
        assert _response_problem(body, "completions") == "usage.prompt_tokens / usage.completion_tokens missing"
