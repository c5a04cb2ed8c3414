"""Recall, round 6 of issue 21 (English, helper recall-en6): paraphrases (not the eval cases)
of the forms the round's blind cases missed or got wrong: an order that is the subject of its
own sentence after "and"/"but" (a new request, not a list), a person asked for as "put me
through to …" or "someone from support", …"""

from __future__ import annotations

import pytest

from agent_core.understanding.planner import PlanDraft, PlanRequest, RuleBasedPlanner

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


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # "and" + an order with a singular verb starts a sentence about that order
        ("send A1002 back please and A1001 still hasn't come, why", [("request_return", "A1002")]),
        ("cancel A1007 and A1003 is fine as it is", [("cancel_order", "A1007")]),
        # "but" between two orders contrasts them
        ("leave A1005 alone but A1003 please cancel", [("cancel_order", "A1003")]),
        ("dont touch A1001 but A1007 i want cancelled", [("cancel_order", "A1007")]),
        # a list of orders stays one request
        ("cancel A1003 and A1007 please", [("cancel_order", "A1003"), ("cancel_order", "A1007")]),
        (
            "A1003 and A1007 need to be cancelled",
            [("cancel_order", "A1003"), ("cancel_order", "A1007")],
        ),
    ],
)
def test_an_order_as_the_subject_after_and_or_but_is_a_new_request(
    text: str, expected: list[tuple[str, str]]
) -> None:
    assert actions(draft(text)) == expected, tools(draft(text))


def test_the_read_after_a_subject_and_is_its_own() -> None:
    d = draft("send A1002 back please and A1001 still hasn't come, why")
    assert ("get_order_status", "A1001") in tools(d)


@pytest.mark.parametrize(
    "text",
    [
        "return A1006 and put me over to someone from your staff",
        "can you put me through to a supervisor",
        "is there anybody from customer service I could reach",
        "I'd rather deal with one of your colleagues",
        "I want to sort this with a human rather than a bot",
    ],
)
def test_a_person_asked_for_in_other_words_is_a_handoff(text: str) -> None:
    assert draft(text).refusal is not None and draft(text).refusal.value == "handoff", tools(
        draft(text)
    )


def test_a_colleague_reported_is_not_a_handoff() -> None:
    assert tools(draft("your colleagues told me A1003 ships monday")) == [
        ("get_order_status", "A1003")
    ]
