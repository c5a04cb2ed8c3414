"""Observation rules: what a finished step's result changes in the rest of the plan.

Each rule is data: after a `done` step of some tool whose observation has a field in a
set of values, pending steps with a given tag are skipped, with a reason the customer can
read. Pure functions; the executor records what they change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_core.catalog import GET_ORDER_STATUS
from agent_core.models import Language, PlanStep, Run, StepStatus, StepTag, utcnow


@dataclass(frozen=True)
class SkipRule:
    name: str
    after_tool: str
    field: str
    values: frozenset[str]
    skip_tag: StepTag
    reason: Mapping[Language, str]  # may use {order_id} and {status}


DEFAULT_RULES: tuple[SkipRule, ...] = (
    SkipRule(
        name="delivered_needs_no_compensation",
        after_tool=GET_ORDER_STATUS.name,
        field="status",
        values=frozenset({"delivered"}),
        skip_tag=StepTag.DELAY_COMPENSATION,
        reason={
            Language.ZH: "订单 {order_id} 已签收，不需要再查延迟补偿。",
            Language.EN: "Order {order_id} has been delivered, so delay compensation does not apply.",
        },
    ),
    SkipRule(
        name="cancelled_needs_no_compensation",
        after_tool=GET_ORDER_STATUS.name,
        field="status",
        values=frozenset({"cancelled"}),
        skip_tag=StepTag.DELAY_COMPENSATION,
        reason={
            Language.ZH: "订单 {order_id} 已取消，不涉及延迟补偿。",
            Language.EN: "Order {order_id} is cancelled, so delay compensation does not apply.",
        },
    ),
    SkipRule(
        name="delivered_cannot_be_cancelled",
        after_tool=GET_ORDER_STATUS.name,
        field="status",
        values=frozenset({"delivered"}),
        skip_tag=StepTag.CANCEL,
        reason={
            Language.ZH: "订单 {order_id} 已签收，无法取消；如需退货，可以问我“退货政策是什么”。",
            Language.EN: (
                "Order {order_id} has already been delivered, so it can't be cancelled; "
                'to send it back, ask me "what is your return policy".'
            ),
        },
    ),
    SkipRule(
        name="already_cancelled",
        after_tool=GET_ORDER_STATUS.name,
        field="status",
        values=frozenset({"cancelled"}),
        skip_tag=StepTag.CANCEL,
        reason={
            Language.ZH: "订单 {order_id} 已经是取消状态，无需再次取消。",
            Language.EN: "Order {order_id} is already cancelled; nothing more to do.",
        },
    ),
)


def update_plan(run: Run, rules: Sequence[SkipRule] = DEFAULT_RULES) -> list[PlanStep]:
    """Skip the pending steps that observations made pointless; returns the newly skipped."""
    skipped: list[PlanStep] = []
    for source in run.steps:
        if source.status is not StepStatus.DONE or not isinstance(source.observation, dict):
            continue
        for rule in rules:
            if source.tool != rule.after_tool:
                continue
            value = source.observation.get(rule.field)
            if value not in rule.values:
                continue
            for target in run.steps:
                if _applies(target, rule, source):
                    target.status = StepStatus.SKIPPED
                    target.skip_reason = rule.reason[run.language].format(
                        order_id=source.args.get("order_id", ""), status=value
                    )
                    target.finished_at = utcnow()
                    skipped.append(target)
    return skipped


def _applies(target: PlanStep, rule: SkipRule, source: PlanStep) -> bool:
    if target.status is not StepStatus.PENDING or target.tag != rule.skip_tag:
        return False
    order: Any = target.args.get("order_id")
    return order is None or order == source.args.get("order_id")
