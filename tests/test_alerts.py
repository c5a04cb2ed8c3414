"""The staff alert's rate limit (`bot.alerts`): one alert per incident per window. Pure."""

from __future__ import annotations

from agent_core.models import ErrorType, PlanStep, StepError
from bot.alerts import ALERT_WINDOW_S, AlertGate, due, incident


def failed(tool: str, message: str) -> PlanStep:
    return PlanStep(
        id="s1",
        tool=tool,
        goal="g",
        error=StepError(type=ErrorType.BACKEND, message=message),
    )


def test_an_incident_is_its_tool_and_kind_of_failure() -> None:
    assert incident(failed("get_order_status", "upstream answered HTTP 401: no")) == (
        "get_order_status",
        "HTTP 401",
    )
    contract = "get_order_status response breaks the contract: status: bad (HTTP 200)"
    assert incident(failed("get_order_status", contract))[1] == "contract"
    assert incident(failed("t", "upstream answered HTTP 200 with a body that is not JSON"))[1] == (
        "not JSON"
    )


def test_one_alert_per_incident_and_window() -> None:
    now = [1000.0]
    gate = AlertGate(clock=lambda: now[0])
    key = ("get_order_status", "HTTP 401")
    assert gate.allow(key)
    assert not gate.allow(key)  # the same incident: held
    assert gate.allow(("cancel_order", "HTTP 401"))  # another tool: its own incident
    assert gate.allow(("get_order_status", "HTTP 503"))  # another kind too
    now[0] += ALERT_WINDOW_S - 1
    assert not gate.allow(key)
    now[0] += 1
    assert gate.allow(key)  # the window passed: it is told again
    assert due(None, 0.0) and not due(0.0, 599.0) and due(0.0, 600.0)
