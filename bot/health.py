"""`/healthz`, `/readyz` and `/metrics` of a running bot (`stepwise serve`).

* `/healthz` — liveness: the process answers and its event loop turns (a ticker measures
  how late it wakes; more than `max_lag_s` behind is failing). No database, no network:
  a restart is the only cure for what it reports.
* `/readyz` — readiness: the database answers, its schema is the one this stepwise knows,
  the Bot API answered `getMe`, this process holds the poller lease or could take it (a
  hot standby whose last try reached the database; a webhook replica has no lease), and
  the inbox backlog is below a bound. 200 when all pass, else 503.
* `/metrics` — the Prometheus text format of `bot.metrics.REGISTRY`, with the database
  gauges refreshed first.

Cheap enough for a probe every second: the checks that touch the database or Telegram
are computed at most once per `cache_s` (concurrent probes share one computation), each
bounded by `check_timeout_s`; the clock is injected. Bodies are JSON with each check's
name, "ok"/"failing" and a short reason: no secrets, no ids, nothing from customers. No
authentication: bind the health port to an address only the orchestrator and Prometheus
reach (loopback by default).

Served on its own port by `serve_health` (Starlette on uvicorn, in the bot's loop). The
webhook's port is public, so they are served there too (`add_webhook_routes`) only when
`STEPWISE_HEALTH_ON_WEBHOOK` says so.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import tornado.web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from telegram.ext import Application

from bot.application import receiver_of
from bot.metrics import DATABASE_GAUGES, REGISTRY, DatabaseGauges, DatabaseSnapshot
from serving import EmbeddedServer, serve_embedded
from storage.store import RunStore

log = logging.getLogger(__name__)

Clock = Callable[[], float]
DEFAULT_BACKLOG_MAX = 1000


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    reason: str = ""

    def as_json(self) -> dict[str, str]:
        body = {"name": self.name, "status": "ok" if self.ok else "failing"}
        if self.reason:
            body["reason"] = self.reason
        return body


@dataclass(frozen=True)
class Report:
    ok: bool
    checks: tuple[Check, ...]

    def body(self) -> bytes:
        status = "ok" if self.ok else "failing"
        checks = [c.as_json() for c in self.checks]
        return json.dumps({"status": status, "checks": checks}).encode()


class LoopLag:
    """How late the event loop runs: a task that sleeps `every_s` and notes how much later
    it woke. A blocked loop shows as a growing gap since the last beat."""

    def __init__(
        self,
        every_s: float = 0.5,
        clock: Clock = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.every_s = every_s
        self.clock = clock
        self.sleep = sleep
        self.lag = 0.0
        self.beat = clock()

    async def run(self) -> None:
        while True:
            started = self.clock()
            await self.sleep(self.every_s)
            self.beat = self.clock()
            self.lag = max(0.0, self.beat - started - self.every_s)

    def behind(self) -> float:
        return max(self.lag, self.clock() - self.beat - self.every_s)


class Health:
    """The checks of one bot process (see the module)."""

    def __init__(
        self,
        application: Application[Any, Any, Any, Any, Any, Any],
        store: RunStore,
        *,
        backlog_max: int = DEFAULT_BACKLOG_MAX,
        cache_s: float = 1.0,
        check_timeout_s: float = 3.0,
        max_lag_s: float = 5.0,
        clock: Clock = time.monotonic,
        wall_clock: Clock = time.time,
        gauges: DatabaseGauges = DATABASE_GAUGES,
    ) -> None:
        self.application = application
        self.store = store
        self.backlog_max = backlog_max
        self.cache_s = cache_s
        self.check_timeout_s = check_timeout_s
        self.max_lag_s = max_lag_s
        self.clock = clock
        self.wall_clock = wall_clock
        self.gauges = gauges
        self.loop = LoopLag(clock=clock)
        self._ready: tuple[float, Report] | None = None
        self._ready_lock = asyncio.Lock()
        self._gauges_at: float | None = None
        self._gauges_lock = asyncio.Lock()
        self.backlog_seen: int | None = None  # the inbox backlog the last check read (None: unread)

    # -- liveness ------------------------------------------------------------------------

    def live(self) -> Report:
        behind = self.loop.behind()
        if behind > self.max_lag_s:
            check = Check("event_loop", False, f"the event loop is {behind:.1f} s behind")
        else:
            check = Check("event_loop", True)
        return Report(check.ok, (check,))

    # -- readiness -----------------------------------------------------------------------

    async def ready(self) -> Report:
        """The readiness report, recomputed at most once per `cache_s`."""
        async with self._ready_lock:
            if self._ready is not None and self.clock() - self._ready[0] < self.cache_s:
                return self._ready[1]
            checks = await asyncio.gather(
                self._bounded("database", self._database),
                self._bounded("telegram", self._telegram),
                self._bounded("poller_lease", self._poller_lease),
                self._bounded("inbox_backlog", self._inbox_backlog),
            )
            flat = tuple(c for group in checks for c in group)
            report = Report(all(c.ok for c in flat), flat)
            self._ready = (self.clock(), report)
            return report

    async def _bounded(self, name: str, check: Callable[[], Awaitable[list[Check]]]) -> list[Check]:
        try:
            async with asyncio.timeout(self.check_timeout_s):
                return await check()
        except TimeoutError:
            return [Check(name, False, f"no answer within {self.check_timeout_s:g} s")]
        except Exception as exc:
            return [Check(name, False, _short(exc))]

    async def _database(self) -> list[Check]:
        try:
            version, known = await self.store.history.schema_version()
        except Exception as exc:
            return [Check("database", False, _short(exc)), Check("migrations", False, "unknown")]
        if version == known:
            migrations = Check("migrations", True)
        else:
            migrations = Check(
                "migrations", False, f"schema version {version}, this stepwise knows {known}"
            )
        return [Check("database", True), migrations]

    async def _telegram(self) -> list[Check]:
        await self.application.bot.get_me()
        return [Check("telegram", True)]

    async def _poller_lease(self) -> list[Check]:
        receiver = receiver_of(self.application)
        if receiver is None:
            return [Check("poller_lease", False, "not receiving updates yet")]
        if receiver.poller is None:
            return [Check("poller_lease", True, "webhook: no poller lease")]
        # "holds the poller lease but has not polled for N s" is a failure of its own,
        # never "standby" (`Poller.lease_problem`).
        problem = receiver.poller.lease_problem()
        if problem is not None:
            return [Check("poller_lease", False, problem)]
        state = "holding" if receiver.poller.holding() else "standby"
        return [Check("poller_lease", True, state)]

    async def _inbox_backlog(self) -> list[Check]:
        self.backlog_seen = None
        receiver = receiver_of(self.application)
        if receiver is None:
            return [Check("inbox_backlog", False, "not receiving updates yet")]
        waiting, _ = await receiver.intake.inbox.backlog()
        self.backlog_seen = waiting
        reason = f"{waiting} update(s) waiting (bound {self.backlog_max})"
        return [Check("inbox_backlog", waiting < self.backlog_max, reason)]

    async def backlog(self) -> tuple[int, int] | None:
        """(waiting, bound) as the readiness check reads them (for the staff alert of a
        backlog above its bound, `bot.alerts`); None when it could not read the backlog."""
        await self.ready()
        seen = self.backlog_seen
        return None if seen is None else (seen, self.backlog_max)

    async def ready_words(self) -> str:
        """`ready()` in words (`report_words`), for `/status`."""
        return report_words(await self.ready())

    # -- metrics -------------------------------------------------------------------------

    async def metrics(self) -> bytes:
        """The registry in the text format, the database gauges read at most once per
        `cache_s` first."""
        async with self._gauges_lock:
            if self._gauges_at is None or self.clock() - self._gauges_at >= self.cache_s:
                self.gauges.set(await self._snapshot())
                self._gauges_at = self.clock()
        return generate_latest(REGISTRY)

    async def _snapshot(self) -> DatabaseSnapshot | None:
        try:
            async with asyncio.timeout(self.check_timeout_s):
                approvals = await self.store.history.pending_approvals()
                handoffs = await self.store.handoffs.all_open()
                receiver = receiver_of(self.application)
                backlog = (0, None) if receiver is None else await receiver.intake.inbox.backlog()
        except Exception as exc:
            log.debug("metrics: database gauges not read: %s", exc)
            return None
        return DatabaseSnapshot(
            approvals={
                who: (n, oldest.timestamp() if oldest else None)
                for who, (n, oldest) in approvals.items()
            },
            handoffs_open=len(handoffs),
            inbox_backlog=backlog[0],
            inbox_oldest=backlog[1],
        )


def report_words(report: Report) -> str:
    """The readiness report in words (`/status` in the staff group): a verdict, then one
    line per check with its reason; the same checks and reasons `/readyz` answers."""
    failing = [c for c in report.checks if not c.ok]
    if failing:
        lines = [f"Not ready: {len(failing)} check(s) failing."]
    else:
        lines = ["Ready: every check passes."]
    for check in report.checks:
        mark = "✔" if check.ok else "✘"
        name = check.name.replace("_", " ")
        lines.append(f"{mark} {name}" + (f": {check.reason}" if check.reason else ""))
    return "\n".join(lines)


def _short(exc: BaseException) -> str:
    """A reason without details that could carry secrets or data: the error's type."""
    return f"{type(exc).__name__}"


