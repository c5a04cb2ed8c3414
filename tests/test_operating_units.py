"""Issue 25 without a process: the dashboard queries only metrics that exist, labels stay
in closed sets, readiness is cached on the injected clock, JSON log lines carry the
context's ids."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
from pathlib import Path
from typing import Any

from agent_core.logcontext import log_fields
from agent_core.models import ErrorType, EventKind, Run, RunEvent
from bot import metrics
from bot.health import Health, LoopLag
from stepwise.logs import JsonFormatter

DASHBOARD = Path(__file__).resolve().parent.parent / "docs" / "grafana" / "stepwise.json"
SUFFIXES = ("_bucket", "_count", "_sum", "_total", "_created")


def exported_names() -> set[str]:
    """Every series name the registry can export (families and their sample suffixes)."""
    names = set()
    for family in metrics.REGISTRY.collect():
        names.add(family.name)
        names.update(family.name + suffix for suffix in SUFFIXES)
    return names


def test_every_metric_the_dashboard_queries_exists() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    queried = {name for expr in exprs for name in re.findall(r"\bstepwise_[a-z0-9_]+", expr)}
    assert queried, "the dashboard queries nothing"
    missing = queried - exported_names()
    assert not missing, f"the dashboard queries metrics that do not exist: {sorted(missing)}"


def test_labels_come_from_closed_sets() -> None:
    tools = metrics.ToolNames()
    tools.declare(["get_order_status"])
    assert tools.label("get_order_status") == "get_order_status"
    assert tools.label("A1001 please") == "other"
    assert metrics.telegram_method("sendmessage") == "sendMessage"
    assert metrics.telegram_method("someNewMethod") == "other"
    run = Run(id="r1", trace_id="t1", user_id=1, chat_id=1, request_text="x", language="en")
    listener = metrics.RunMetrics(tools)
    event = RunEvent(
        kind=EventKind.STEP_FAILED,
        run_id="r1",
        trace_id="t1",
        step_id="s1",
        tool="made_up_tool_42",
        error_type=ErrorType.NOT_FOUND,
    )
    before = metrics.TOOL_FAILURES.labels("other", "not_found")._value.get()
    listener.observe(run, event)
    assert metrics.TOOL_FAILURES.labels("other", "not_found")._value.get() == before + 1
    labels = {
        value
        for family in metrics.REGISTRY.collect()
        for sample in family.samples
        for value in sample.labels.values()
    }
    assert "made_up_tool_42" not in labels


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class _Bot:
    def __init__(self) -> None:
        self.calls = 0

    async def get_me(self) -> None:
        self.calls += 1


class _App:
    def __init__(self) -> None:
        self.bot = _Bot()
        self.bot_data: dict[str, Any] = {}


class _History:
    async def schema_version(self) -> tuple[int, int]:
        return 3, 3


class _Store:
    history = _History()


async def test_readiness_is_cached_for_a_second_of_the_injected_clock() -> None:
    clock, app = _Clock(), _App()
    health = Health(app, _Store(), clock=clock)  # type: ignore[arg-type]
    first = await health.ready()
    assert not first.ok  # not receiving updates yet
    assert [c.name for c in first.checks if not c.ok] == ["poller_lease", "inbox_backlog"]
    await asyncio.gather(*(health.ready() for _ in range(5)))
    assert app.bot.calls == 1  # every probe within the second shares one getMe
    clock.now += 1.0
    await health.ready()
    assert app.bot.calls == 2


def test_liveness_fails_when_the_loop_falls_behind() -> None:
    clock = _Clock()
    lag = LoopLag(every_s=0.5, clock=clock)
    health = Health(_App(), _Store(), clock=clock, max_lag_s=5)  # type: ignore[arg-type]
    health.loop = lag
    assert health.live().ok
    clock.now += 10
    report = health.live()
    assert not report.ok and "behind" in report.checks[0].reason


def test_json_lines_carry_the_context_and_the_extra_trace_id() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter(replica="host:1:abc"))
    logger = logging.getLogger("test.operating.json")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        with log_fields(run_id="r9", trace_id="t9", chat_id=42), log_fields(update_id=7):
            logger.warning("inside %s", "a run")
        logger.warning("outside", extra={"trace_id": "t10"})
    finally:
        logger.removeHandler(handler)
    inside, outside = (json.loads(line) for line in out.getvalue().splitlines())
    assert inside["message"] == "inside a run"
    assert (inside["run_id"], inside["trace_id"], inside["chat_id"]) == ("r9", "t9", 42)
    assert inside["update_id"] == 7 and inside["replica"] == "host:1:abc"
    assert outside["trace_id"] == "t10" and "run_id" not in outside
