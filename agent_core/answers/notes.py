"""What the answer says about the understanding itself (issue 13): the question asked back,
a request for a person, what no tool serves, an earlier order that was used, orders the
step cap left out.

Kept apart from `agent_core.answers.compose` (which speaks about what the steps observed) so each
stays one idea; `answers.compose_answer` calls these.
"""

from __future__ import annotations

from agent_core.interpretation import Interpretation
from agent_core.models import Language, Run
from agent_core.understanding.lexicon import POLICY_QUERIES, PolicyTopic

ZH, EN = Language.ZH, Language.EN

# How to reach a person until the handoff issue routes it (it records the intent already).
REACH_A_PERSON: dict[Language, str] = {
    ZH: "如需人工帮助，请回复“转人工”，我会转交给我们的同事。",
    EN: "If you'd like a person to help with that, write \"talk to a person\" and I'll pass it on.",
}
HANDOFF: dict[Language, str] = {
    ZH: "好的，已记录你想联系人工客服，我们的同事会在这里跟进回复你。",
    EN: "I've noted that you'd like to talk to a person. Someone from our team will follow up "
    "with you here.",
}


def clarify_answer(run: Run) -> str | None:
    """The clarifying question a `needs_clarification` run ends with."""
    interp = run.interpretation
    if interp is None or interp.clarify is None:
        return None
    return interp.clarify.question


def handoff_answer(run: Run) -> str | None:
    interp = run.interpretation
    if interp is None or interp.handoff is None:
        return None
    return HANDOFF[run.language]


# Can't-do topics answered with more than "I can't" (issue 21): a complaint is met with an
# apology and a person; a review is done on the shop's site, so no person is offered.
APOLOGY: dict[Language, str] = {
    ZH: "很抱歉给你带来不好的体验。",
    EN: "I'm sorry to hear that.",
}
NOT_HERE: dict[str, dict[Language, str]] = {
    "review": {
        ZH: "评价请在商品页面的“我的评价”里发布或修改。",
        EN: "Reviews are written and changed on the product page, under My reviews.",
    },
}


def unsupported_lines(run: Run) -> list[str]:
    """Names what no tool serves, with a fitting way forward (usually the offer of a
    person); nothing for an unrecognised request (the capability text answers that)."""
    interp = run.interpretation
    if interp is None or not interp.unsupported or interp.unrecognised:
        return []
    topics = set(interp.unsupported_topics)
    lang = run.language
    lines = [APOLOGY[lang]] if "complaint" in topics else []
    if lang is ZH:
        lines.append(f"这里无法帮你处理：{'、'.join(interp.unsupported)}。")
    else:
        lines.append(f"I can't help with {', '.join(interp.unsupported)} here.")
    lines.extend(NOT_HERE[t][lang] for t in sorted(topics) if t in NOT_HERE)
    if not topics or topics - set(NOT_HERE):
        lines.append(REACH_A_PERSON[lang])
    return lines


def context_line(run: Run) -> str | None:
    """Says which earlier order the reads were about, so nothing is assumed silently."""
    interp = run.interpretation
    if interp is None or interp.context_order_id is None:
        return None
    order_id = interp.context_order_id
    if run.language is ZH:
        return f"关于你之前问过的订单 {order_id}："
    return f"About order {order_id}, the one you asked about earlier:"


def not_covered_line(run: Run) -> str | None:
    interp = run.interpretation
    if interp is None or not interp.not_covered:
        return None
    names = [_name(item, run.language) for item in interp.not_covered]
    if run.language is ZH:
        return f"每次最多处理 4 个步骤，这次没有处理：{'、'.join(names)}。请单独再问一次。"
    return (
        f"I handle at most 4 steps per request, so this did not cover: {', '.join(names)}. "
        "Please ask about it separately."
    )


def _name(item: str, language: Language) -> str:
    """An order id as it is; a policy topic by its name ("the refund policy")."""
    if item in {t.value for t in PolicyTopic}:
        query = POLICY_QUERIES[PolicyTopic(item)][language]
        return f"{query}政策" if language is ZH else f"the {query} policy"
    return item


def is_flagged(interp: Interpretation | None) -> bool:
    """A run staff must not read as a clean success: something was not served."""
    return interp is not None and bool(interp.unsupported)
