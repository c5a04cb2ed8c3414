"""Prometheus metrics of one bot process (`GET /metrics`, served by `stepwise.health`).

One plain `CollectorRegistry` per process, on purpose: prometheus_client's multiprocess
mode is for pre-fork servers (gunicorn workers sharing one port and one scrape), and
stepwise replicas are separate processes, each with its own `/metrics` that Prometheus
scrapes as its own target (sum over `instance` in queries). Nothing is shared on disk.

Fed from the existing seams rather than calls sprinkled through the code:

* `RunMetrics`: a journal listener (`Runtime.add_listener`), told every committed
  transition like the bot's progress messages: runs, steps, tools, retries, reconciles,
  unknown outcomes, decisions, and what was understood (the run's interpretation, at its
  end);
* the rate limiter (`bot.ratelimit`) every Bot API call but getUpdates passes through:
  calls by method and result, 429s, the limiter's wait; the poller its getUpdates;
* the inbox (`bot.inbox`) and the poller (`bot.polling`): processing lag, takeovers,
  poller changes; the handoff desk the time to a first staff reply;
* `DatabaseGauges`: what only the database knows (approvals waiting and their age,
  handoffs open, the inbox backlog), read at scrape time, cached (`refresh`).

Label values come from closed sets only (`bounded`): tool names the runtime declared,
error types and statuses of the models' enums, Bot API methods the bot uses; anything else
is "other". Never a user id, an order id or free text.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from telegram.error import (
    BadRequest,
    Conflict,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TelegramError,
    TimedOut,
)

from agent_core.execution.policy import Verdict
from agent_core.models import ErrorType, EventKind, Run, RunEvent, RunStatus

log = logging.getLogger(__name__)

OTHER = "other"

REGISTRY = CollectorRegistry(auto_describe=True)
# The usual process_* / python_* series, on this registry (not prometheus_client's global).
for _collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
    REGISTRY.register(_collector)


def bounded(value: str | None, allowed: Collection[str]) -> str:
    """`value` if it is one of `allowed`, else "other": a label from a closed set."""
    return value if value is not None and value in allowed else OTHER


# -- the closed sets -----------------------------------------------------------------------


class ToolNames:
    """The tools the runtime declared (the catalog in use); set once at wiring."""

    def __init__(self) -> None:
        self.names: frozenset[str] = frozenset()

    def declare(self, names: Iterable[str]) -> None:
        self.names = self.names | frozenset(names)

    def label(self, tool: str | None) -> str:
        return bounded(tool, self.names)


TOOLS = ToolNames()
ERROR_TYPES = frozenset(e.value for e in ErrorType)
RUN_STATUSES = frozenset(s.value for s in RunStatus)
VERDICTS = frozenset(v.value for v in Verdict)
# The Bot API methods this bot calls (and the stand-in serves); any other is "other".
TELEGRAM_METHODS = frozenset(
    {
        "getMe",
        "getUpdates",
        "deleteWebhook",
        "setWebhook",
        "getWebhookInfo",
        "setMyCommands",
        "sendMessage",
        "editMessageText",
        "editMessageReplyMarkup",
        "deleteMessage",
        "answerCallbackQuery",
        "sendChatAction",
        "copyMessage",
        "forwardMessage",
        "getChat",
        "getChatMember",
        "createForumTopic",
        "editForumTopic",
        "closeForumTopic",
        "reopenForumTopic",
        "pinChatMessage",
        "unpinChatMessage",
        "sendPhoto",
        "sendDocument",
        "sendSticker",
        "sendVoice",
        "close",
        "logOut",
    }
)
_METHODS_BY_LOWER = {m.lower(): m for m in TELEGRAM_METHODS}

# -- runs, steps, tools --------------------------------------------------------------------

RUNS_STARTED = Counter(
    "stepwise_runs_started",
    "Runs recorded, by kind: plan (it has steps), clarify (a question back), refusal (none)",
    ["kind"],
    registry=REGISTRY,
)
RUNS_FINISHED = Counter(
    "stepwise_runs_finished", "Runs that ended, by final status", ["status"], registry=REGISTRY
)
STEP_SECONDS = Histogram(
    "stepwise_step_duration_seconds",
    "From a step's start to its end (succeeded or failed; retries' backoff included), by tool",
    ["tool"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
    registry=REGISTRY,
)
TOOL_FAILURES = Counter(
    "stepwise_tool_failures",
    "Failed tool calls (every failed attempt, retried or final), by tool and error type",
    ["tool", "error_type"],
    registry=REGISTRY,
)
STEP_RETRIES = Counter(
    "stepwise_step_retries", "Retries of a step after a failed attempt", ["tool"], registry=REGISTRY
)
RECONCILED = Counter(
    "stepwise_steps_reconciled",
    "Reconcile reads of a change that may have happened (step_reconciled), by verdict",
    ["tool", "verdict"],
    registry=REGISTRY,
)
UNKNOWN_OUTCOMES = Counter(
    "stepwise_unknown_outcomes",
    "Changes nobody can tell happened (staff check them at the shop)",
    ["tool"],
    registry=REGISTRY,
)
DECISIONS = Counter(
    "stepwise_approval_decisions",
    "Decisions on paused steps, by who decided (customer/staff) and what (approved/declined)",
    ["approver", "decision"],
    registry=REGISTRY,
)
UNDERSTANDING = Counter(
    "stepwise_understanding",
    "What the planner understood, counted at the run's end: per intent (a tool,"
    " policy_lookup, handoff, none) recognised, clarified, unsupported or fallback",
    ["intent", "outcome"],
    registry=REGISTRY,
)

# -- Telegram ------------------------------------------------------------------------------

TELEGRAM_CALLS = Counter(
    "stepwise_telegram_requests",
    "Bot API calls by method and result (ok, rate_limited, bad_request, forbidden, conflict,"
    " invalid_token, timeout, network, error)",
    ["method", "result"],
    registry=REGISTRY,
)
TELEGRAM_RETRY_AFTER = Counter(
    "stepwise_telegram_retry_after_seconds",
    "Seconds Telegram asked the bot to wait (429 retry_after), summed",
    registry=REGISTRY,
)
LIMITER_WAIT = Histogram(
    "stepwise_telegram_limiter_wait_seconds",
    "How long a Bot API call waited in the bot's rate limiter before it was sent",
    buckets=(0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
    registry=REGISTRY,
)

# -- inbox, leases, poller -----------------------------------------------------------------

INBOX_LAG = Histogram(
    "stepwise_inbox_processing_lag_seconds",
    "From an update being stored (or taken over) to its being marked processed",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300),
    registry=REGISTRY,
)
INBOX_PARKED = Counter(
    "stepwise_inbox_parked",
    "Updates parked in the inbox because their chat had its queue cap in hand",
    registry=REGISTRY,
)
INBOX_TAKEOVERS = Counter(
    "stepwise_inbox_takeovers",
    "Updates this process took over from a stopped process (claims that ran out)",
    registry=REGISTRY,
)
POLLER_TAKEOVERS = Counter(
    "stepwise_poller_takeovers",
    "Times this process took the poller lease over from another process",
    registry=REGISTRY,
)
POLLER_CHANGES = Counter(
    "stepwise_poller_changes",
    "This process started (to=holding) or stopped (to=standby) long polling",
    ["to"],
    registry=REGISTRY,
)
POLLER_HOLDING = Gauge(
    "stepwise_poller_holding", "1 while this process holds the poller lease", registry=REGISTRY
)

# -- handoffs ------------------------------------------------------------------------------

FIRST_STAFF_REPLY = Histogram(
    "stepwise_handoff_first_reply_seconds",
    "From a handoff's opening to the first staff message that reached the customer",
    buckets=(10, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600),
    registry=REGISTRY,
)


def telegram_result(exc: BaseException | None) -> str:
    """The `result` label of a Bot API call that raised `exc` (None: it answered ok)."""
    if exc is None:
        return "ok"
    for kind, label in (
        (RetryAfter, "rate_limited"),
        (Forbidden, "forbidden"),
        (InvalidToken, "invalid_token"),
        (Conflict, "conflict"),
        (BadRequest, "bad_request"),
        (TimedOut, "timeout"),
        (NetworkError, "network"),
        (TelegramError, "error"),
    ):
        if isinstance(exc, kind):
            return label
    return "error"


def telegram_method(endpoint: str) -> str:
    return _METHODS_BY_LOWER.get(endpoint.lower(), OTHER)


def count_telegram_call(endpoint: str, exc: BaseException | None) -> None:
    TELEGRAM_CALLS.labels(telegram_method(endpoint), telegram_result(exc)).inc()


# -- the journal listener ------------------------------------------------------------------


class RunMetrics:
    """A journal listener (`agent_core.execution.executor.Listener`) counting committed transitions.

    Step durations are measured from the `step_started` event's time to the step's end
    event's; a start seen in another process (a recovered run) has no pair here and is
    not measured. The map of open starts is bounded (oldest dropped)."""

    MAX_OPEN = 10_000

    def __init__(self, tools: ToolNames = TOOLS) -> None:
        self.tools = tools
        self._started: dict[tuple[str, str], float] = {}

    async def __call__(self, run: Run, event: RunEvent) -> None:
        self.observe(run, event)

    def observe(self, run: Run, event: RunEvent) -> None:
        kind, tool = event.kind, self.tools.label(event.tool)
        if kind is EventKind.RUN_PLANNED:
            RUNS_STARTED.labels(_run_kind(run)).inc()
        elif kind is EventKind.STEP_STARTED and event.step_id is not None:
            self._start(run.id, event.step_id, event.at.timestamp())
        elif kind in (EventKind.STEP_SUCCEEDED, EventKind.STEP_FAILED):
            started = self._started.pop((run.id, event.step_id or ""), None)
            if started is not None:
                STEP_SECONDS.labels(tool).observe(max(0.0, event.at.timestamp() - started))
            if kind is EventKind.STEP_FAILED:
                self._failure(tool, event)
        elif kind is EventKind.STEP_RETRYING:
            STEP_RETRIES.labels(tool).inc()
            self._failure(tool, event)
        elif kind is EventKind.STEP_RECONCILED:
            RECONCILED.labels(tool, bounded(event.message, VERDICTS)).inc()
        elif kind in (EventKind.STEP_APPROVED, EventKind.STEP_DECLINED):
            decision = "approved" if kind is EventKind.STEP_APPROVED else "declined"
            DECISIONS.labels(_approver(run, event), decision).inc()
        elif kind is EventKind.RUN_FINISHED:
            RUNS_FINISHED.labels(bounded(run.status.value, RUN_STATUSES)).inc()
            # Ids come from the log context (`agent_core.logcontext`); no customer text.
            log.info("run finished: %s", run.status.value)
            for intent, outcome in understanding(run, self.tools):
                UNDERSTANDING.labels(intent, outcome).inc()

    def _start(self, run_id: str, step_id: str, at: float) -> None:
        if len(self._started) >= self.MAX_OPEN:
            self._started.pop(next(iter(self._started)))
        self._started[(run_id, step_id)] = at

    @staticmethod
    def _failure(tool: str, event: RunEvent) -> None:
        error = event.error_type.value if event.error_type is not None else None
        TOOL_FAILURES.labels(tool, bounded(error, ERROR_TYPES)).inc()
        if event.error_type is ErrorType.UNKNOWN_OUTCOME and event.kind is EventKind.STEP_FAILED:
            UNKNOWN_OUTCOMES.labels(tool).inc()


def _run_kind(run: Run) -> str:
    if run.clarify is not None:
        return "clarify"
    return "plan" if run.steps else "refusal"


def _approver(run: Run, event: RunEvent) -> str:
    """Staff decided when the step's decision was made by someone else than the customer."""
    if event.step_id is None:
        return "customer"
    approval = next((s.approval for s in run.steps if s.id == event.step_id), None)
    if approval is not None and approval.by_user_id != run.user_id:
        return "staff"
    return "customer"


