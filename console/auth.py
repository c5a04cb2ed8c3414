"""Who may see the console: holders of the staff token, nobody else.

Staff sign in once with `STEPWISE_STAFF_TOKEN` (compared with `hmac.compare_digest`, so
the comparison takes the same time however much of a guess is right) and get a signed
session cookie: HttpOnly (page scripts cannot read it) and SameSite=Strict (other sites
cannot make the browser send it, which is what makes GET-only pages CSRF-safe). The cookie
is signed with a key derived from the token, so changing the token signs everyone out.

`RequireStaff` is ASGI middleware in front of every route: deny by default, with only the
login page and static files open. Pages redirect to /login; the API and exports answer 401.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import quote

from starlette.datastructures import MutableHeaders
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from storage.db import StorageUnavailable

log = logging.getLogger(__name__)

SESSION_COOKIE = "stepwise_staff"
LOGIN_CSRF_COOKIE = "stepwise_login_csrf"
SESSION_TTL_S = 12 * 3600
MIN_TOKEN_CHARS = 16
_OPEN_PATHS = ("/login", "/static/")
_API_PREFIXES = ("/api/", "/export")


def check_staff_token(token: str) -> str:
    """The token itself, or ValueError: an empty or short token would invite guessing."""
    token = token.strip()
    if len(token) < MIN_TOKEN_CHARS:
        raise ValueError(
            f"STEPWISE_STAFF_TOKEN must be at least {MIN_TOKEN_CHARS} characters"
            " (e.g. python -c 'import secrets; print(secrets.token_urlsafe(24))')"
        )
    return token


def new_staff_token() -> str:
    """A random token for a console started without STEPWISE_STAFF_TOKEN (the demo)."""
    return secrets.token_urlsafe(24)


def token_matches(expected: str, offered: str) -> bool:
    """Constant-time comparison, on bytes so non-ASCII input cannot raise."""
    return hmac.compare_digest(expected.encode(), offered.encode())


@dataclass(frozen=True)
class Session:
    nonce: str
    expires: int


class RevocationStore(Protocol):
    """Where signed-out sessions are kept (`storage.revocations.sqlite.Revocations`: with the
    runs, so a sign-out survives a restart)."""

    async def revoke(self, nonce: str, expires_at: int, now: int) -> None: ...

    async def is_revoked(self, nonce: str, now: int) -> bool: ...


@dataclass
class Sessions:
    """Issues and checks signed session cookies: `v1.<expires>.<nonce>.<signature>`.

    Stateless apart from the nonces of signed-out sessions, kept until they would have
    expired anyway, so signing out really ends a session even if its cookie was copied.
    They are written to `revocations` (the database) and checked there on every request
    (`check`), so a restart does not bring a signed-out cookie back; `verify` alone
    knows only this process's sign-outs.
    """

    staff_token: str
    ttl_s: int = SESSION_TTL_S
    clock: Callable[[], float] = time.time
    revocations: RevocationStore | None = None
    _revoked: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._key = hmac.new(
            self.staff_token.encode(), b"stepwise-console-session-v1", hashlib.sha256
        ).digest()

    def _sign(self, payload: str) -> str:
        return hmac.new(self._key, payload.encode(), hashlib.sha256).hexdigest()

    def issue(self) -> str:
        payload = f"v1.{int(self.clock()) + self.ttl_s}.{secrets.token_urlsafe(16)}"
        return f"{payload}.{self._sign(payload)}"

    def verify(self, cookie: str | None) -> Session | None:
        if not cookie:
            return None
        payload, _, signature = cookie.rpartition(".")
        if not hmac.compare_digest(self._sign(payload).encode(), signature.encode()):
            return None
        version, _, rest = payload.partition(".")
        expires_text, _, nonce = rest.partition(".")
        if version != "v1" or not expires_text.isdigit() or not nonce:
            return None
        session = Session(nonce=nonce, expires=int(expires_text))
        if session.expires <= self.clock() or nonce in self._revoked:
            return None
        return session

    async def check(self, cookie: str | None) -> Session | None:
        """`verify`, and the session was not signed out by any process, ever."""
        session = self.verify(cookie)
        if session is None or self.revocations is None:
            return session
        if await self.revocations.is_revoked(session.nonce, int(self.clock())):
            return None
        return session

    async def revoke(self, session: Session) -> None:
        """Sign `session` out: durably first (raises StorageUnavailable if it cannot be)."""
        now = self.clock()
        if self.revocations is not None:
            await self.revocations.revoke(session.nonce, session.expires, int(now))
        self._revoked = {n: exp for n, exp in self._revoked.items() if exp > now}
        self._revoked[session.nonce] = session.expires

    def form_token(self, session: Session) -> str:
        """The CSRF token of a signed-in session's forms (only /logout posts)."""
        return self._sign(f"form.{session.nonce}")

    def form_token_ok(self, session: Session, offered: str) -> bool:
        return hmac.compare_digest(self.form_token(session).encode(), offered.encode())


