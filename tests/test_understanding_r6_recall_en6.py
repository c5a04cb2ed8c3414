"""Recall, round 6 of issue 21 (English, helper recall-en6): paraphrases (not the eval cases)
of the forms the round's blind cases missed or got wrong: an order that is the subject of its
own sentence after "and"/"but" (a new request, not a list), a person asked for as "put me
through to …" or "someone from support", …"""

from __future__ import annotations

import pytest

from tests.planner_probe import actions, draft, tools, topics


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


@pytest.mark.parametrize(
    ("text", "tool", "order"),
    [
        # cancel: "can you stop it", "dont send it" at the end of the clause
        (
            "we bought one locally so A1007 is useless now, could you stop it",
            "cancel_order",
            "A1007",
        ),
        ("A1003: changed my mind, don't ship it", "cancel_order", "A1003"),
        ("please dont send A1007 at all", "cancel_order", "A1007"),
        # return: the whole thing / the parcel sent back
        (
            "the fabric on A1002 is cheap, im shipping the entire lot back",
            "request_return",
            "A1002",
        ),
        ("A1006 broke on day two, I'd like to post the package back", "request_return", "A1006"),
        # refund: a sum owed back in other words
        (
            "A1002 arrived crushed, those 35 dollars should come back to me",
            "request_refund",
            "A1002",
        ),
        ("I want the 19.99 I paid for A1006 repaid", "request_refund", "A1006"),
        ("I'd like the $12 for A1002 refunded to my visa", "request_refund", "A1002"),
    ],
)
def test_indirect_requests_are_the_action(text: str, tool: str, order: str) -> None:
    d = draft(text)
    assert actions(d) == [(tool, order)], tools(d)
    assert tools(d)[0] == ("get_order_status", order)


@pytest.mark.parametrize(
    "text",
    [
        "please don't ship A1007 yet",  # a hold, not a cancel
        "A1002 has a scratch, can you undo it",  # "undo" is not a cancel word here
        "I was told A1003 can be cancelled",
        "I want the 2 shirts from A1002 returned",  # a count, not a sum: never a refund
        "those 2 should come back, A1002",
        "don't send it back yet, A1002 might be fine",
    ],
)
def test_near_misses_take_no_new_action(text: str) -> None:
    d = draft(text)
    assert not [a for a in actions(d) if a[0] in ("cancel_order", "request_refund")], tools(d)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # an arrival expected by now is a status question, not a payment change ("by ... now")
        ("thought A1005 would have turned up by now", [("get_order_status", "A1005")]),
        ("surely A1003 should be here by now", [("get_order_status", "A1003")]),
        # another way to pay, asked: the FAQ
        ("is there some other way I can pay, paypal isn't working", [("search_policy", None)]),
        # something for the trouble of a late parcel: delay compensation
        (
            "the delivery came late and I'm wondering if I get anything for the inconvenience",
            [("search_policy", None)],
        ),
        # a new address at a relative's place, "parents'" with the apostrophe only
        (
            "send A1003 to my parents' house: 4 Elm Road",
            [("get_order_status", "A1003"), ("change_address", "A1003")],
        ),
    ],
)
def test_stated_needs_and_hints(text: str, expected: list[tuple[str, str | None]]) -> None:
    assert tools(draft(text)) == expected, tools(draft(text))


def test_the_faq_topics_of_the_hints() -> None:
    assert topics(draft("is there some other way I can pay, paypal isn't working")) == [
        "payment methods"
    ]
    assert topics(
        draft("the delivery came late and I'm wondering if I get anything for the inconvenience")
    ) == ["delay compensation"]


@pytest.mark.parametrize(
    "text",
    ["this shop is a total scam", "your website is honestly useless", "your service is a joke"],
)
def test_a_verdict_on_the_shop_is_a_complaint(text: str) -> None:
    d = draft(text)
    assert d.refusal is not None and d.refusal.value == "unsupported", (d.refusal, tools(d))
    assert tools(d) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'd rather you didn't ship A1007 at all", [("cancel_order", "A1007")]),
        ("honestly I'd rather you didn't send it, A1003", [("cancel_order", "A1003")]),
    ],
)
def test_rather_you_did_not_send_it_is_a_cancel(text: str, expected: list[tuple[str, str]]) -> None:
    assert actions(draft(text)) == expected, tools(draft(text))