def understanding(run: Run, tools: ToolNames = TOOLS) -> list[tuple[str, str]]:
    """(intent, outcome) pairs of a finished run's interpretation: each intent's tool
    recognised (or clarified, when the run asked back), policy questions, a request for a
    person; what no tool serves "unsupported"; nothing recognised at all "fallback"."""
    seen = run.interpretation
    if seen is None:
        return []
    asked = "clarified" if seen.clarify is not None else "recognised"
    pairs = [(tools.label(intent.tool), asked) for intent in seen.intents]
    pairs += [("policy_lookup", "recognised") for _ in seen.policies]
    if seen.handoff is not None:
        pairs.append(("handoff", "recognised"))
    if seen.unrecognised:
        pairs.append(("none", "fallback"))
    elif seen.unsupported:
        pairs.append(("none", "unsupported"))
    if not pairs and seen.clarify is not None:
        pairs.append(("none", "clarified"))
    return pairs


# -- read from the database at scrape time -------------------------------------------------


@dataclass(frozen=True)
class DatabaseSnapshot:
    """What only the database knows, as of one read."""

    # approver ("customer"/"staff") -> (waiting, oldest paused_at as a UNIX time or None)
    approvals: dict[str, tuple[int, float | None]]
    handoffs_open: int
    inbox_backlog: int
    inbox_oldest: float | None  # received_at of the oldest unprocessed update


