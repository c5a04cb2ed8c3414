"""What new writers wrote (issue 33's examples and its blind batch's wrong actions), read
by the words alone: each request as a person would expect, and never an action nobody
asked for. Recognition by meaning is tested in test_recognition_meaning.py."""

from __future__ import annotations

import asyncio

import pytest

from agent_core.understanding.planner import PlanDraft, PlanRequest, RuleBasedPlanner

WORDS = RuleBasedPlanner()
DIGIT_IDS = RuleBasedPlanner(order_id_pattern=r"\d{3,10}")


def plan(text: str, planner: RuleBasedPlanner = WORDS) -> PlanDraft:
    return asyncio.run(planner.plan(PlanRequest(text=text, user_id=10001)))


def steps(draft: PlanDraft) -> list[tuple[str, str | None]]:
    return [(s.tool, s.args.get("order_id")) for s in draft.steps if s.tool != "search_policy"]


@pytest.mark.parametrize(
    "text",
    ["Please cancel order A1003, I changed my mind.", "cancel A1003, changed my mind"],
)
def test_a_reason_after_a_request_takes_nothing_back(text: str) -> None:
    assert steps(plan(text)) == [("get_order_status", "A1003"), ("cancel_order", "A1003")]


def test_changed_my_mind_before_something_else_still_takes_the_request_back() -> None:
    text = "I'd like to cancel A1003. Hmm, changed my mind, just track it instead"
    assert ("cancel_order", "A1003") not in steps(plan(text))


@pytest.mark.parametrize(
    "text",
    [
        "I'm having trouble cancelling order A1003",
        "Tried cancelling A1003 three times now, the page just reloads every time I hit 'Cancel order'.",
        "the site won't let me cancel A1003",
        "not really sure how the whole return thing works for A1002, help?",
        "A1002 - it's not really for me. where would I ship it back to?",
        "订单A1002 退货申请提交不上，一直提示系统繁忙",
        "A1004 取消都一个礼拜了，那 39.9 到现在还没退回我卡上",
        "A1004 was cancelled two weeks ago and I still haven't seen my money",
    ],
)
def test_trouble_questions_and_money_waited_for_are_no_action(text: str) -> None:
    draft = plan(text)
    assert draft.steps, draft
    assert all(tool in {"get_order_status", "track_parcel"} for tool, _ in steps(draft)), text


def test_a_correction_after_the_order_moves_the_action() -> None:
    draft = plan("cancel A1003 - oops, wrong one, A1007 I meant")
    assert steps(draft) == [("get_order_status", "A1007"), ("cancel_order", "A1007")]


def test_one_refund_amount_over_two_orders_asks_whose() -> None:
    draft = plan("A1002 and A1006 - I want my money back, 30 dollars.")
    assert draft.steps == [] and draft.interpretation.clarify is not None


def test_an_amount_after_a_refund_word_is_no_order_when_ids_are_digits() -> None:
    draft = plan("refund 120 for order 1002", DIGIT_IDS)
    assert steps(draft) == [("get_order_status", "1002"), ("request_refund", "1002")]
    assert draft.steps[-1].args["amount"] == "120"