@dataclass
class LoginThrottle:
    """At most `limit` wrong tokens per client address in `window_s` seconds; beyond that a
    wrong token is answered "too many attempts" until the oldest leaves the window.

    Only wrong tokens are limited, never the right one: behind a reverse proxy every staff
    member shares one address, so refusing the right token there would let anyone who
    types garbage lock the staff out. Guessing is no shortcut: a token has at least
    `MIN_TOKEN_CHARS` characters, and a throttled address is logged once per window.
    """

    limit: int = 10
    window_s: float = 300.0
    clock: Callable[[], float] = time.monotonic
    _failures: dict[str, deque[float]] = field(default_factory=dict)

    def _recent(self, client: str) -> deque[float]:
        failures = self._failures.setdefault(client, deque())
        while failures and failures[0] <= self.clock() - self.window_s:
            failures.popleft()
        if not failures:
            del self._failures[client]
            return deque()
        return failures

    def blocked(self, client: str) -> bool:
        return len(self._recent(client)) >= self.limit

    def retry_after_s(self, client: str) -> int:
        """Whole seconds until the address's oldest wrong token leaves the window."""
        failures = self._recent(client)
        if len(failures) < self.limit:
            return 0
        return max(1, math.ceil(failures[0] + self.window_s - self.clock()))

    def failed(self, client: str) -> None:
        """Count a wrong token that was checked (refused ones are not kept: a flood of them
        would grow memory, and the window is counted from the checked ones)."""
        before = len(self._recent(client))
        self._failures.setdefault(client, deque()).append(self.clock())
        if before + 1 == self.limit:
            log.warning(
                "console: %d wrong staff tokens from %s in %g s; its wrong tokens are refused"
                " for now (the right one still signs in)",
                self.limit,
                client,
                self.window_s,
            )


def safe_next(target: str | None) -> str:
    """Only local paths: `next=https://evil.example` must not turn login into a redirector."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/runs"
    return target


class RequireStaff:
    """ASGI middleware: no route below it answers without a valid session."""

    def __init__(self, app: ASGIApp, sessions: Sessions) -> None:
        self.app = app
        self.sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if path == "/login" or path.startswith(_OPEN_PATHS[1]):
            await self.app(scope, receive, send)
            return
        conn = HTTPConnection(scope)
        try:
            session = await self.sessions.check(conn.cookies.get(SESSION_COOKIE))
        except StorageUnavailable:
            busy = PlainTextResponse("The run database is busy right now; reload in a moment.", 503)
            await busy(scope, receive, send)
            return
        if session is not None:
            scope.setdefault("state", {})["staff_session"] = session
            await self.app(scope, receive, send)
            return
        response: Response
        if path.startswith(_API_PREFIXES) or path.endswith(".jsonl"):
            response = JSONResponse({"error": "sign in with the staff token"}, status_code=401)
        else:
            target = path + (f"?{conn.url.query}" if conn.url.query else "")
            response = RedirectResponse(f"/login?next={quote(target, safe='')}", 303)
        await response(scope, receive, send)


# The pages use no inline script and no third-party resource, so the policy can be strict.
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'none';"
        " form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


class SecurityHeaders:
    """ASGI middleware adding SECURITY_HEADERS to every response (cached static excepted)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = str(scope["path"]).startswith("/static/")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    if not (static and name == "cache-control"):
                        headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)
