"""A tiny OpenAI-compatible chat-completions server on 127.0.0.1 for tests and benchmarks (stdlib only).

Use it as a context manager::

    with MockServer(latency=0.1, script=[{"status": 429, "retry_after": 0}, {"text": "hello"}]) as server:
        backend = OpenAICompatible("mock", base_url=server.url)

Each request takes the next entry of ``script``; once the script is used up every request gets the
default reply. An entry is a dict with any of:

* ``text``: the reply content (default ``"ok"``); ``finish_reason`` and ``usage`` override those fields;
* ``status``: an HTTP status; with ``message`` as the error message and ``retry_after`` as a header;
* ``body``: a raw response body (string) sent as is, with ``status`` (default 200);
* ``garbage``: ``True`` for a 200 whose JSON has no ``choices``;
* ``latency``: seconds to wait before answering (default: the server's ``latency``);
* ``stream_error``: N for a stream that sends an error event (``data: {"error": {...}}``, with ``message``) after
  N chunks (at most all of them), then ``data: [DONE]`` (as vLLM does when generation fails);
* ``stream_cut``: N for a stream whose connection closes after N chunks, with no usage chunk and no ``[DONE]``
  (a cut connection; N at or past the last chunk sends the finish reason first, so the reply is complete).

A request with ``"stream": true`` gets its reply as server-sent events, one word a chunk. The two stream faults
apply to streaming requests only (a plain request given one answers normally). A fault in the first K script
entries is transient (a retry gets the reply); ``stream_fault`` (e.g. ``{"stream_cut": 2}``) is merged into every
streaming request until it is set back to ``None``, a fault that persists::

    with MockServer(text="Wren finds the map.", script=[{"stream_error": 2}]) as server:  # once, then the reply

``routes`` makes it look like a particular server to discovery: ``{"GET /props": {...}, "POST /tokenize": fn}``
maps a method and path to a JSON reply, a function of the request body returning one, or ``(status, reply)``.
Every such call is recorded in ``calls`` as ``(method, path, body)``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    mock: MockServer


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive: every reply carries Content-Length, so clients reuse connections
    disable_nagle_algorithm = True  # headers and body are two writes: with Nagle the body waits ~40 ms for an ACK

    def log_message(self, format: str, *args: Any) -> None:  # the stdlib's signature
        """Stay quiet."""

    def _route(self, method: str, raw: bytes = b"") -> bool:
        """Answer from the server's ``routes`` when one matches; True if it did."""
        mock = self.server.mock
        key = f"{method} {self.path.rstrip('/') or '/'}"
        if key not in mock.routes:
            return False
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        with mock._lock:
            mock.calls.append((method, self.path, body))
        reply = mock.routes[key]
        reply = reply(body) if callable(reply) else reply
        status, payload = reply if isinstance(reply, tuple) else (200, reply)
        self._send(status, payload)
        return True

    def do_GET(self) -> None:  # the stdlib's naming
        if self._route("GET"):
            return
        if self.path.rstrip("/") == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": "mock", "object": "model"}]})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:  # the stdlib's naming
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self._route("POST", raw):
            return
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            return
        mock = self.server.mock
        step = mock._begin(body, dict(self.headers.items()))
        ended = False
        try:
            mock._stopping.wait(float(step.get("latency", mock.latency)))
            # The request stops counting as in flight before its reply is written: once the client has the
            # reply it may send the next request before this thread would get to run again.
            mock._end()
            ended = True
            self._answer(step, body)
        except OSError:
            pass  # the client went away (a timeout test) or the server is stopping
        finally:
            if not ended:
                mock._end()

    def _answer(self, step: dict[str, Any], body: dict[str, Any]) -> None:
        status = int(step.get("status", 200))
        headers = {}
        if step.get("retry_after") is not None:
            headers["Retry-After"] = str(step["retry_after"])
        if "body" in step:
            self._send(status, step["body"], headers)
        elif step.get("garbage"):
            self._send(200, {"id": "mock-garbage", "object": "chat.completion", "oops": True})
        elif status != 200:
            message = step.get("message", f"mock error {status}")
            self._send(status, {"error": {"message": message, "type": "mock_error", "code": status}}, headers)
        else:
            mock = self.server.mock
            default = mock.text(body) if callable(mock.text) else mock.text
            text = str(step.get("text", default))
            prompt = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
            usage = step.get("usage", {
                "prompt_tokens": len(prompt.split()),
                "completion_tokens": len(text.split()),
                "total_tokens": len(prompt.split()) + len(text.split()),
            })
            reply = {
                "id": "mock-1",
                "object": "chat.completion",
                "model": body.get("model", "mock"),
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": text if not step.get("tool_calls") else
                                step.get("text"),
                                **({"tool_calls": [{"id": f"call_{i}", "type": "function",
                                                    "function": {"name": name, "arguments": json.dumps(args)}}
                                                   for i, (name, args) in enumerate(step["tool_calls"])]}
                                   if step.get("tool_calls") else {})},
                    "finish_reason": step.get("finish_reason", "stop"),
                }],
            }
            if usage is not None:
                reply["usage"] = usage
            if body.get("stream"):
                self._send_stream(text, step.get("finish_reason", "stop"), usage, body, step)
                return
            self._send(200, reply)

    def _send_stream(self, text: str, finish: str, usage: dict[str, Any] | None, body: dict[str, Any],
                     step: dict[str, Any]) -> None:
        """The reply as server-sent events, one word a chunk, then the usage chunk and ``[DONE]`` (as vLLM and
        llama.cpp server stream with ``stream_options.include_usage``); or the step's stream fault."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")  # no Content-Length: the end of the connection ends the stream
        self.end_headers()
        self.close_connection = True
        words = text.split(" ")
        pieces = [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]
        error_after, cut_after = step.get("stream_error"), step.get("stream_cut")
        for i, piece in enumerate([*pieces, None]):
            if i == error_after or (piece is None and error_after is not None):
                error = {"message": step.get("message", "mock generation failed"), "type": "server_error", "code": 500}
                self.wfile.write(f"data: {json.dumps({'error': error})}\n\ndata: [DONE]\n\n".encode())
                self.wfile.flush()
                return
            if i == cut_after or (piece is None and cut_after is not None):
                return  # the connection closes (Connection: close) with no [DONE]
            if piece is None:
                break
            choice = {"index": 0, "delta": {"content": piece}, "finish_reason": finish if i == len(pieces) - 1
                      else None}
            self.wfile.write(f"data: {json.dumps({'object': 'chat.completion.chunk', 'choices': [choice]})}\n\n"
                             .encode())
            self.wfile.flush()
        if usage is not None and (body.get("stream_options") or {}).get("include_usage"):
            self.wfile.write(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = payload.encode("utf-8") if isinstance(payload, str) else json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


class MockServer:
    """An OpenAI-compatible server in a background thread, with scripted faults and latency."""

    def __init__(self, latency: float = 0.0, script: list[dict[str, Any]] | None = None,
                 text: str | Callable[[dict[str, Any]], str] = "ok", routes: dict[str, Any] | None = None,
                 stream_fault: dict[str, Any] | None = None) -> None:
        """``text`` is the default reply, or a function of the request body that returns it; ``stream_fault`` a
        fault (``{"stream_error": N}`` or ``{"stream_cut": N}``) for every streaming request while it is set."""
        self.latency = latency
        self.routes = dict(routes or {})
        self.calls: list[tuple[str, str, Any]] = []
        self.script = list(script or [])
        self.text = text
        self.stream_fault = stream_fault
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []  # header names lower-cased, one dict per request
        self.in_flight = 0
        self.max_in_flight = 0
        self.first_request_at: float | None = None  # time.perf_counter() when the first chat request arrived
        self.last_reply_at: float | None = None  # ... and when the last reply was ready
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._url: str | None = None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL, ending in /v1 (still readable after the server stopped)."""
        if self._url is None:
            raise RuntimeError("MockServer is not running; use it as a context manager")
        return self._url

    def start(self) -> MockServer:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        if self._server is None:
            self._stopping.clear()
            self._server = _Server(("127.0.0.1", 0), _Handler)
            self._server.mock = self
            self._url = f"http://127.0.0.1:{self._server.server_port}/v1"
            self._thread = threading.Thread(
                target=self._server.serve_forever, args=(0.02,), name="pagemind-mockserver", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake sleeping handlers and release the port."""
        if self._server is not None:
            self._stopping.set()
            self._server.shutdown()
            self._server.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._server = self._thread = None

    def __enter__(self) -> MockServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _begin(self, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        with self._lock:
            self.requests.append(body)
            self.headers.append({k.lower(): v for k, v in headers.items()})
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            if self.first_request_at is None:
                self.first_request_at = time.perf_counter()
            step = dict(self.script.pop(0)) if self.script else {}
            if body.get("stream") and self.stream_fault:
                step = {**self.stream_fault, **step}
            return step

    def _end(self) -> None:
        with self._lock:
            self.in_flight -= 1
            self.last_reply_at = time.perf_counter()
