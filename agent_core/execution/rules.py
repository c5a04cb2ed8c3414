"""Observation rules: what a finished step's result changes in the rest of the plan.

The rules are catalog data (`ToolSpec.skip_rules`, each with its written reason): after a
`done` step of some tool whose observation has a field in a set of values, the pending
steps a rule targets (by tool, by tag, or both) for the same order are skipped, with a
reason the customer can read. Pure functions; the executor records what they change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_core.catalog.builtin import CATALOG, rules_of
from agent_core.catalog.spec import RuleBook, SkipRule, fill
from agent_core.models import PlanStep, Run, StepStatus, utcnow

__all__ = ["DEFAULT_RULES", "SkipRule", "update_plan"]

DEFAULT_RULES: tuple[SkipRule, ...] = rules_of(CATALOG.values())


def update_plan(run: Run, rules: Sequence[SkipRule] = DEFAULT_RULES) -> list[PlanStep]:
    """Skip the pending steps that observations made pointless; returns the newly skipped.

    For each done step, in plan order, the rules its observation fires, in catalog order
    (`RuleBook`, indexed once per catalog; a plain list of rules is indexed here)."""
    skipped: list[PlanStep] = []
    pending = [step for step in run.steps if step.status is StepStatus.PENDING]
    if not pending:
        return skipped  # nothing left to skip
    book = rules if isinstance(rules, RuleBook) else RuleBook(rules)
    tools = {step.tool for step in pending}
    tags = {step.tag for step in pending}
    for source in run.steps:
        observation = source.observation
        if source.status is not StepStatus.DONE or not isinstance(observation, dict):
            continue
        for rule in book.fired(source.tool, observation):
            if (rule.skip_tool is not None and rule.skip_tool not in tools) or (
                rule.skip_tag is not None and rule.skip_tag not in tags
            ):
                continue  # no pending step it could skip (a quicker `_applies` for all)
            value = observation.get(rule.field)
            for target in pending:
                if _applies(target, rule, source):
                    target.status = StepStatus.SKIPPED
                    values = {
                        "order_id": str(source.args.get("order_id", "")),
                        "status": str(value),
                    }
                    target.skip_reason = fill(rule.reason[run.language], values, missing="")
                    target.finished_at = utcnow()
                    skipped.append(target)
    return skipped


def _applies(target: PlanStep, rule: SkipRule, source: PlanStep) -> bool:
    if target.status is not StepStatus.PENDING:
        return False
    if rule.skip_tag is not None and target.tag != rule.skip_tag:
        return False
    if rule.skip_tool is not None and target.tool != rule.skip_tool:
        return False
    order: Any = target.args.get("order_id")
    return order is None or order == source.args.get("order_id")