# -- serving -------------------------------------------------------------------------------

JSON_TYPE = "application/json"


def health_app(health: Health) -> Starlette:
    async def healthz(request: Request) -> Response:
        report = health.live()
        return Response(report.body(), 200 if report.ok else 503, media_type=JSON_TYPE)

    async def readyz(request: Request) -> Response:
        report = await health.ready()
        return Response(report.body(), 200 if report.ok else 503, media_type=JSON_TYPE)

    async def metrics(request: Request) -> Response:
        return Response(await health.metrics(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    return Starlette(
        routes=[
            Route("/healthz", healthz),
            Route("/readyz", readyz),
            Route("/metrics", metrics),
        ]
    )


HealthServer = EmbeddedServer  # the health endpoints' name for it, kept for its callers


async def serve_health(health: Health, host: str, port: int) -> HealthServer:
    """Serve `health` on host:port (0 picks a free port); returns once it listens. OSError
    when the address is unavailable (bound here, so it is an ordinary error)."""
    return await serve_embedded(health_app(health), host, port, name="stepwise-health", grace_s=1)


# -- the same paths on the webhook's server ------------------------------------------------


class _HealthHandler(tornado.web.RequestHandler):
    def initialize(self, health: Health, what: str) -> None:
        self.health = health
        self.what = what

    async def get(self) -> None:
        if self.what == "metrics":
            body = await self.health.metrics()
            self.set_header("Content-Type", CONTENT_TYPE_LATEST)
            self.finish(body)
            return
        report = self.health.live() if self.what == "healthz" else await self.health.ready()
        self.set_status(200 if report.ok else 503)
        self.set_header("Content-Type", JSON_TYPE)
        self.finish(report.body())


def add_webhook_routes(
    application: Application[Any, Any, Any, Any, Any, Any], health: Health
) -> bool:
    """Serve /healthz, /readyz and /metrics on the running webhook's server too (PTB's
    tornado app); False when there is none (long polling) or its shape is unknown."""
    updater = application.updater
    httpd = getattr(updater, "_httpd", None) if updater is not None else None
    server = getattr(httpd, "_http_server", None)
    app = getattr(server, "request_callback", None)
    if not isinstance(app, tornado.web.Application):
        return False
    app.add_handlers(
        r".*",
        [
            (f"/{what}", _HealthHandler, {"health": health, "what": what})
            for what in ("healthz", "readyz", "metrics")
        ],
    )
    return True
