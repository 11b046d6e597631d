"""OpenAI-compatible HTTP backend: models behind vLLM/SGLang/TGI/llama.cpp servers or hosted APIs.

No upstream counterpart (SEAM ran transformers only). Follows lm-evaluation-harness'
``local-chat-completions``/``local-completions``: one request per instance, one user message (chat)
or the raw prompt (completions). Added here: each request carries the instance's ``gen_seed``,
requests run ``concurrency`` at a time but are stored in order, transient failures (429, 5xx,
timeouts, cut or malformed bodies) are retried with backoff, and every prediction records what the
server reported (model, ``system_fingerprint``, ``usage`` token counts).

Client: ``httpx`` rather than the ``openai`` package, so every attempt, status and raw body is ours to
classify and test, and non-OpenAI servers' extra or missing fields do not trip a typed client. The API
key (from the variable named by ``api_key_env``) is registered with ``generate/redact.py``, and every
answer is redacted before it is read: a server that echoes it cannot put it into anything written.
"""

from __future__ import annotations

import os
import random
import re
import sys
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from seam_repro.config import GenerationSettings
from seam_repro.errors import InputError, SeamReproError
from seam_repro.files.reading import is_a, parse_json_text
from seam_repro.generate.base import GenerationRequest, GenerationResult
from seam_repro.generate.fingerprint import _version
from seam_repro.generate.redact import redact_json, redact_text, register_secret
from seam_repro.hashing import sha256_json, sha256_text

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
"""Statuses worth another attempt: rate limits, overload and gateway errors (as the openai client)."""
MAX_BACKOFF = 60.0
BATCH_WAVES = 4
"""Requests per batch, in multiples of ``concurrency``: a batch of exactly N leaves threads idle while
its slowest answers arrive, several waves per batch keep the pool busy (benchmarks/bench_openai.py)."""
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
KEY_CHARS = re.compile(r"[\x21-\x7e]+")
"""An API key as an HTTP header can carry it: printable ASCII, no spaces or control characters."""


class ServerError(SeamReproError):
    """A request that failed for good (non-retryable status, or retries exhausted). Its message is
    redacted here, so no caller can quote a key in one."""

    def __init__(self, message: str):
        super().__init__(redact_text(message))


def read_api_key(env_name: str) -> str | None:
    """The key in ``$env_name`` (None when unset or empty), registered for redaction. Surrounding
    whitespace (a .env file's newline) is dropped with a note, since an HTTP header cannot carry it;
    anything else outside printable ASCII is refused in one line that never shows the key."""
    raw = remember_key(env_name)
    if not raw:
        return None
    key = raw.strip()
    where = f"${env_name}"
    if not key:
        raise InputError(where, "expected an API key, the variable holds only whitespace; unset it for a server "
                         "that needs no key")
    if not KEY_CHARS.fullmatch(key):
        kind = "a non-ASCII character" if not key.isascii() else "a space or control character"
        raise InputError(where, f"expected an API key of printable ASCII characters, it holds {kind} (the key is "
                         "not shown); copy it again without the extra character")
    if key != raw:
        print(f"note: ${env_name} has whitespace around the key (a .env file's newline?); it is sent without it",
              file=sys.stderr)
    return key


def remember_key(env_name: str) -> str | None:
    """Register the key in ``$env_name`` (as set and stripped) for redaction and return it as set;
    called before any ``--model-args`` value is checked, so no error line can quote the key."""
    raw = os.environ.get(env_name)
    if raw:
        register_secret(raw)
        register_secret(raw.strip())
    return raw


class _Retry(Exception):
    """One failed attempt that may succeed if repeated; ``wait`` is a server-requested delay."""

    def __init__(self, reason: str, wait: float | None = None):
        super().__init__(reason)
        self.wait = wait


