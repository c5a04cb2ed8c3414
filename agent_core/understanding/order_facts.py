"""What earlier runs in a chat observed about orders, and which orders a clarifying
question may offer for an action (issue 23 #6).

The planner asks back "which order?" from the ids it read, or the chat's last order. It
does not know what happened to them: an order a lookup did not find, or one already
cancelled, was offered as a button for "cancel it". The agent narrows the question with
the observations of the chat's earlier runs: an order not found is never an option, nor
one whose observed state the catalog's observation rules say the action cannot follow
(cancelled or delivered for a cancel, and so on). One order left means no question: the
action is planned on it, and still pauses for the customer's Confirm. None left: the
question asks for the order number.

Pure: the steps come from storage (`RunStore.recent_order_steps`), newest first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from agent_core.catalog.spec import RuleBook, SkipRule, ToolSpec
from agent_core.interpretation import Clarification, ClarifyOption
from agent_core.models import ErrorType, Language, StepStatus

STATUS_TOOL = "get_order_status"
NOT_FOUND = "not_found"
_MISSING = frozenset({ErrorType.NOT_FOUND.value, ErrorType.PERMISSION_DENIED.value})

_ASK_NUMBER = {
    Language.ZH: "请发给我订单号（例如 A1001）。",
    Language.EN: "Please send its number (for example A1001).",
}


class ObservedStep(NamedTuple):
    """One step of an earlier run about an order, as stored."""

    tool: str
    order_id: str
    status: str
    observation: Any
    error_type: str | None


def order_facts(steps: Sequence[ObservedStep], catalog: Mapping[str, ToolSpec]) -> dict[str, str]:
    """Each order's latest observed state: "not_found", or its state field's value (the
    status a lookup saw, "cancelled" after a cancel). Steps newest first; an order whose
    steps observed nothing (failed otherwise, skipped) has no fact."""
    facts: dict[str, str] = {}
    for step in steps:
        order = step.order_id.strip().upper()
        if not order or order in facts:
            continue
        if step.error_type in _MISSING:
            facts[order] = NOT_FOUND
            continue
        spec = catalog.get(step.tool)
        field = spec.state_field if spec is not None else None
        data = step.observation
        if step.status == StepStatus.DONE.value and field and isinstance(data, dict):
            value = data.get(field)
            if isinstance(value, str) and value:
                facts[order] = value
    return facts


def can_take(state: str | None, tool: str, tag: str, rules: Sequence[SkipRule]) -> bool:
    """Whether an order in `state` may still be offered for `tool` (planned with `tag`):
    unknown states may; "not_found" never; otherwise unless an observation rule of an
    order lookup seeing that state skips such a step."""
    if state is None:
        return True
    if state == NOT_FOUND:
        return False
    book = rules if isinstance(rules, RuleBook) else RuleBook(rules)
    return not any(
        rule.skip_tool == tool or (rule.skip_tag is not None and rule.skip_tag.value == tag)
        for rule in book.fired(STATUS_TOOL, {"status": state})
    )


def narrow(
    clarify: Clarification, keep: Sequence[bool], language: Language
) -> Clarification | ClarifyOption:
    """The question with only the options kept: one kept is returned as the option to plan
    (no question); none kept asks for the order number instead."""
    options = [option for option, kept in zip(clarify.options, keep, strict=True) if kept]
    if len(options) == 1:
        return options[0]
    if options:
        return clarify.model_copy(update={"options": options})
    question = clarify.question
    ask = _ASK_NUMBER[language]
    if ask not in question:
        question = question + ask if language is Language.ZH else f"{question} {ask}"
    return clarify.model_copy(update={"options": [], "question": question})
