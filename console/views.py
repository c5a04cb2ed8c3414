"""The console's read-only pages and API: runs list, run page, overview, exports.

Every handler here is GET-only and only reads; the one connection they read through is
the run store's. Storage errors become a 503 page rather than a stack trace.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.templating import Jinja2Templates

from agent_core.models import ErrorType, RunStatus, utcnow
from console.charts import BarInput, bar_chart
from console.export import export_lines, run_line
from console.filters import parse_filter
from console.timeline import build_run_view
from storage.history import ANY_ERROR, Cursor
from storage.records import FailureCount
from storage.store import RunStore

PAGE_SIZE = 25
PERIODS: dict[str, tuple[str, timedelta | None]] = {
    "1h": ("last hour", timedelta(hours=1)),
    "24h": ("last 24 hours", timedelta(hours=24)),
    "7d": ("last 7 days", timedelta(days=7)),
    "30d": ("last 30 days", timedelta(days=30)),
    "all": ("all time", None),
}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# The executor's pause reasons, in words; a tool's own reason is shown as it is.
PAUSE_REASONS = {
    "high_risk": "high-risk action (high_risk): the customer must confirm it first",
    "arguments_changed": "the arguments changed after approval (arguments_changed): asked again",
}
# The same reasons for a step our team decides (staff approval, issue 14).
STAFF_PAUSE_REASONS = PAUSE_REASONS | {
    "high_risk": "high-risk action above the staff approval amount (high_risk): "
    "a staff member must approve it first",
}
JSONL = "application/x-ndjson; charset=utf-8"


class Views:
    def __init__(self, store: RunStore, templates: Jinja2Templates) -> None:
        self.store = store
        self.history = store.history
        self.templates = templates

    def _page(
        self, request: Request, name: str, status_code: int = 200, **context: Any
    ) -> Response:
        session = request.scope.get("state", {}).get("staff_session")
        sessions = request.app.state.sessions
        context["logout_token"] = sessions.form_token(session) if session else ""
        context["path"] = request.url.path
        return self.templates.TemplateResponse(request, name, context, status_code=status_code)

    async def runs(self, request: Request) -> Response:
        parsed = parse_filter(request.query_params)
        before = Cursor.decode(request.query_params.get("before"))
        after = None if before else Cursor.decode(request.query_params.get("after"))
        page = await self.history.search_runs(parsed.filter, before=before, after=after)
        effective = parsed.filter.effective()
        return self._page(
            request,
            "runs.html",
            # A bad value (an id no Telegram account has, an unknown status) is a bad
            # request: the page says which next to the form, and the rest still applies.
            status_code=400 if parsed.errors else 200,
            parsed=parsed,
            page=page,
            older=parsed.query(before=page.older.encode()) if page.older else None,
            newer=parsed.query(after=page.newer.encode()) if page.newer else None,
            export_query=parsed.query(),
            text_window_from=effective.since
            if parsed.filter.text and not parsed.filter.since
            else None,
            statuses=[s.value for s in RunStatus],
            error_types=[e.value for e in ErrorType],
            tools=await self.history.recent_tools(),
        )

    async def run(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        run = await self.store.load_run(run_id)
        if run is None:
            return self._page(request, "not_found.html", status_code=404, run_id=run_id)
        view = build_run_view(
            run, await self.history.timeline(run.id), await self.store.handoffs.for_run(run.id)
        )
        # Staff read people by name (issue 23 #8): whoever decided a step or closed a handoff.
        people = {s.approval.by_user_id for s in run.steps if s.approval is not None}
        people |= {h.closed_by for h in view.handoffs if h.closed_by is not None}
        names = {user_id: await self.store.handoffs.name_of(user_id) for user_id in people}
        return self._page(
            request,
            "run.html",
            view=view,
            run=run,
            pause_reasons=PAUSE_REASONS,
            staff_pause_reasons=STAFF_PAUSE_REASONS,
            names=names,
        )

    async def overview(self, request: Request) -> Response:
        period = request.query_params.get("period", "24h")
        if period not in PERIODS:
            period = "24h"
        label, delta = PERIODS[period]
        since = utcnow() - delta if delta else _EPOCH
        statuses = await self.history.status_counts(since)
        failures = await self.history.failure_counts(since)
        handoff_days = await self.history.handoffs_per_day(since)
        first_reply_s = await self.history.median_first_reply_s(since)
        since_q = {} if delta is None else {"since": since.strftime("%Y-%m-%dT%H:%M:%S")}
        return self._page(
            request,
            "overview.html",
            period=period,
            periods=PERIODS,
            label=label,
            since=since if delta else None,
            total=sum(statuses.values()),
            status_chart=bar_chart(
                "Runs by status",
                [
                    BarInput(
                        s.value,
                        statuses.get(s.value, 0),
                        _runs_link(status=s.value, **since_q),
                        s.value,
                    )
                    for s in RunStatus
                ],
            ),
            error_chart=bar_chart(
                "Failed attempts by error type", _by(failures, "error_type", since_q)
            ),
            tool_chart=bar_chart("Failed attempts by tool", _by(failures, "tool", since_q)),
            handoff_chart=bar_chart(
                "Handoffs to a person per day (UTC)",
                [BarInput(d.day.isoformat(), d.opened) for d in handoff_days],
            ),
            handoffs_total=sum(d.opened for d in handoff_days),
            handed_link=_runs_link(handed="1", **since_q),
            first_reply_s=first_reply_s,
            failures=[
                (f, _runs_link(error=f.error_type, tool=f.tool or "", **since_q)) for f in failures
            ],
        )

    async def export(self, request: Request) -> Response:
        parsed = parse_filter(request.query_params)
        if parsed.errors:
            return PlainTextResponse("\n".join(parsed.errors), status_code=400)
        stamp = utcnow().strftime("%Y%m%d-%H%M%S")
        return StreamingResponse(
            export_lines(self.store, parsed.filter),
            media_type=JSONL,
            headers={"content-disposition": f'attachment; filename="stepwise-runs-{stamp}.jsonl"'},
        )

    async def export_run(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        line = await run_line(self.store, run_id)
        if line is None:
            return JSONResponse({"error": "no such run"}, status_code=404)
        return Response(
            line,
            media_type=JSONL,
            headers={"content-disposition": f'attachment; filename="run-{_safe(run_id)}.jsonl"'},
        )

    async def api_runs(self, request: Request) -> Response:
        parsed = parse_filter(request.query_params)
        if parsed.errors:
            return JSONResponse({"errors": parsed.errors}, status_code=400)
        before = Cursor.decode(request.query_params.get("before"))
        after = None if before else Cursor.decode(request.query_params.get("after"))
        limit = _int(request.query_params.get("limit"), PAGE_SIZE)
        page = await self.history.search_runs(
            parsed.filter, before=before, after=after, limit=limit
        )
        return JSONResponse(
            {
                "items": [item.model_dump(mode="json") for item in page.items],
                "older": page.older.encode() if page.older else None,
                "newer": page.newer.encode() if page.newer else None,
            }
        )


def _runs_link(**params: str) -> str:
    return "/runs?" + urlencode({k: v for k, v in params.items() if v})


def _by(failures: list[FailureCount], key: str, since_q: dict[str, str]) -> list[BarInput]:
    totals: dict[str, int] = {}
    for failure in failures:
        name = (failure.error_type if key == "error_type" else failure.tool) or "-"
        totals[name] = totals.get(name, 0) + failure.count

    def link(name: str) -> str:
        if key == "error_type":
            return _runs_link(error=name, **since_q)
        return _runs_link(error=ANY_ERROR, tool="" if name == "-" else name, **since_q)

    return [
        BarInput(name, count, link(name), "failure")
        for name, count in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def _safe(name: str) -> str:
    """A file name part that cannot break out of the Content-Disposition quotes."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:64]


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value else default
    except ValueError:
        return default