@dataclass
class OpenAIBackend:
    """Client of one served model at ``base_url``."""

    model_id: str
    revision: str
    base_url: str
    endpoint: str = "chat"
    send_seed: bool = True
    concurrency: int = 4
    max_retries: int = 6
    backoff: float = 1.0
    timeout: float = 600.0
    api_key_env: str = "OPENAI_API_KEY"
    batch_invariant: bool | None = None
    """The user's word for what the server does (``--model-args batch_invariant=true``): recorded as a
    claim, ``kernels: server-claims-batch-invariant (unverified)``; the kit cannot check it."""
    transport: Any = None
    """An ``httpx`` transport for tests; None = real network."""
    name: str = field(default="openai", init=False)
    retries: int = field(default=0, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _pool: ThreadPoolExecutor | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        import httpx

        self.base_url = check_base_url(self.base_url)
        if not ENV_NAME.fullmatch(self.api_key_env):
            raise InputError("--model-args", "openai backend, key api_key_env: expected the name of an environment "
                             "variable (letters, digits, _), got another text, not shown in case it is the key "
                             "itself: put the key in a variable and name that")
        if self.endpoint not in ("chat", "completions"):
            raise InputError("--model-args", f"openai backend, key endpoint: expected chat or completions, got {self.endpoint!r}")
        self._key = read_api_key(self.api_key_env)
        self._client = httpx.Client(timeout=httpx.Timeout(self.timeout), transport=self.transport,
                                    limits=httpx.Limits(max_connections=self.concurrency))

    # -- recorded facts ---------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """Backend facts for run.json; never the API key (only whether one was sent)."""
        return {"backend": self.name, "base_url": self.base_url, "endpoint": self.endpoint,
                "httpx": _version("httpx"), "api_key_env": self.api_key_env,
                "api_key_sent": self._key is not None, "served_models": self.list_models(),
                "chat_template_sha256": None}

    def resolved_generation(self, settings: GenerationSettings) -> dict[str, Any]:
        return {**settings.as_dict(), "temperature": settings.temperature if settings.do_sample else 0.0,
                "top_k": None, "prompt_path": "server-chat" if self.endpoint == "chat" else "raw-completion",
                "truncation": "none", "seed_sent": self.send_seed,
                "sampler": "server" if settings.do_sample else "server-greedy",
                **({} if self.batch_invariant is None else {"kernels": "server-claims-batch-invariant (unverified)"
                                                            if self.batch_invariant else "default"})}

    def list_models(self) -> list[str] | None:
        """Model ids from ``GET /models`` (None when the server does not answer it). A server that
        cannot be reached at all fails here, before a run starts, rather than after its retries."""
        import httpx

        try:
            resp = self._client.get(f"{self.base_url}/models", headers=self._headers(), timeout=min(self.timeout, 30))
        except httpx.ConnectError as exc:
            raise ServerError(f"{self.base_url}: cannot connect ({exc}); is the server running, and is base_url "
                              "the address it listens on?") from None
        except httpx.HTTPError:
            return None
        try:
            body = _answer_json(resp) if resp.status_code == 200 else None
            data = body.get("data") if isinstance(body, dict) else None
        except InputError:  # optional endpoint: a non-JSON answer means "not reported"
            return None
        return [m.get("id") for m in data if isinstance(m, dict)] if isinstance(data, list) else None

    # -- requests ---------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._key}"} if self._key else {}

    def _attempt(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
        import httpx

        try:
            resp = self._client.post(url, json=body, headers=self._headers())
        except httpx.TimeoutException as exc:
            raise _Retry(f"timed out ({type(exc).__name__})") from None
        except (httpx.TransportError, httpx.DecodingError) as exc:  # reset, refused, cut body
            raise _Retry(f"{type(exc).__name__}: {exc}") from None
        if resp.status_code in RETRY_STATUS:
            raise _Retry(f"HTTP {resp.status_code}", _retry_after(resp.headers.get("retry-after")))
        if resp.status_code != 200:
            hint = f" (is ${self.api_key_env} set to a valid key?)" if resp.status_code in (401, 403) else ""
            raise ServerError(f"{url}: HTTP {resp.status_code}{hint}: {redact_text(resp.text)[:200]!r}")
        try:
            data = _answer_json(resp)
        except InputError as exc:  # "response: not valid JSON (...)", NaN/Infinity and hostile nesting included
            raise _Retry(f"{exc} ({len(resp.content)} bytes: {redact_text(resp.text)[:80]!r})") from None
        problem = _response_problem(data, self.endpoint)
        if problem:
            raise _Retry(f"malformed response: {problem}")
        return data

    def _request(self, req: GenerationRequest, settings: GenerationSettings) -> GenerationResult:
        url = f"{self.base_url}/{'chat/completions' if self.endpoint == 'chat' else 'completions'}"
        # the rendered prompt as one user message (chat) or as the prompt (completions)
        body: dict[str, Any] = {"model": self.model_id, "max_tokens": settings.max_new_tokens, "n": 1, "stream": False}
        if self.endpoint == "chat":
            body["messages"] = [{"role": "user", "content": req.prompt}]
        else:
            body["prompt"] = req.prompt
        body["temperature"] = settings.temperature if settings.do_sample else 0.0
        if settings.do_sample and settings.top_p is not None:
            body["top_p"] = settings.top_p
        if self.send_seed:
            body["seed"] = req.seed
        for attempt in range(self.max_retries + 1):
            if self._stop.is_set():
                raise ServerError(f"{url}: instance {req.key}: abandoned (another request of the batch failed, or the "
                                  "run was interrupted)")
            try:
                data = self._attempt(url, body)
                break
            except _Retry as exc:
                if attempt == self.max_retries or self._stop.is_set():
                    raise ServerError(f"{url}: instance {req.key}: gave up after {attempt + 1} attempts; last: "
                                      f"{exc}; the run resumes from here with the same command") from None
                with self._lock:
                    self.retries += 1
                self._stop.wait(exc.wait if exc.wait is not None else _backoff(self.backoff, attempt))
        choice = data["choices"][0]
        text = choice["message"]["content"] if self.endpoint == "chat" else choice["text"]
        usage = data["usage"]
        served = {"model": data.get("model"), "system_fingerprint": data.get("system_fingerprint"),
                  "finish_reason": choice.get("finish_reason")}
        templated = sha256_json(body["messages"]) if self.endpoint == "chat" else sha256_text(req.prompt)
        return GenerationResult(output=text or "", templated_prompt_sha256=templated,
                                n_prompt_tokens=int(usage["prompt_tokens"]),
                                n_output_tokens=int(usage["completion_tokens"]), served=served)

    def default_batch_size(self, settings: GenerationSettings) -> int:
        """``BATCH_WAVES`` x ``concurrency`` (or the manifest's, if larger): fewer batch ends (outputs do
        not depend on how requests are batched)."""
        return max(settings.batch_size, BATCH_WAVES * self.concurrency)

    def generate(self, requests: list[GenerationRequest], settings: GenerationSettings) -> list[GenerationResult]:
        """All requests of the batch, ``concurrency`` at a time; results in request order."""
        return self.start(requests, settings)()

    def start(self, requests: list[GenerationRequest], settings: GenerationSettings
              ) -> Callable[[], list[GenerationResult]]:
        """Queue a batch's requests behind those of any batch started before and return what waits for
        its results (in request order): replay starts the next batch before it waits for this one, so
        the server is not left idle while this batch's answers are written."""
        if self.concurrency == 1:
            return lambda: [self._request(r, settings) for r in requests]
        if self._pool is None:  # one pool for the whole run: no thread start-up between batches
            self._pool = ThreadPoolExecutor(max_workers=self.concurrency)
        try:
            futures = [self._pool.submit(self._request, r, settings) for r in requests]
        except BaseException:
            self.close()
            raise

        def results() -> list[GenerationResult]:
            try:
                # the first failure, whichever request it is, ends the wait (waiting in request order
                # would sit out the earlier requests' timeouts first)
                done, _ = wait(futures, return_when=FIRST_EXCEPTION)
                for f in futures:
                    if f in done and f.exception() is not None:
                        raise f.exception()  # type: ignore[misc]
                return [f.result() for f in futures]
            except BaseException:
                self.close()
                raise

        return results

    def close(self) -> None:
        """End of the run, a failed request or Ctrl-C: stop retries, drop queued requests (a batch
        started ahead included) and cut in-flight ones instead of waiting up to ``timeout`` for each."""
        self._stop.set()
        self._client.close()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


MAX_URL_LENGTH = 2048
"""Longest ``base_url`` accepted: far above any real server root, below the request-line limits of
common servers (8 KiB), and short enough to quote in an error line."""


def check_base_url(url: str) -> str:
    """``base_url`` without its trailing ``/``, or one line naming what is wrong with it: not
    http(s), no host, a bad port, over :data:`MAX_URL_LENGTH`, or credentials in it (they would be
    written to run.json; a key belongs in the variable named by ``api_key_env``)."""
    import httpx

    text = redact_text(url)  # before the excerpt is cut: a cut key would no longer match
    shown = repr(text) if len(text) <= 80 else f"{text[:60]!r}... ({len(url)} characters)"

    def refused(expected: str) -> InputError:
        return InputError("--model-args", f"openai backend, key base_url: expected {expected}")

    if len(url) > MAX_URL_LENGTH:
        raise refused(f"a URL of at most {MAX_URL_LENGTH} characters, got {shown}")
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        raise refused(f"an http(s) URL such as http://127.0.0.1:8080/v1, got {shown} ({exc})") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise refused(f"an http(s) URL with a host, such as http://127.0.0.1:8080/v1, got {shown}")
    try:
        parsed.host.encode("idna")  # what the resolver does: a label over 63 characters fails only there
        if parsed.port is not None and not 0 < parsed.port < 65536:
            raise ValueError(f"port {parsed.port} is outside 1..65535")
    except (UnicodeError, ValueError) as exc:
        raise refused(f"an http(s) URL with a valid host name and port, got {shown} ({exc})") from None
    if parsed.userinfo:
        raise refused("a URL without user:password@ (it would be written to run.json); put the key in the "
                      "variable named by api_key_env")
    return url.rstrip("/")


def _answer_json(resp: Any) -> Any:
    """A response body parsed by the kit's bounded parser (no NaN/Infinity, no hostile nesting),
    then redacted string by string: a key the server sent JSON-escaped (``\\u0073k-...``) only
    appears once parsed. Every field the backend reads comes from here."""
    return redact_json(parse_json_text(resp.text, "response"))


def _response_problem(data: Any, endpoint: str) -> str | None:
    """What is wrong with a 200 response body, or None if it has the fields we record."""
    if not isinstance(data, dict):
        return f"expected a JSON object, got {type(data).__name__}"
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return "no 'choices' list"
    c = choices[0]
    if endpoint == "chat":
        msg = c.get("message")
        if not isinstance(msg, dict) or not isinstance(msg.get("content"), (str, type(None))):
            return "choices[0].message.content missing"
    elif not isinstance(c.get("text"), str):
        return "choices[0].text missing"
    usage = data.get("usage")
    if not isinstance(usage, dict) or not all(is_a(usage.get(k), int) for k in ("prompt_tokens", "completion_tokens")):
        return "usage.prompt_tokens / usage.completion_tokens missing"
    return None


def _retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds form), capped; None if absent or a date."""
    try:
        return min(max(float(value), 0.0), MAX_BACKOFF) if value is not None else None
    except ValueError:
        return None


def _backoff(base: float, attempt: int) -> float:
    """Exponential backoff with full jitter (AWS's recommendation): uniform in [0, base * 2^attempt]."""
    return random.uniform(0, min(MAX_BACKOFF, base * 2 ** attempt))


def make_openai_backend(model_id: str, revision: str, args: dict[str, Any], transport: Any = None) -> OpenAIBackend:
    """Build the backend from validated ``--model-args`` (``base_url`` is required)."""
    if "base_url" not in args:
        raise InputError("--model-args", "the openai backend needs base_url=URL (e.g. base_url=http://127.0.0.1:8080/v1)")
    backend = OpenAIBackend(model_id, revision, transport=transport, **args)
    if "api_key_env" in args and backend._key is None:  # named on purpose, so a key is meant to be sent
        backend.close()
        raise InputError("--model-args", f"openai backend, key api_key_env: ${args['api_key_env']} is not set (or "
                         "empty); export the key in it, or leave api_key_env out for a server that needs no key")
    return backend
