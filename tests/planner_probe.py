"""What the understanding unit tests ask of the rule planner, written once: a draft of a
text, its steps as (tool, order) pairs, its policy topics, its high-risk actions, and
whether it only asks back."""

from __future__ import annotations

from agent_core.understanding.planner import PlanDraft, PlanRequest, Refusal, RuleBasedPlanner

HIGH_RISK = {"cancel_order", "request_return", "request_refund", "change_address"}
PLANNER = RuleBasedPlanner()


def draft(text: str, last: str | None = None) -> PlanDraft:
    return PLANNER.draft(PlanRequest(text=text, last_order_id=last))


def tools(d: PlanDraft) -> list[tuple[str, str | None]]:
    return [(s.tool, s.args.get("order_id")) for s in d.steps]


def topics(d: PlanDraft) -> list[str]:
    return [str(s.args.get("query")) for s in d.steps if s.tool == "search_policy"]


def actions(d: PlanDraft) -> list[tuple[str, str | None]]:
    return [t for t in tools(d) if t[0] in HIGH_RISK]


def asks(d: PlanDraft) -> bool:
    return d.refusal is Refusal.NEEDS_CLARIFICATION and not d.steps
