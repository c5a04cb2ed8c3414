"""The staff console as one Starlette app: sign-in, then read-only pages over the run store.

Server-rendered HTML (Jinja2 with autoescape on, so request texts and tool output are
always shown as text), one stylesheet, no script, nothing loaded from elsewhere.
Only /login and /logout accept POST; everything else is GET and changes nothing.
"""

from __future__ import annotations

import json
import secrets
from datetime import datetime
from pathlib import Path

import jinja2
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from console.auth import (
    LOGIN_CSRF_COOKIE,
    SESSION_COOKIE,
    LoginThrottle,
    RequireStaff,
    SecurityHeaders,
    Sessions,
    check_staff_token,
    safe_next,
    token_matches,
)
from console.views import Views
from storage.db import StorageUnavailable
from storage.store import RunStore

HERE = Path(__file__).parent


def create_app(store: RunStore, *, staff_token: str) -> Starlette:
    """The console for `store`, open to holders of `staff_token` (ValueError if weak)."""
    token = check_staff_token(staff_token)
    sessions = Sessions(token, revocations=store.revocations)
    templates = Jinja2Templates(env=_environment())
    views = Views(store, templates)
    login = _Login(token, sessions, templates)
    app = Starlette(
        routes=[
            Route("/", lambda request: RedirectResponse("/runs", 303)),
            Route("/login", login.form, methods=["GET"]),
            Route("/login", login.submit, methods=["POST"]),
            Route("/logout", login.logout, methods=["POST"]),
            Route("/runs", views.runs),
            Route("/runs/{run_id}", views.run),
            Route("/runs/{run_id}/export.jsonl", views.export_run),
            Route("/overview", views.overview),
            Route("/export.jsonl", views.export),
            Route("/api/runs", views.api_runs),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ],
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(RequireStaff, sessions=sessions),
        ],
        exception_handlers={StorageUnavailable: _storage_unavailable},
    )
    app.state.sessions = sessions
    return app


async def _storage_unavailable(request: Request, exc: Exception) -> Response:
    return PlainTextResponse(
        "The run database is busy right now; reload in a moment.", status_code=503
    )


class _Login:
    """GET shows the form (with a fresh CSRF token), POST checks the staff token."""

    def __init__(self, token: str, sessions: Sessions, templates: Jinja2Templates) -> None:
        self.token = token
        self.sessions = sessions
        self.templates = templates
        self.throttle = LoginThrottle()

    def _form(self, request: Request, error: str | None = None, status_code: int = 200) -> Response:
        # Double-submit token: a cross-site form cannot read our cookie to copy it.
        csrf = request.cookies.get(LOGIN_CSRF_COOKIE) or secrets.token_urlsafe(24)
        response = self.templates.TemplateResponse(
            request,
            "login.html",
            {"csrf": csrf, "next": safe_next(request.query_params.get("next")), "error": error},
            status_code=status_code,
        )
        response.set_cookie(
            LOGIN_CSRF_COOKIE, csrf, httponly=True, samesite="strict", path="/login"
        )
        return response

    async def form(self, request: Request) -> Response:
        return self._form(request)

    async def submit(self, request: Request) -> Response:
        client = request.client.host if request.client else "unknown"
        form = await request.form()
        offered_csrf = str(form.get("csrf", ""))
        cookie_csrf = request.cookies.get(LOGIN_CSRF_COOKIE, "")
        if not cookie_csrf or not token_matches(cookie_csrf, offered_csrf):
            return self._form(request, "The form expired; please try again.", 403)
        # The right token always signs in; only wrong ones are limited (`LoginThrottle`).
        if not token_matches(self.token, str(form.get("token", "")).strip()):
            if self.throttle.blocked(client):
                response = self._form(request, "Too many attempts; wait a few minutes.", 429)
                response.headers["Retry-After"] = str(self.throttle.retry_after_s(client))
                return response
            self.throttle.failed(client)
            return self._form(request, "That is not the staff token.", 401)
        response = RedirectResponse(safe_next(str(form.get("next", ""))), 303)
        response.set_cookie(
            SESSION_COOKIE,
            self.sessions.issue(),
            max_age=self.sessions.ttl_s,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )
        response.delete_cookie(LOGIN_CSRF_COOKIE, path="/login")
        return response

    async def logout(self, request: Request) -> Response:
        session = request.scope.get("state", {}).get("staff_session")
        form = await request.form()
        if session is None or not self.sessions.form_token_ok(session, str(form.get("csrf", ""))):
            return PlainTextResponse("Bad sign-out request.", status_code=403)
        await self.sessions.revoke(session)
        response = RedirectResponse("/login", 303)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,  # everything from customers and tools is text, never markup
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = _when
    env.filters["seconds"] = _seconds
    env.filters["counted"] = counted
    env.filters["json"] = lambda value: json.dumps(value, ensure_ascii=False, default=str)
    return env


def _when(value: datetime | None, with_ms: bool = False) -> str:
    if value is None:
        return "—"
    text = value.strftime("%Y-%m-%d %H:%M:%S.%f")
    return (text[:-3] if with_ms else text[:-7]) + " UTC"


def counted(n: int, noun: str) -> str:
    """ "1 handoff", "2 handoffs" (the console's nouns take an s)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _seconds(value: float | None) -> str:
    if value is None:
        return "—"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 120:
        return f"{value:.2f} s"
    minutes, seconds = divmod(int(value), 60)
    if minutes < 120:
        return f"{minutes} min {seconds} s"
    return f"{minutes // 60} h {minutes % 60} min"
