"""The ten regressions of issue 16, each a mutation that once survived every test.

Each test names the mutation it kills. They assert what the customer reads (whole lines,
not prefixes) and what staff find in storage after a reload, through public APIs only.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from agent_core.agent import Agent
from agent_core.answers.compose import compose_answer, step_progress
from agent_core.models import (
    ClaimResult,
    Decision,
    ErrorType,
    EventKind,
    RunStatus,
    StepStatus,
)
from agent_core.understanding.planner import RuleBasedPlanner
from storage.runs.sqlite import SqliteRunStore
from tests.fakes import RecordingJournal, fail
from tests.golden._support import (
    CANCELLED,
    CUSTOMER,
    DELIVERED,
    EN,
    NOW,
    SHIPPING,
    ZH,
    decide,
    executor,
    plan,
    run_of,
    run_to_answer,
    step,
    tools,
)

SHIPPING_EN = "Order A1001 is on its way, expected 2026-12-03."
SHIPPING_ZH = "订单 A1001：运输中，预计 2026-12-03 送达。"


# 1. executor: after a decline only PENDING later steps become cancelled
#    (mutant: the `later.status is PENDING` condition; the done status step turned "not done").
async def test_1_decline_keeps_the_done_status_step_and_cancels_only_later_steps() -> None:
    for lang, first_line in ((EN, SHIPPING_EN), (ZH, SHIPPING_ZH)):
        run = await run_to_answer("cancel_and_refund", lang, decision=False)
        assert run.status is RunStatus.DECLINED
        assert [s.status for s in run.steps] == [
            StepStatus.DONE,
            StepStatus.CANCELLED,
            StepStatus.CANCELLED,
        ]
        assert run.steps[0].observation == SHIPPING
        assert (run.answer or "").split("\n")[0] == first_line
    zh = await run_to_answer("cancel_and_refund", ZH, decision=False)
    assert zh.answer == (
        f"{SHIPPING_ZH}\n好的，已按你的选择放弃「取消订单 A1001」，订单没有任何改动。\n查询退货政策：未执行。"
    )


# 2. rules: dropping `already_cancelled` gave an already-cancelled order Confirm/Cancel buttons.
@pytest.mark.parametrize("lang", [ZH, EN])
async def test_2_an_already_cancelled_order_is_skipped_and_nothing_pauses(lang: Any) -> None:
    run = plan("cancel", lang)
    registry, scripts = tools(lang, status=[CANCELLED])
    journal = RecordingJournal()
    run = await executor(registry, journal).start(run)
    assert run.status is RunStatus.COMPLETED
    assert run.pause is None
    assert [s.status for s in run.steps] == [StepStatus.DONE, StepStatus.SKIPPED]
    assert scripts["cancel_order"].calls == []
    assert EventKind.STEP_PAUSED not in [e.kind for e in journal.events]
    expected = {
        ZH: "订单 A1001 已经是取消状态，无需再次取消。",
        EN: "Order A1001 is already cancelled; nothing more to do.",
    }[lang]
    assert run.steps[1].skip_reason == expected


# 3. answers: the eta condition ("Order A1001 is delivered, expected None.").
@pytest.mark.parametrize(
    ("observation", "en", "zh"),
    [
        (SHIPPING, SHIPPING_EN, SHIPPING_ZH),
        (DELIVERED, "Order A1001 is delivered.", "订单 A1001：已签收。"),
        (
            {"order_id": "A1001", "status": "delivered", "eta": "2026-11-28"},
            "Order A1001 is delivered.",
            "订单 A1001：已签收。",
        ),
        (
            {"order_id": "A1001", "status": "shipping", "eta": None},
            "Order A1001 is on its way.",
            "订单 A1001：运输中。",
        ),
    ],
)
async def test_3_an_eta_is_quoted_only_for_a_shipping_order_that_has_one(
    observation: dict[str, Any], en: str, zh: str
) -> None:
    assert (await run_to_answer("status", EN, status=[observation])).answer == en
    assert (await run_to_answer("status", ZH, status=[observation])).answer == zh


# 4. answers: `text +=` → `text =` left only " (succeeded after 1 retry)".
async def test_4_a_retried_lookup_keeps_its_result_and_adds_the_retry_note() -> None:
    timeout = fail(ErrorType.TIMEOUT, "slow")
    en = await run_to_answer("status", EN, status=[timeout, SHIPPING])
    zh = await run_to_answer("status", ZH, status=[timeout, SHIPPING])
    assert en.answer == f"{SHIPPING_EN} (succeeded after 1 retry)"
    assert zh.answer == f"{SHIPPING_ZH}（重试 1 次后成功）"


# 5. answers: the refusal kind ignored ("tell me your order number" → generic help).
async def test_5_each_refusal_has_its_own_text() -> None:
    missing_en = await run_to_answer("missing_order_id", EN)
    missing_zh = await run_to_answer("missing_order_id", ZH)
    assert missing_en.answer == (
        "Please tell me your order number (for example A1001) and I'll take care of it."
    )
    assert missing_zh.answer == "请告诉我订单号（例如 A1001），我就能帮你处理。"
    empty = await run_to_answer("empty", EN)
    unsupported = await run_to_answer("unsupported", EN)
    assert len({missing_en.answer, empty.answer, unsupported.answer}) == 3


# 6. answers: an internal error on an approved cancel told as "can no longer be cancelled".
async def test_6_an_internal_error_on_an_approved_cancel_is_not_blamed_on_the_order() -> None:
    internal = fail(ErrorType.INTERNAL, "bug")
    en = await run_to_answer("cancel", EN, decision=True, cancel=[internal])
    zh = await run_to_answer("cancel", ZH, decision=True, cancel=[internal])
    assert en.answer == (
        f"{SHIPPING_EN}\nCancel order A1001: something went wrong on our side, so this was not "
        "done.\nIf you need more help, please contact a human agent."
    )
    assert (
        zh.answer
        == f"{SHIPPING_ZH}\n取消订单 A1001：系统内部出了问题，没有完成。\n如需帮助，请联系人工客服。"
    )
    invalid = fail(ErrorType.INVALID_ARGUMENTS, "already shipped")
    refused = await run_to_answer("cancel", EN, decision=True, cancel=[invalid])
    assert (refused.answer or "").split("\n")[1] == (
        "Order A1001 can no longer be cancelled in its current state."
    )
    # An invalid request on a read step is not a cancel refusal either.
    bad_read = await run_to_answer("status", EN, status=[invalid])
    assert (bad_read.answer or "").split("\n")[0] == (
        "Check the status of order A1001: the request details were not valid, so it was not done."
    )


# 7. answers: while waiting for confirmation, a later step reported as "not done, because ...".
async def test_7_a_paused_run_says_nothing_about_steps_after_the_pause() -> None:
    en = await run_to_answer("cancel_and_refund", EN)
    zh = await run_to_answer("cancel_and_refund", ZH)
    assert en.status is RunStatus.PAUSED
    assert en.answer == (
        f"{SHIPPING_EN}\nCancel order A1001: this changes your order, so I need your "
        'confirmation first.\nPlease press "Yes, cancel A1001" or "No, keep it" below.'
    )
    assert zh.answer == (
        f"{SHIPPING_ZH}\n取消订单 A1001：这一步会修改你的订单，需要你确认后才会执行。\n"
        "请点击下方的“确认取消”或“不取消”。"
    )


# 8. answers: the not-found and not-yours next-step hints replaced by "contact a human agent".
#    (Issue 11 item 13: both read the same, so an answer never reveals another's order.)
NOT_ON_THIS_ACCOUNT_EN = (
    "I couldn't find order A1001 on this account.\n"
    "Please check the order number, and write from the account you ordered with."
)
NOT_ON_THIS_ACCOUNT_ZH = (
    "当前账号下没有找到订单 A1001。\n请核对订单号，并使用下单时的账号联系我们。"
)


@pytest.mark.parametrize(
    ("error", "en", "zh"),
    [
        (ErrorType.NOT_FOUND, NOT_ON_THIS_ACCOUNT_EN, NOT_ON_THIS_ACCOUNT_ZH),
        (ErrorType.PERMISSION_DENIED, NOT_ON_THIS_ACCOUNT_EN, NOT_ON_THIS_ACCOUNT_ZH),
    ],
)
async def test_8_not_found_and_not_yours_say_what_to_do_next(
    error: ErrorType, en: str, zh: str
) -> None:
    assert (await run_to_answer("status", EN, status=[fail(error)])).answer == en
    assert (await run_to_answer("status", ZH, status=[fail(error)])).answer == zh


# 9. answers: every progress line saying "done after 0 retries".
def test_9_a_step_done_first_time_says_just_done() -> None:
    done = step(StepStatus.DONE)
    assert step_progress(done, run_of(EN, done)) == "✅ Check the status of order A1001 — done"
    done_zh = step(StepStatus.DONE, goal="查询订单 A1001 的物流状态")
    assert step_progress(done_zh, run_of(ZH, done_zh)) == "✅ 查询订单 A1001 的物流状态 — 完成"
    retried = step(StepStatus.DONE, retry_count=1)
    assert step_progress(retried, run_of(EN, retried)) == (
        "✅ Check the status of order A1001 — done after 1 retry"
    )


# 10. storage: run_finished saves steps changed without their own event; a step's error is
#     saved; a decline is logged as declined. Everything survives a reload.
@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteRunStore]:
    store = await SqliteRunStore.open(tmp_path / "runs.db")
    yield store
    await store.close()


def _events(db: Path, run_id: str) -> list[dict[str, Any]]:
    """The staff timeline as stored (read straight from the table staff queries read)."""
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        rows = conn.execute(
            "SELECT kind, step_id, attempt, status, error_type, decision, delay_s, message"
            " FROM events WHERE run_id = ? ORDER BY seq",
            (run_id,),
        ).fetchall()
    return [dict(r) for r in rows]


async def _claim(store: SqliteRunStore, run_id: str, *, approved: bool) -> Any:
    result, claimed = await store.claim_pause(
        run_id,
        user_id=CUSTOMER,
        approved=approved,
        nonce="nonce1",
        now=NOW,
        expires_before=NOW - timedelta(hours=1),
    )
    assert result is ClaimResult.OK and claimed is not None
    return claimed


async def test_10_a_declined_run_reloads_with_every_step_as_it_ended(
    store: SqliteRunStore, tmp_path: Path
) -> None:
    registry, scripts = tools(EN)
    ex = executor(registry, store)
    paused = await ex.start(plan("cancel_and_refund", EN))
    claimed = await _claim(store, paused.id, approved=False)
    finished = await ex.drive(claimed)

    reloaded = await store.load_run(paused.id)
    assert reloaded is not None
    assert reloaded.status is RunStatus.DECLINED
    assert [s.status for s in reloaded.steps] == [
        StepStatus.DONE,
        StepStatus.CANCELLED,
        StepStatus.CANCELLED,
    ]
    approval = reloaded.steps[1].approval
    assert approval is not None and approval.approved is False
    assert approval.by_user_id == CUSTOMER
    assert reloaded.answer == finished.answer == compose_answer(reloaded)
    assert reloaded.pause is None
    assert scripts["cancel_order"].calls == []

    events = _events(tmp_path / "runs.db", paused.id)
    claim = [e for e in events if e["kind"] == EventKind.DECISION_CLAIMED.value]
    assert [(c["decision"], c["message"]) for c in claim] == [
        ("declined", f"declined by user {CUSTOMER}")
    ]
    assert [e["kind"] for e in events][-2:] == ["step_declined", "run_finished"]
    assert events[-1]["status"] == "declined"


async def test_10_an_approved_claim_is_logged_as_approved(
    store: SqliteRunStore, tmp_path: Path
) -> None:
    registry, _ = tools(EN)
    ex = executor(registry, store)
    paused = await ex.start(plan("cancel", EN))
    await ex.drive(await _claim(store, paused.id, approved=True))
    claim = [e for e in _events(tmp_path / "runs.db", paused.id) if e["kind"] == "decision_claimed"]
    assert [(c["decision"], c["message"]) for c in claim] == [
        ("approved", f"confirmed by user {CUSTOMER}")
    ]
    reloaded = await store.load_run(paused.id)
    assert reloaded is not None and reloaded.status is RunStatus.COMPLETED
    assert [s.status for s in reloaded.steps] == [StepStatus.DONE, StepStatus.DONE]
    assert reloaded.steps[1].approval is not None and reloaded.steps[1].approval.approved


async def test_10_a_failed_run_reloads_with_the_steps_error(
    store: SqliteRunStore, tmp_path: Path
) -> None:
    registry, _ = tools(EN, status=[fail(ErrorType.NOT_FOUND, "no order A1001")])
    run = await executor(registry, store).start(plan("status_then_compensation", EN))
    reloaded = await store.load_run(run.id)
    assert reloaded is not None
    assert reloaded.status is RunStatus.FAILED
    assert reloaded.stop_reason == "not_found"
    assert [s.status for s in reloaded.steps] == [StepStatus.FAILED, StepStatus.PENDING]
    error = reloaded.steps[0].error
    assert error is not None
    assert (error.type, error.message) == (ErrorType.NOT_FOUND, "no order A1001")
    assert reloaded.answer == run.answer == compose_answer(reloaded)
    failed = [e for e in _events(tmp_path / "runs.db", run.id) if e["kind"] == "step_failed"]
    assert failed == [
        {
            "kind": "step_failed",
            "step_id": "s1",
            "attempt": 1,
            "status": "failed",
            "error_type": "not_found",
            "decision": "stop",
            "delay_s": None,
            "message": "no order A1001",
        }
    ]


async def test_10_an_expired_run_reloads_expired_with_its_paused_step_closed(
    store: SqliteRunStore,
) -> None:
    registry, scripts = tools(EN)
    agent = Agent(
        RuleBasedPlanner(),
        executor(registry, store),
        store,
        approval_ttl=timedelta(hours=1),
        clock=lambda: NOW + timedelta(days=1),
    )
    paused = await agent.executor.start(plan("cancel_and_refund", EN))
    outcome = await agent.decide(paused.id, user_id=CUSTOMER, approved=True)
    assert outcome.result is ClaimResult.EXPIRED
    reloaded = await store.load_run(paused.id)
    assert reloaded is not None
    assert reloaded.status is RunStatus.EXPIRED
    assert [s.status for s in reloaded.steps] == [
        StepStatus.DONE,
        StepStatus.CANCELLED,
        StepStatus.PENDING,
    ]
    assert reloaded.pause is None
    assert outcome.run is not None and reloaded.answer == outcome.run.answer
    assert scripts["cancel_order"].calls == []


# The executor's recorded event fields (issue 16: 50 survivors were fields nobody checked).
def _fields(journal: RecordingJournal) -> list[tuple[Any, ...]]:
    return [
        (
            e.kind.value,
            e.step_id,
            e.tool,
            e.attempt,
            e.status,
            e.error_type,
            e.decision,
            e.delay_s,
            e.message,
        )
        for e in journal.events
    ]


async def test_event_fields_of_retries_fallback_and_success() -> None:
    timeout = fail(ErrorType.TIMEOUT, "upstream timed out")
    registry, _ = tools(
        EN, status=[timeout, timeout, SHIPPING], policy=[fail(ErrorType.EMPTY_RESULT, "none")]
    )
    journal = RecordingJournal()
    run = await executor(registry, journal).start(plan("status_then_compensation", EN))
    assert run.status is RunStatus.COMPLETED
    st, sp = "get_order_status", "search_policy"
    assert _fields(journal) == [
        ("run_planned", None, None, None, "running", None, None, None, None),
        ("step_started", "s1", st, 1, "running", None, None, None, None),
        ("step_retrying", "s1", st, 1, "pending", ErrorType.TIMEOUT, Decision.RETRY, 0.5,
         "upstream timed out"),
        ("step_started", "s1", st, 2, "running", None, None, None, None),
        ("step_retrying", "s1", st, 2, "pending", ErrorType.TIMEOUT, Decision.RETRY, 1.0,
         "upstream timed out"),
        ("step_started", "s1", st, 3, "running", None, None, None, None),
        ("step_succeeded", "s1", st, 3, "done", None, None, None, None),
        ("step_started", "s2", sp, 1, "running", None, None, None, None),
        ("step_fallback", "s2", sp, 1, "fallback", ErrorType.EMPTY_RESULT, Decision.FALLBACK,
         None, "none"),
        ("run_finished", None, None, None, "completed", None, None, None, None),
    ]  # fmt: skip
    assert run.steps[0].retry_count == 2
    assert run.steps[1].fallback_reason == "none"
    assert run.attempts == 4


async def test_event_fields_of_a_skip_a_pause_and_a_decline() -> None:
    registry, _ = tools(EN, status=[DELIVERED])
    journal = RecordingJournal()
    run = await executor(registry, journal).start(plan("cancel", EN))
    reason = (
        "Order A1001 has already been delivered, so it can't be cancelled; "
        'to send it back, ask me "what is your return policy".'
    )
    assert _fields(journal)[-2:] == [
        ("step_skipped", "s2", "cancel_order", None, "skipped", None, None, None, reason),
        ("run_finished", None, None, None, "completed", None, None, None, None),
    ]
    assert run.status is RunStatus.COMPLETED

    journal = RecordingJournal()
    registry, _ = tools(EN)
    ex = executor(registry, journal)
    run = await ex.start(plan("cancel_and_refund", EN))
    assert _fields(journal)[-1] == (
        "step_paused", "s2", "cancel_order", None, "paused", None, Decision.PAUSE, None,
        "high_risk",
    )  # fmt: skip
    assert run.pause is not None and run.pause.nonce == "nonce1"
    assert run.steps[1].pause_reason == "high_risk"
    await ex.drive(decide(run, approved=False))
    assert _fields(journal)[-2:] == [
        ("step_declined", "s2", "cancel_order", None, "cancelled", None, None, None, None),
        ("run_finished", None, None, None, "declined", None, None, None, None),
    ]


async def test_event_fields_when_an_approved_tool_still_wants_a_confirmation() -> None:
    again = fail(ErrorType.CONFIRMATION_REQUIRED, "confirm again")
    registry, scripts = tools(EN, cancel=[again])
    journal = RecordingJournal()
    ex = executor(registry, journal)
    run = await ex.drive(decide(await ex.start(plan("cancel", EN)), approved=True))
    assert run.status is RunStatus.FAILED
    assert run.stop_reason == "confirmation_required"
    assert len(scripts["cancel_order"].calls) == 1
    assert _fields(journal)[-4:] == [
        ("step_approved", "s2", "cancel_order", None, "pending", None, None, None, None),
        ("step_started", "s2", "cancel_order", 1, "running", None, None, None, None),
        ("step_failed", "s2", "cancel_order", 1, "failed", ErrorType.CONFIRMATION_REQUIRED,
         Decision.STOP, None, "confirm again"),
        ("run_finished", None, None, None, "failed", None, None, None, None),
    ]  # fmt: skip
