"""What every request passes before it reaches a route: REST, server-sent events, the viewer and ``/mcp`` alike.

- **Host** (DNS rebinding): a server whose socket is bound to loopback answers only requests naming a loopback
  host (``localhost``, ``127.0.0.1``, ``[::1]``) or one of ``allowed_hosts``; a server bound elsewhere checks the
  ``Host`` against ``allowed_hosts`` when any are given. Another host: 421.
- **Origin** (CSRF): a request a browser sent from another origin is refused (403): an ``Origin`` header that is
  neither this server's own origin (the request's ``Host``) nor one of ``allowed_hosts``, or ``Sec-Fetch-Site:
  cross-site``/``same-site`` on anything but a top-level navigation to a page. Programs that send neither
  header (curl, the SDKs) pass; a browser always sends ``Origin`` on a POST, so no web page can plant documents
  or start runs, whatever the auth mode.
- **One Authorization header**: two are refused (400) instead of one transport taking the first and another the
  last.
- **Bounded bodies**: a body over ``max_body`` bytes is refused (413) as soon as its declared length or the bytes
  read pass the limit; it is read here, so no route ever holds more (uploads, ``POST /v1/documents`` and ``POST
  /v1/libraries/{name}/documents``, are streamed by their route instead). A JSON body nested deeper or holding more
  values than :mod:`pagemind.limits` allows is refused before it is parsed (422 / 413): megabytes of tiny objects
  would cost a gigabyte of parsed objects, and deep nesting the parser's recursion.
- **HEAD** is served wherever GET is (the GET's headers, no body).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..limits import check_json_shape
from .net import is_loopback
from .shapes import error_for

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# uploads: bodies read by their route, streamed to a file against the document limits (a PDF may be 16x max_bytes)
STREAMED = re.compile(r"^/v1/documents/?$|^/v1/libraries/[^/]+/documents/?$")
# the routes that take a form (multipart uploads); every other route's body is JSON whatever its Content-Type says,
# so a form sent there is refused (415) instead of parsed past the JSON shape check
FORMS = re.compile(STREAMED.pattern + r"|^(?:/letta)?/v1/agents/import/?$")


@dataclass(frozen=True)
class EdgePolicy:
    max_body: int
    allowed_hosts: frozenset[str] = frozenset()  # lowercase host names (no port)


def host_name(value: str) -> str | None:
    """The host of a ``Host`` header value (``name[:port]``, ``[v6]:port``), lowercase; None when malformed."""
    try:
        parts = urlsplit("//" + value.strip())
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        return None
    return parts.hostname


def refusal(scope: Scope, policy: EdgePolicy) -> tuple[int, str, str] | None:
    """(status, error type, why) when the request may not pass; None when it may."""
    headers: dict[bytes, list[bytes]] = {}
    for name, value in scope.get("headers") or ():
        headers.setdefault(name.lower(), []).append(value)

    def one(name: bytes) -> str | None:
        values = headers.get(name)
        return values[-1].decode("latin-1") if values else None

    if len(headers.get(b"authorization", ())) > 1:
        return 400, "BadRequest", "send one Authorization header, not several"
    host_header = one(b"host") or ""
    host = host_name(host_header)
    server = scope.get("server")
    loopback_bound = server is not None and is_loopback(str(server[0]))
    if loopback_bound or policy.allowed_hosts:
        allowed = host is not None and (host in policy.allowed_hosts or (loopback_bound and is_loopback(host)))
        if not allowed:
            hint = " (behind a proxy: pagemind serve --allowed-host NAME)"
            return 421, "MisdirectedRequest", f"Host {host_header!r} is not a name of this server{hint}"
    origin = one(b"origin")
    if origin is not None:
        parts = urlsplit(origin)
        own = bool(parts.netloc) and parts.netloc.lower() == host_header.strip().lower()
        if not own and (parts.hostname or "") not in policy.allowed_hosts:
            return 403, "Forbidden", f"Origin {origin!r} may not call this server (another site's page)"
    site = one(b"sec-fetch-site")
    if site in ("cross-site", "same-site"):
        navigation = scope.get("method") in ("GET", "HEAD") and one(b"sec-fetch-mode") == "navigate"
        if not navigation:
            return 403, "Forbidden", f"a request from another site (Sec-Fetch-Site: {site}) may not call this server"
    return None


async def answer(send: Send, status: int, body: dict[str, Any], headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": data})


class Edge:
    """The ASGI middleware of the module's rules, around the whole app."""

    def __init__(self, app: ASGIApp, policy: EdgePolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = refusal(scope, self.policy)
        if refused is not None:
            status, kind, why = refused
            await drain(receive)
            await answer(send, status, error_for(scope["path"], status, why, kind))
            return
        if scope["method"] == "HEAD":
            await head(self.app, scope, receive, send)
            return
        if scope["method"] in ("POST", "PUT", "PATCH", "DELETE") and \
                not (scope["method"] == "POST" and STREAMED.match(scope["path"])):
            body = await read_body(scope, receive, self.policy.max_body)
            if body is None:
                await answer(send, 413, error_for(
                    scope["path"], 413,
                    f"the request body is over this server's {self.policy.max_body:,}-byte limit (--max-body)",
                    "InputTooLarge"), [(b"connection", b"close")])
                return
            if form_body(scope) and not FORMS.match(scope["path"]):
                await answer(send, 415, error_for(
                    scope["path"], 415, "this route takes a JSON body (Content-Type: application/json), not a form",
                    "UnsupportedInput"))
                return
            shape = None if form_body(scope) else check_json_shape(body)
            if shape is not None:  # refused before any parser builds its objects
                status = 413 if "values" in shape else 422
                await answer(send, status, error_for(scope["path"], status, shape, "InputError"))
                return
            receive = replay(body, receive)
        await self.app(scope, receive, send)


def form_body(scope: Scope) -> bool:
    """Whether the request's body is a form (multipart or URL-encoded), not JSON."""
    for name, value in scope.get("headers") or ():
        if name.lower() == b"content-type":
            kind = value.split(b";", 1)[0].strip().lower()
            return kind in (b"multipart/form-data", b"application/x-www-form-urlencoded")
    return False


async def drain(receive: Receive, most: int = 1 << 20) -> None:
    """Read (and drop) up to ``most`` bytes of a refused request's body, so a small one leaves the connection
    usable; a larger one is left unread (the server closes the connection)."""
    seen = 0
    while seen <= most:
        message = await receive()
        if message["type"] != "http.request":
            return
        seen += len(message.get("body", b""))
        if not message.get("more_body"):
            return


async def read_body(scope: Scope, receive: Receive, limit: int) -> bytes | None:
    """The whole body, or None as soon as its declared length or the bytes read pass ``limit``."""
    for name, value in scope.get("headers") or ():
        if name.lower() == b"content-length" and (not value.isdigit() or int(value) > limit):
            return None
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the body read once, then the client's later messages (a disconnect)."""
    sent = False

    async def again() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


async def head(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """HEAD as the GET's headers without its body; a stream (server-sent events) stops after its headers."""
    done = False

    async def headers_only(message: dict[str, Any]) -> None:
        nonlocal done
        if done:
            raise OSError("HEAD: the body is not sent")  # a streaming response takes this as a client gone
        if message["type"] == "http.response.start":
            await send(message)
        elif message["type"] == "http.response.body":
            done = True
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def gone_when_done() -> dict[str, Any]:
        return {"type": "http.disconnect"} if done else await receive()

    try:
        await app({**scope, "method": "GET"}, gone_when_done, headers_only)
    except OSError:
        if not done:
            raise


def allowed_methods(routes: Iterable[Any], scope: Mapping[str, Any]) -> list[str]:
    """Every method some route serves at the request's path (for the ``Allow`` header of a 405). Asked of each
    route as the router asks it (``matches``), so routes of included routers count too."""
    from starlette.routing import Match, Mount

    methods: set[str] = set()
    for route in routes:
        if isinstance(route, Mount):
            continue
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            match, _ = route.matches({**scope, "method": method})
            if match == Match.FULL:
                methods.add(method)
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)


__all__ = ["Edge", "EdgePolicy", "allowed_methods", "refusal"]
