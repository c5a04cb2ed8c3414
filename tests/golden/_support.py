"""Runs as customers meet them, for the golden tests: real plans from the rule-based planner,
scripted tools, a fixed clock, no waiting.

Only public names are used (planner, Executor, models, tests.fakes), so the golden texts
stay valid while the executor and storage are restructured underneath.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from agent_core.execution.executor import Executor
from agent_core.execution.tools import ToolRegistry
from agent_core.models import (
    Approval,
    ErrorType,
    Language,
    PlanStep,
    Run,
    RunStatus,
    StepStatus,
)
from agent_core.understanding.planner import PlanRequest, RuleBasedPlanner
from tests.fakes import RecordingJournal, RecordingSleep, Script, shop_like_tools

ZH, EN = Language.ZH, Language.EN
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
CUSTOMER = 10001

# The same requests in both languages, as a customer would type them.
REQUESTS: dict[str, dict[Language, str]] = {
    "status": {ZH: "订单 A1001 到哪了？", EN: "Where is my order A1001?"},
    "status_then_compensation": {
        ZH: "帮我查一下订单 A1001 的物流，如果还没送达，延迟补偿政策是什么",
        EN: "Check order A1001 and if it hasn't arrived, what's the delay compensation policy?",
    },
    "policy": {ZH: "退货政策是什么？", EN: "What is your refund policy?"},
    "cancel": {ZH: "帮我取消订单 A1001", EN: "Cancel order A1001"},
    "cancel_and_refund": {
        ZH: "帮我取消订单 A1001，另外退货政策是什么",
        EN: "Cancel order A1001, also what is your refund policy?",
    },
    # A read with no order (an action with none is a clarifying question since issue 13).
    "missing_order_id": {ZH: "帮我查一下我的订单", EN: "Please check my order"},
    "unsupported": {ZH: "你们老板是谁", EN: "Tell me a joke"},
    "empty": {ZH: "   ", EN: "   "},
}

SHIPPING = {"order_id": "A1001", "status": "shipping", "eta": "2026-12-03"}
DELIVERED = {"order_id": "A1001", "status": "delivered", "eta": None}
CANCELLED = {"order_id": "A1001", "status": "cancelled", "eta": None}
POLICIES: dict[Language, list[dict[str, str]]] = {
    ZH: [{"title": "退货政策", "text": "签收后 7 天内可无理由退货。"}],
    EN: [{"title": "Refund policy", "text": "Return within 7 days of delivery."}],
}
COMPENSATION: dict[Language, list[dict[str, str]]] = {
    ZH: [{"title": "延迟补偿", "text": "晚到 3 天以上补偿优惠券。"}],
    EN: [{"title": "Delay compensation", "text": "3 days late: coupon."}],
}


def plan(kind: str, language: Language, *, run_id: str = "run1") -> Run:
    """The run the planner makes for a canned request (language detected from the text,
    with the language as Telegram's hint for texts that have no letters)."""
    text = REQUESTS[kind][language]
    draft = RuleBasedPlanner().draft(PlanRequest(text=text, language_hint=language.value))
    return Run(
        id=run_id,
        trace_id=f"trace-{run_id}",
        user_id=CUSTOMER,
        chat_id=CUSTOMER,
        request_text=text,
        language=draft.language,
        steps=[
            PlanStep(id=f"s{n}", goal=d.goal, tool=d.tool, args=d.args, tag=d.tag, max_retries=2)
            for n, d in enumerate(draft.steps, start=1)
        ],
        refusal=draft.refusal.value if draft.refusal else None,
        created_at=NOW,
        updated_at=NOW,
    )


def tools(
    language: Language,
    *,
    status: Sequence[Any] = (SHIPPING,),
    policy: Sequence[Any] | None = None,
    cancel: Sequence[Any] = ({"order_id": "A1001", "status": "cancelled"},),
) -> tuple[ToolRegistry, dict[str, Script]]:
    return shop_like_tools(
        status=status,
        policy=policy if policy is not None else (POLICIES[language],),
        cancel=cancel,
    )


def executor(registry: ToolRegistry, journal: Any = None) -> Executor:
    return Executor(
        registry,
        journal=journal if journal is not None else RecordingJournal(),
        sleep=RecordingSleep(),
        clock=lambda: NOW,
        rand=lambda: 0.5,
        new_nonce=lambda: "nonce1",
    )


def decide(run: Run, *, approved: bool) -> Run:
    """Write the customer's decision on the paused step, as the storage claim does."""
    assert run.status is RunStatus.PAUSED and run.pause is not None
    step = run.step(run.pause.step_id)
    step.approval = Approval(approved=approved, by_user_id=CUSTOMER, at=NOW)
    run.pause.nonce = None
    run.status = RunStatus.RUNNING
    return run


async def run_to_answer(
    kind: str,
    language: Language,
    *,
    decision: bool | None = None,
    max_attempts: int | None = None,
    **outcomes: Sequence[Any],
) -> Run:
    """Plan `kind`, run it with scripted outcomes, and apply a decision if it pauses."""
    run = plan(kind, language)
    if max_attempts is not None:
        run.max_attempts = max_attempts
    registry, _ = tools(language, **outcomes)
    ex = executor(registry)
    run = await ex.start(run)
    if decision is not None:
        run = await ex.drive(decide(run, approved=decision))
    return run


def step(
    status: StepStatus,
    *,
    goal: str = "Check the status of order A1001",
    tool: str = "get_order_status",
    retry_count: int = 0,
    error: ErrorType | None = None,
    approved: bool | None = None,
    skip_reason: str | None = None,
) -> PlanStep:
    """One step in a given state, for progress lines."""
    return PlanStep(
        id="s1",
        goal=goal,
        tool=tool,
        args={"order_id": "A1001"},
        status=status,
        retry_count=retry_count,
        error=None if error is None else {"type": error, "message": "scripted"},  # type: ignore[arg-type]
        approval=None
        if approved is None
        else Approval(approved=approved, by_user_id=CUSTOMER, at=NOW),
        skip_reason=skip_reason,
    )


def run_of(language: Language, *steps: PlanStep, status: RunStatus = RunStatus.RUNNING) -> Run:
    return Run(
        id="run1",
        trace_id="trace1",
        user_id=CUSTOMER,
        chat_id=CUSTOMER,
        request_text="test",
        language=language,
        status=status,
        steps=list(steps),
    )
