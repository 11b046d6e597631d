"""A scripted OpenAI-compatible server on 127.0.0.1 for fault-injection tests (stdlib only).

Each POST takes the next behaviour from ``script`` (then ``default``): ``ok``, an HTTP status such
as ``429``/``500``/``401``, ``timeout`` (answer after ``slow`` seconds), ``truncated`` (promise more
bytes than sent, then close), ``malformed`` (200 with a non-JSON body) or ``no_usage`` (200 JSON
without the usage block). Every request's path, headers and body are kept for assertions.

A hostile server echoes the Authorization header it received: ``echo_text`` (in the completion
text), ``echo_meta`` (as ``model``, ``system_fingerprint`` and ``finish_reason``), ``echo_escaped``
(in the text, every character JSON-escaped as ``\\uXXXX``), ``echo_field`` (as an extra field and a
JSON key), ``<status>echo`` (a JSON error body quoting it, e.g. ``401echo``; ``400late`` quotes it
across character 200, where an excerpt is cut), ``400raw`` (a non-JSON error body) and
``malformed_echo`` (a 200 non-JSON body); ``echo_models=True`` lists it as a model id on ``/models``.
``nan_meta`` answers ``"system_fingerprint": NaN`` (not JSON, but what Python's json writes).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeServer:
    def __init__(self, script: list[str] | None = None, default: str = "ok", slow: float = 1.0,
                 delay: float = 0.0, echo_models: bool = False):
        self.script: deque[str] = deque(script or [])
        self.default, self.slow, self.delay = default, slow, delay
        self.echo_models = echo_models
        self.requests: list[dict[str, Any]] = []
        self.in_flight = self.max_in_flight = 0
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> FakeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def next_behaviour(self) -> str:
        with self.lock:
            return self.script.popleft() if self.script else self.default

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep pytest output clean
                pass

            def _send(self, status: int, body: bytes, length: int | None = None) -> None:
                self._leave()  # before the answer goes out: the client may send its next request on reading it
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body) if length is None else length))
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()

            def do_GET(self) -> None:
                if self.path.endswith("/models"):
                    ids = ["fake-model"] + ([self.headers.get("Authorization", "")] if server.echo_models else [])
                    self._send(200, json.dumps({"object": "list", "data": [{"id": i} for i in ids]}).encode())
                else:
                    self._send(404, b"{}")

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with server.lock:
                    server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body,
                                            "in_flight": server.in_flight})  # answers awaited as it arrived
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                self.counted = True
                try:
                    self._answer(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and hung up: the expected end of a ``timeout`` answer
                finally:
                    self._leave()

            def _leave(self) -> None:
                """A request stops counting as in flight once, when its answer starts: counting until the
                handler returned let the client's next request arrive first and read one over the bound."""
                if getattr(self, "counted", False):
                    self.counted = False
                    with server.lock:
                        server.in_flight -= 1

            def _answer(self, body: dict[str, Any]) -> None:
                what = server.next_behaviour()
                if server.delay:
                    time.sleep(server.delay)
                auth = self.headers.get("Authorization", "")
                if what.isdigit():
                    self._send(int(what), json.dumps({"error": {"message": f"scripted {what}"}}).encode())
                    return
                if what[:3].isdigit() and what[3:] in ("echo", "late"):
                    pad = "x" * 156 if what.endswith("late") else ""  # the key then straddles character 200
                    self._send(int(what[:3]), json.dumps({"error": {"message": f"{pad}bad key: {auth}"}}).encode())
                    return
                if what == "400raw":
                    self._send(400, f"<html>Bad request from {auth}</html>".encode())
                    return
                if what == "malformed_echo":
                    self._send(200, f"<html>hello {auth}</html>".encode())
                    return
                if what == "timeout":
                    time.sleep(server.slow)
                text = f"answer seed={body.get('seed')} len={len(json.dumps(body))}"
                if what in ("echo_text", "echo_escaped"):
                    text += f" you sent {auth}"
                choice: dict[str, Any] = {"index": 0, "finish_reason": auth if what == "echo_meta" else "stop"}
                if self.path.endswith("/chat/completions"):
                    choice["message"] = {"role": "assistant", "content": text}
                else:
                    choice["text"] = text
                resp: dict[str, Any] = {"id": "x", "object": "chat.completion", "model": "fake-model",
                                        "system_fingerprint": "fp_fake", "choices": [choice],
                                        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}}
                if what == "no_usage":
                    del resp["usage"]
                if what == "echo_meta":
                    resp["model"] = resp["system_fingerprint"] = auth
                if what == "echo_field":
                    resp["debug"] = {auth: [auth]}
                raw = json.dumps(resp).encode()
                if what == "nan_meta":  # what Python's json.dumps writes for float("nan")
                    raw = raw.replace(b'"fp_fake"', b"NaN")
                if what == "echo_escaped":
                    escaped = "".join(f"\\u{ord(c):04x}" for c in auth)
                    raw = raw.replace(json.dumps(auth)[1:-1].encode(), escaped.encode())
                if what == "malformed":
                    self._send(200, b"<html>gateway hiccup</html>")
                elif what == "truncated":
                    self._send(200, raw[: len(raw) // 2], length=len(raw))
                    self.close_connection = True
                else:
                    self._send(200, raw)

        return Handler