def test_rather_you_did_not_send_it_there_is_no_cancel() -> None:
    assert actions(draft("I'd rather you didn't send A1007 to the old address")) == []


@pytest.mark.parametrize(
    "text",
    [
        "swap A1003 to the medium size please",  # an item's size: change_items
        "change order A1007 to a bigger one",
        "the card I used expired, so A1003 should be charged to the other card",  # payment
    ],
)
def test_changes_no_tool_serves_are_unsupported(text: str) -> None:
    d = draft(text)
    assert d.refusal is not None and d.refusal.value == "unsupported", (d.refusal, tools(d))
    assert actions(d) == []


def test_the_whole_trail_is_tracking() -> None:
    assert tools(draft("can I see the complete trail for A1005")) == [("track_parcel", "A1005")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'd appreciate it if order A1007 could be cancelled", [("cancel_order", "A1007")]),
        ("it'd be great if A1006 could be sent back", [("request_return", "A1006")]),
        ("the handle snapped, A1006 should be returned", [("request_return", "A1006")]),
        ("order A1007 no longer required", [("cancel_order", "A1007")]),
        ("plans changed and we won't really need it, A1007", [("cancel_order", "A1007")]),
        ("on second thought I'll pass on A1003", [("cancel_order", "A1003")]),
    ],
)
def test_polite_and_hinted_requests_are_the_action(
    text: str, expected: list[tuple[str, str]]
) -> None:
    assert actions(draft(text)) == expected, tools(draft(text))


@pytest.mark.parametrize(
    "text",
    [
        # what someone else said is not the customer's request
        "I was told A1006 should be returned",
        "we were informed that A1007 is no longer required",
        "according to the courier A1002 should be sent back",
        "your rep told me A1003 should be cancelled",
        # a condition or a time, not a wish
        "we won't need it until friday, A1007",
        "no need for A1003 to be cancelled",
        "would it be possible if A1003 could be cancelled?",
    ],
)
def test_reported_or_conditional_takes_no_action(text: str) -> None:
    assert actions(draft(text)) == [], tools(draft(text))


def test_a_request_beside_something_told_stays() -> None:
    assert actions(draft("I was told it would arrive monday. cancel A1003")) == [
        ("cancel_order", "A1003")
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("forget the refund on A1002, where is A1005", [("get_order_status", "A1005")]),
        ("forget about returning A1006, just track it", [("track_parcel", "A1006")]),
        ("skip the cancellation of A1003, when does it arrive", [("get_order_status", "A1003")]),
    ],
)
def test_a_forgotten_or_skipped_action_is_dropped(
    text: str, expected: list[tuple[str, str]]
) -> None:
    assert tools(draft(text)) == expected, tools(draft(text))


def test_needs_after_and_starts_the_next_orders_request() -> None:
    d = draft("A1007 needs cancelling and A1001 needs tracking")
    assert actions(d) == [("cancel_order", "A1007")], tools(d)
    assert ("track_parcel", "A1001") in tools(d)


@pytest.mark.parametrize(
    "text",
    [
        "the woman on the phone said to cancel A1007",  # a wrong action before round 6
        "the man over the phone told me to return A1006",
        "your rep said I should cancel A1003",
    ],
)
def test_what_someone_on_the_phone_said_is_status_and_policy(text: str) -> None:
    d = draft(text)
    assert actions(d) == [], tools(d)
    assert tools(d)[0][0] == "get_order_status", tools(d)
    assert len(topics(d)) == 1, tools(d)


def test_a_phone_to_change_is_still_unsupported() -> None:
    d = draft("please update my phone on the account")
    assert d.refusal is not None and d.refusal.value == "unsupported"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a correction without punctuation: only the order meant (both were cancelled before)
        ("cancel A1007 sorry I meant A1003", [("cancel_order", "A1003")]),
        ("pls return A1006 oops I meant A1002", [("request_return", "A1002")]),
        ("cancel A1005 no no I mean A1007", [("cancel_order", "A1007")]),
        ("cancel A1003 make that A1007", [("cancel_order", "A1007")]),
    ],
)
def test_a_run_on_correction_keeps_only_the_order_meant(
    text: str, expected: list[tuple[str, str]]
) -> None:
    assert actions(draft(text)) == expected, tools(draft(text))
