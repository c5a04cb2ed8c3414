"""Issue 23 #6 on both backends: what a chat's earlier runs observed about orders decides
which orders a clarifying question may offer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from agent_core.catalog.builtin import CATALOG, rules_of
from agent_core.interpretation import Clarification, ClarifyOption
from agent_core.models import (
    ErrorType,
    EventKind,
    Language,
    RunEvent,
    StepError,
    StepStatus,
    utcnow,
)
from agent_core.understanding.order_facts import NOT_FOUND, can_take, narrow, order_facts
from storage.store import RunStore
from tests.fakes import make_run
from tests.storage_backends import Backend


@pytest.fixture
async def store(store_backend: Backend) -> AsyncIterator[RunStore]:
    opened: RunStore = await store_backend.open_store()
    yield opened
    await opened.close()


async def test_6_observed_orders_newest_first_on_both_backends(store: RunStore) -> None:
    older = make_run([("get_order_status", {"order_id": "A1003"}, None)])
    older.id = "older"
    older.steps[0].status = StepStatus.DONE
    older.steps[0].observation = {"order_id": "A1003", "status": "pending"}
    newer = make_run(
        [
            ("get_order_status", {"order_id": "Z9004"}, None),
            ("cancel_order", {"order_id": "A1003"}, None),
        ]
    )
    newer.id = "newer"
    newer.created_at = older.created_at + timedelta(seconds=1)
    newer.steps[0].status = StepStatus.FAILED
    newer.steps[0].error = StepError(type=ErrorType.NOT_FOUND, message="no such order")
    newer.steps[1].status = StepStatus.DONE
    newer.steps[1].observation = {"order_id": "A1003", "status": "cancelled"}
    for run in (older, newer):
        await store.record(run, RunEvent(kind=EventKind.RUN_PLANNED, run_id=run.id, trace_id="t"))
    steps = await store.recent_order_steps(10001, 10001)
    assert [(s.tool, s.order_id) for s in steps] == [
        ("cancel_order", "A1003"),
        ("get_order_status", "Z9004"),
        ("get_order_status", "A1003"),
    ]
    assert order_facts(steps, CATALOG) == {"A1003": "cancelled", "Z9004": NOT_FOUND}
    assert await store.recent_order_steps(10001, 20002) == []


def test_6_which_states_can_take_which_action() -> None:
    rules = rules_of(CATALOG.values())
    assert can_take(None, "cancel_order", "cancel", rules)
    assert can_take("shipping", "cancel_order", "cancel", rules)
    assert not can_take("cancelled", "cancel_order", "cancel", rules)
    assert not can_take("delivered", "cancel_order", "cancel", rules)
    assert not can_take(NOT_FOUND, "get_order_status", "order_status", rules)
    assert can_take("delivered", "request_return", "return", rules)
    assert not can_take("pending", "request_return", "return", rules)


def test_6_one_option_left_is_the_plan_none_asks_for_the_number() -> None:
    asked = Clarification(
        question="Which order should I cancel?",
        options=[ClarifyOption(label=o, text=f"cancel order {o}") for o in ("A1001", "Z9")],
        tool="cancel_order",
    )
    assert narrow(asked, [True, False], Language.EN) == asked.options[0]
    none = narrow(asked, [False, False], Language.EN)
    assert isinstance(none, Clarification) and none.options == []
    assert none.question.endswith("Please send its number (for example A1001).")


async def test_8_people_are_remembered_by_id_on_both_backends(store: RunStore) -> None:
    assert await store.handoffs.name_of(10002) == "user 10002"
    await store.handoffs.remember_person(10002, "Sam", None, utcnow())
    assert await store.handoffs.name_of(10002) == "Sam"
    await store.handoffs.remember_person(10002, "Sam", "sam_support", utcnow())
    assert await store.handoffs.name_of(10002) == "Sam (@sam_support)"
    await store.handoffs.remember_person(10003, None, "lee", utcnow())
    assert await store.handoffs.name_of(10003) == "@lee"
