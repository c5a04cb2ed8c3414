"""The staff alerts' decisions (`bot.alerts`): one alert per incident, per window."""

from __future__ import annotations

from agent_core.models import ErrorType, PlanStep, StepError
from bot.alerts import (
    ALERT_WINDOW_S,
    FLOOD_WINDOW_S,
    FLOODS_MAX,
    RENEWALS_FAILED,
    AlertGate,
    StaffAlerts,
    backlog_over,
    burst,
    due,
    failing_in_row,
    incident,
    incident_alert,
)


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


def test_incident_conditions_are_pure_functions_of_their_history() -> None:
    assert not backlog_over(None, 10) and not backlog_over(9, 10)
    assert backlog_over(10, 10) and backlog_over(11, 10)  # where /readyz fails
    assert not failing_in_row([False, False], 3)
    assert failing_in_row([True, False, False, False], 3)
    assert not failing_in_row([False, False, True], 3)  # a renewal worked: over
    assert not burst([1.0, 2.0], 10.0, 60.0, 2)
    assert burst([1.0, 2.0, 3.0], 10.0, 60.0, 2)
    assert not burst([1.0, 2.0, 3.0], 62.0, 60.0, 2)  # the first fell out of the window
    assert incident_alert(holds=True, told=False, gate_due=True)
    assert not incident_alert(holds=True, told=True, gate_due=True)  # one per incident
    assert not incident_alert(holds=True, told=False, gate_due=False)  # the minimum interval
    assert not incident_alert(holds=False, told=False, gate_due=True)


class Desk:
    """What `StaffAlerts` needs of the handoff desk: a staff group and its General topic."""

    staff_chat_id = -100
    console_url = None

    def __init__(self, works: bool = True) -> None:
        self.posted: list[str] = []
        self.works = works

    async def post_in_general(self, text: str, what: str) -> bool:
        if self.works:
            self.posted.append(text)
        return self.works


async def test_one_alert_per_incident_a_new_one_after_it_cleared_and_the_window() -> None:
    now = [0.0]
    desk = Desk()
    alerts = StaffAlerts(
        desk,  # type: ignore[arg-type]
        AlertGate(clock=lambda: now[0]),
        replica="host-a:42:0badcafe",
        clock=lambda: now[0],
    )
    assert await alerts.check((5, 10)) == []
    assert await alerts.check((10, 10)) == ["inbox backlog"]
    assert await alerts.check((50, 10)) == []  # still above: the same incident
    assert await alerts.check(None) == []  # unread (the database did not answer): no change
    assert await alerts.check((50, 10)) == []  # so still the same incident
    (text,) = desk.posted
    assert "10 update(s) waiting" in text and "bound 10" in text
    assert await alerts.check((3, 10)) == []  # cleared: the incident ended
    now[0] += 60
    assert await alerts.check((12, 10)) == []  # a new one, inside the window: held
    now[0] += ALERT_WINDOW_S
    assert await alerts.check((12, 10)) == ["inbox backlog"]  # still there: told now
    assert len(desk.posted) == 2

    for _ in range(RENEWALS_FAILED - 1):
        alerts.renewal(False)
    assert await alerts.check() == []
    alerts.renewal(False)
    assert await alerts.check() == ["run leases"]
    alerts.renewal(False)
    assert await alerts.check() == []
    assert "host-a:42" in desk.posted[-1] and "0badcafe" not in desk.posted[-1]

    alerts.poller_lost()
    assert await alerts.check() == []  # once is a takeover, not an incident
    now[0] += 1
    alerts.poller_lost()
    assert await alerts.check() == ["poller lease"]
    assert "Lost 2 times" in desk.posted[-1]


async def test_a_post_that_failed_is_tried_again_at_the_next_check() -> None:
    now = [0.0]
    desk = Desk(works=False)
    alerts = StaffAlerts(
        desk,  # type: ignore[arg-type]
        AlertGate(clock=lambda: now[0]),
        clock=lambda: now[0],
    )
    for _ in range(FLOODS_MAX + 1):
        alerts.flooded()
    assert await alerts.check() == []
    desk.works = True
    assert await alerts.check() == ["telegram 429"]
    now[0] += FLOOD_WINDOW_S
    assert await alerts.check() == []  # the burst is over