class DatabaseGauges(Collector):
    """Gauges computed from the last `DatabaseSnapshot` (`set`), exported at each scrape.

    The read itself is async (the health server's `/metrics` handler refreshes it, at most
    once a second); `collect` only formats what was read. A failed read keeps the last one
    and sets `stepwise_database_gauges_ok` to 0."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.snapshot: DatabaseSnapshot | None = None
        self.ok = False

    def set(self, snapshot: DatabaseSnapshot | None) -> None:
        if snapshot is None:
            self.ok = False
            return
        self.snapshot, self.ok = snapshot, True

    def describe(self) -> Iterable[Metric]:
        return list(self._families(None))

    def collect(self) -> Iterable[Metric]:
        return list(self._families(self.snapshot))

    def _families(self, snap: DatabaseSnapshot | None) -> Iterator[Metric]:
        now = self.clock()
        pending = GaugeMetricFamily(
            "stepwise_approvals_pending",
            "Paused steps waiting for a decision, by who decides",
            labels=["approver"],
        )
        age = GaugeMetricFamily(
            "stepwise_approval_oldest_age_seconds",
            "Age of the oldest paused step waiting for a decision, by who decides",
            labels=["approver"],
        )
        for approver in ("customer", "staff"):
            count, oldest = (snap.approvals.get(approver, (0, None))) if snap else (0, None)
            pending.add_metric([approver], count)
            age.add_metric([approver], max(0.0, now - oldest) if oldest is not None else 0.0)
        yield pending
        yield age
        yield GaugeMetricFamily(
            "stepwise_handoffs_open",
            "Handoffs to a person still open",
            value=snap.handoffs_open if snap else 0,
        )
        yield GaugeMetricFamily(
            "stepwise_inbox_backlog",
            "Updates stored and not yet processed (all processes)",
            value=snap.inbox_backlog if snap else 0,
        )
        oldest = snap.inbox_oldest if snap else None
        yield GaugeMetricFamily(
            "stepwise_inbox_oldest_age_seconds",
            "Age of the oldest update stored and not yet processed (0: none)",
            value=max(0.0, now - oldest) if oldest is not None else 0.0,
        )
        yield GaugeMetricFamily(
            "stepwise_database_gauges_ok",
            "1 when the last read of the database gauges succeeded",
            value=1.0 if self.ok else 0.0,
        )


DATABASE_GAUGES = DatabaseGauges()
REGISTRY.register(DATABASE_GAUGES)
