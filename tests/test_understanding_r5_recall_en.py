"""Recall, round 5 of issue 21 (English): paraphrases (not the eval cases) of the forms the
round's blind cases missed — indirect cancels and returns ("no point in it coming", "it'll
have to go back"), a refund of "those 40", an address after "I've moved to …" or "to my work
instead", a person recognised only on a word naming one, complaints about the service, a
stated need the FAQ answers, and how long things take in general."""

from __future__ import annotations

import pytest

from agent_core.understanding.evaluation import outcome_of
from tests.planner_probe import actions, draft, tools, topics


@pytest.mark.parametrize(
    ("text", "tool", "order"),
    [
        # not wanted, said indirectly
        ("I'm away all summer so there's no point in A1007 arriving", "cancel_order", "A1007"),
        ("no point sending A1003, I'll be abroad", "cancel_order", "A1003"),
        ("the party got cancelled so A1007 doesn't need to be sent", "cancel_order", "A1007"),
        ("A1003: honestly I don't need it anymore", "cancel_order", "A1003"),
        ("about A1007, please stop the order", "cancel_order", "A1007"),
        # going back
        ("A1006 is the wrong shade, it'll have to go back", "request_return", "A1006"),
        ("A1002 has to go back, the seams are split", "request_return", "A1002"),
        ("A1006 can go back, I never use it", "request_return", "A1006"),
        # an amount owed back
        ("I paid 25 for A1002 and it's broken, I want those 25 back", "request_refund", "A1002"),
        ("refund me 12.50 for A1006", "request_refund", "A1006"),
    ],
)
def test_indirect_requests_are_the_action(text: str, tool: str, order: str) -> None:
    d = draft(text)
    assert actions(d) == [(tool, order)], tools(d)
    assert tools(d)[0] == ("get_order_status", order)


@pytest.mark.parametrize(
    "text",
    [
        "A1003 has to go back to the depot first, the courier said",  # the parcel, not a return
        "refund me 2 of the cups in A1002",  # a count, not an amount: asked
        "I moved to 5 Oak St last year. where is A1005?",  # where they live, not a change
        "don't stop the order A1003",
    ],
)
def test_no_action_from_the_new_forms_where_none_is_asked(text: str) -> None:
    d = draft(text)
    assert actions(d) == [], tools(d)


@pytest.mark.parametrize(
    ("text", "order"),
    [
        ("we've just moved to 8 Pine Road, York, so A1003 has to follow us there", "A1003"),
        ("I moved to 14 Harbour View, Hull, so A1007 should be sent there", "A1007"),
        ("send A1003 to my workplace instead: 2 Mill Lane, Leeds", "A1003"),
        ("please ship A1007 to my work pls: 9 Dock Road, Bristol", "A1007"),
    ],
)
def test_a_new_address_said_as_a_move_or_a_workplace(text: str, order: str) -> None:
    d = draft(text)
    assert actions(d) == [("change_address", order)], tools(d)
    assert d.steps[-1].args.get("address")


def test_change_where_it_gets_delivered_is_a_question_about_the_address() -> None:
    d = draft("can I still change where A1003 is delivered?")
    assert tools(d) == [("get_order_status", "A1003"), ("search_policy", None)]


@pytest.mark.parametrize(
    "text",
    [
        "I ordered the small in A1007 but I actually wanted a medium",
        "I really need the large one, not this size",
        "honestly the whole experience was shocking",
    ],
)
def test_a_person_is_not_recognised_without_a_word_for_one(text: str) -> None:
    assert draft(text).refusal != "handoff"


@pytest.mark.parametrize(
    "text",
    ["talk to somone pls", "lemme talk to ur boss", "can I speak to someone from your staff"],
)
def test_a_person_is_still_recognised_by_a_word_for_one(text: str) -> None:
    assert draft(text).refusal == "handoff"


@pytest.mark.parametrize(
    ("text", "topic"),
    [
        ("the most terrible service I have ever seen", "complaint"),
        ("appalling customer experience from start to finish", "complaint"),
        ("how do I rate the products I bought?", "review"),
        ("I want to review my purchase", "review"),
        ("I chose size medium but I really need a large", "change_items"),
        ("I'd like to pay for A1003 via bank transfer", "payment_change"),
        ("change payment on A1007", "payment_change"),
        ("could you change the colour before it ships", "change_items"),
        ("change the quantity of mugs in A1007 to 3", "change_items"),
        ("please change my name on the account to Sam Lee", "account"),
        ("update my username to sunnyday", "account"),
        ("charge A1007 to my mastercard instead", "payment_change"),
        ("honestly the worst company ever", "complaint"),
        ("bung another cable in A1003", "change_items"),
        ("chuck a spare battery in with A1007", "change_items"),
        ("kill my account", "account"),
        ("my card expired so switch it to my new card", "payment_change"),
    ],
)
def test_cant_do_topics(text: str, topic: str) -> None:
    d = draft(text)
    assert outcome_of(d).kind == "unsupported", tools(d)
    assert d.interpretation is not None
    assert topic in d.interpretation.unsupported_topics
    assert actions(d) == []


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("until when can orders be called off?", "cancellation"),
        ("we need an invoice for the accounts team", "invoices"),
        ("how long does it usually take for orders to arrive?", "delivery"),
        ("do you deliver parcels to Iceland?", "ship"),
        ("can I have a reciept please", "invoice"),
        ("wat is ur return policy", "refund"),
        ("do you take visa?", "payment"),
        ("pls sign me up to the newsletter", "newsletter"),
        ("can I bring things back if they don't fit?", "refund"),
        ("how do I stop all this spam from you", "newsletter"),
        ("need an invoice for my accountant", "invoice"),
    ],
)
def test_faq_questions(text: str, query: str) -> None:
    d = draft(text)
    assert d.steps, d.refusal
    assert all(s.tool == "search_policy" for s in d.steps), tools(d)
    assert any(query in q for q in topics(d)), topics(d)


def test_a_request_to_send_an_invoice_is_the_faqs() -> None:
    # v1's unsupported-en-003, relabelled in round 8 by v2 rule 2: where the invoice is
    d = draft("please send me an invoice")
    assert d.refusal is None
    assert any("invoice" in q for q in topics(d)), topics(d)


def test_how_long_my_order_takes_is_still_about_my_order() -> None:
    assert draft("how long does it take for my stuff to arrive?").refusal == "missing_order_id"


@pytest.mark.parametrize("word", ["carier", "courrier", "curier"])
def test_courier_misspelt_is_tracking(word: str) -> None:
    assert tools(draft(f"which {word} has A1005")) == [("track_parcel", "A1005")]


# Batch 2 (ids from 360)


@pytest.mark.parametrize(
    ("text", "tool", "order"),
    [
        ("A1002 isn't for me, I want to give it back", "request_return", "A1002"),
        ("please take A1006 back, it squeaks", "request_return", "A1006"),
        ("could I get 25 dollars back on A1002? it arrived dented", "request_refund", "A1002"),
        ("I want $8 back for A1006", "request_refund", "A1006"),
        (
            "A1002 cost me 40 pounds for nothing, I want that money returned",
            "request_refund",
            "A1002",
        ),
    ],
)
def test_batch2_requests_are_the_action(text: str, tool: str, order: str) -> None:
    d = draft(text)
    assert actions(d) == [(tool, order)], tools(d)


@pytest.mark.parametrize(
    "text",
    [
        "A1002: I'd like those funds returned",  # money back: a refund, no amount: asked
        "give me back my money for A1002",  # a refund without an amount, never a return
        "don't give A1006 back yet, I'm still deciding",
    ],
)
def test_money_returned_is_never_a_return(text: str) -> None:
    assert ("request_return", "A1002") not in tools(draft(text))
    assert ("request_return", "A1006") not in tools(draft(text))


def test_a_whether_question_after_a_read_is_the_faq_with_the_read() -> None:
    d = draft("where is A1007, and do you accept apple pay")
    assert tools(d) == [("get_order_status", "A1007"), ("search_policy", None)]
    assert any("pay" in q for q in topics(d)), topics(d)


def test_a_second_question_after_a_topic_about_an_order_is_added() -> None:
    d = draft("is A1006 covered by the guarantee, and how long do refunds take?")
    assert tools(d)[0] == ("get_order_status", "A1006")
    assert len(topics(d)) == 2, topics(d)
    assert "warranty" in topics(d)[0]


@pytest.mark.parametrize(
    "text",
    [
        "Could you change the size of the jacket in A1007 to XL?",
        "can you switch the mug in A1007 to the blue one",
        "change the lamp in A1003 for the bigger model",
    ],
)
def test_a_change_inside_a_named_order_is_change_items(text: str) -> None:
    d = draft(text)
    assert outcome_of(d).kind == "unsupported", tools(d)
    assert d.interpretation is not None
    assert d.interpretation.unsupported_topics == ["change_items"]
    assert actions(d) == []


def test_the_address_in_an_order_is_still_an_address_change() -> None:
    d = draft("change the address in A1003 to 5 Oak St, Leeds")
    assert actions(d) == [("change_address", "A1003")], tools(d)


@pytest.mark.parametrize(
    ("text", "tool", "order"),
    [
        ("I'm not going to need A1003 anymore", "cancel_order", "A1003"),
        ("nuke A1007", "cancel_order", "A1007"),
        ("I expect my 35 dollars back for A1002", "request_refund", "A1002"),
    ],
)
def test_batch3_probes_are_the_action(text: str, tool: str, order: str) -> None:
    assert actions(draft(text)) == [(tool, order)], tools(draft(text))


@pytest.mark.parametrize("text", ["is A1003 even real lol", "I really need it by Friday"])
def test_real_alone_asks_for_no_person(text: str) -> None:
    assert draft(text).refusal != "handoff"


@pytest.mark.parametrize(
    ("text", "topic"),
    [
        ("I want to purchase another blender", "place_order"),
        ("order the red scarf in size S for me", "place_order"),
        ("buy the white sneakers in size 9 for me", "place_order"),
        ("can you add socks to my order", "change_items"),
    ],
)
def test_buying_with_no_order_named_is_a_new_order(text: str, topic: str) -> None:
    d = draft(text)
    assert outcome_of(d).kind == "unsupported", tools(d)
    assert d.interpretation is not None
    assert d.interpretation.unsupported_topics == [topic]


@pytest.mark.parametrize(
    ("text", "order"),
    [
        ("A1002 doesn't fit anyone here, so it's coming back to you", "A1002"),
        ("A1006 is going right back", "A1006"),
        ("I'll bring A1002 back to the shop on Monday", "A1002"),
    ],
)
def test_batch3_returns(text: str, order: str) -> None:
    assert actions(draft(text)) == [("request_return", order)], tools(draft(text))


def test_bringing_money_back_is_no_return() -> None:
    assert ("request_return", "A1002") not in tools(draft("bring back my money for A1002"))


def test_whats_going_on_with_it_reads_the_chats_order() -> None:
    assert tools(draft("so what's going on with it?", last="A1001")) == [
        ("get_order_status", "A1001")
    ]


@pytest.mark.parametrize(
    "text",
    [
        "i have A1003 and A1007 pls cancel it",
        "about A1003 and A1007 i want to return it",
        "A1003 A1007 refund this one 20",
    ],
)
def test_one_of_several_orders_named_before_it_is_asked(text: str) -> None:
    d = draft(text)
    assert actions(d) == [], tools(d)
    assert d.refusal == "needs_clarification"


@pytest.mark.parametrize(
    "text", ["A1003 and A1007 cancel them", "A1003 and A1007 please cancel both"]
)
def test_several_orders_with_a_plural_object_are_all_meant(text: str) -> None:
    assert actions(draft(text)) == [("cancel_order", "A1003"), ("cancel_order", "A1007")]


@pytest.mark.parametrize(
    ("text", "order"),
    [
        ("A1007 - get rid of it", "A1007"),
        ("A1003 is not needed now", "A1003"),
        ("found A1007 cheaper in town, pls stop it", "A1007"),
    ],
)
def test_batch3_cancels(text: str, order: str) -> None:
    assert actions(draft(text)) == [("cancel_order", order)], tools(draft(text))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the tracking cited in a complaint is no request for it
        (
            "got the shipping email for A1005 but the tracking still hasn't updated, what's up",
            [("get_order_status", "A1005")],
        ),
        ("is A1001 at the local depot yet?", [("track_parcel", "A1001")]),
        ("remove item A1007", []),
        ("change size A1003", []),
    ],
)
def test_batch3_reads(text: str, expected: list[tuple[str, str | None]]) -> None:
    assert tools(draft(text)) == expected


def test_a_question_about_getting_rid_of_it_does_nothing() -> None:
    assert actions(draft("A1002 arrived broken, how do I get rid of it")) == []


def test_id_like_an_amount_back_is_a_refund_of_it() -> None:
    d = draft("i'd like 20 euros back for A1006")
    assert actions(d) == [("request_refund", "A1006")], tools(d)
    assert d.steps[-1].args.get("amount") in ("20", 20, 20.0)


@pytest.mark.parametrize(
    "text",
    [
        "refund like 20 for A1006",  # "like" as "about": asked
        "I'd like about 20 back for A1006",
        "you charged me 89 for A1002 and it's broken, give it back",  # the money, not a return
    ],
)
def test_no_return_and_no_guessed_amount(text: str) -> None:
    d = draft(text)
    assert actions(d) == [], tools(d)


@pytest.mark.parametrize(
    ("text", "order"),
    [
        ("A1002 is too tight, I'm sending it your way", "A1002"),
        ("I'm posting A1006 back on Friday", "A1006"),
        ("we'll be mailing A1002 back this week", "A1002"),
    ],
)
def test_returns_said_of_oneself(text: str, order: str) -> None:
    assert actions(draft(text)) == [("request_return", order)], tools(draft(text))


def test_a_question_about_posting_it_back_is_no_return() -> None:
    assert actions(draft("is posting back A1002 free?")) == []


@pytest.mark.parametrize(
    "text",
    ["could I get a callback?", "I want my issue escalated", "can I get somebody on the phone"],
)
def test_batch3_handoff(text: str) -> None:
    assert draft(text).refusal == "handoff"


@pytest.mark.parametrize(
    ("text", "order"),
    [
        ("my new address is 9 Oak St, York - please update A1007", "A1007"),
        ("A1003 pls ship to my office instead: 4 Bank Road, Leeds", "A1003"),
        ("send A1007 to my mum's house: 12 Rose Lane, Bath", "A1007"),
        ("wrong address on A1003, the correct one is 7 Dale Road, Hull", "A1003"),
    ],
)
def test_batch3_addresses(text: str, order: str) -> None:
    d = draft(text)
    assert actions(d) == [("change_address", order)], tools(d)
    assert tools(d) == [("get_order_status", order), ("change_address", order)]
    address = d.steps[-1].args.get("address")
    assert isinstance(address, str) and order not in address.upper(), address


@pytest.mark.parametrize(
    ("text", "order"),
    [("A1003 must be cancelled asap", "A1003"), ("A1007 needs cancelling please", "A1007")],
)
def test_batch3_passive_cancels(text: str, order: str) -> None:
    assert actions(draft(text)) == [("cancel_order", order)], tools(draft(text))


@pytest.mark.parametrize(
    "text", ["A1003 should be cancelled by now, right?", "should A1003 be cancelled?"]
)
def test_a_passive_cancel_asked_about_does_nothing(text: str) -> None:
    assert actions(draft(text)) == [], tools(draft(text))


def test_deliver_misspelt_is_still_the_delivery_question() -> None:
    d = draft("do you delivr to spain")
    assert d.steps and all(s.tool == "search_policy" for s in d.steps), tools(d)


def test_ad_for_add_an_item() -> None:
    d = draft("ad a lamp to A1007")
    assert outcome_of(d).kind == "unsupported", tools(d)
    assert actions(d) == []


@pytest.mark.parametrize(
    ("text", "tool", "order"),
    [
        ("honestly I no longer have any use for A1007", "cancel_order", "A1007"),
        ("she moved out, so there's no reason to ship it", "cancel_order", None),
        ("I'd rather A1003 never left your warehouse", "cancel_order", "A1003"),
        ("I'd like to hand A1002 back", "request_return", "A1002"),
        ("A1006 is the wrong colour, so back it goes", "request_return", "A1006"),
    ],
)
def test_batch3_indirect(text: str, tool: str, order: str | None) -> None:
    d = draft(text)
    if order is None:  # no order named: which one is asked
        assert d.refusal == "needs_clarification" and actions(d) == [], tools(d)
    else:
        assert actions(d) == [(tool, order)], tools(d)


@pytest.mark.parametrize(
    "text",
    [
        "A1003 was ordered by mistake. did you cancel it?",
        "there's no reason to send A1003 yet, I'm away till june",
    ],
)
def test_batch3_no_cancel_asked(text: str) -> None:
    assert actions(draft(text)) == [], tools(draft(text))


def test_which_van_is_tracking() -> None:
    assert tools(draft("which van is A1005 on?")) == [("track_parcel", "A1005")]


def test_a_question_about_deleting_the_account_is_still_the_faq() -> None:
    d = draft("how do I delete my account?")
    assert d.steps and all(s.tool == "search_policy" for s in d.steps), tools(d)


@pytest.mark.parametrize(
    "text",
    [
        "I want to follow the journey of A1001",
        "which route is A1001 taking",
        "what's the last known location of A1001?",
        "A1001 trk no pls",
    ],
)
def test_batch3_tracking(text: str) -> None:
    assert tools(draft(text)) == [("track_parcel", "A1001")]


@pytest.mark.parametrize(
    ("text", "order"),
    [
        ("I'm not at the old flat now, A1007 should come to 6 Mill Lane, Leeds", "A1007"),
        ("we moved - A1003 to 14 Queen Street, Bath please", "A1003"),
        ("please take A1007 to my office at 2 Dock Road, Hull", "A1007"),
        ("my details are old, I now live at 7 Park Road, York - A1003", "A1003"),
        ("for A1007 use 9 Hill Road, Derby instead of the one on file", "A1007"),
    ],
)
def test_batch3_new_addresses(text: str, order: str) -> None:
    d = draft(text)
    assert actions(d) == [("change_address", order)], tools(d)


@pytest.mark.parametrize(
    "text", ["A1003 to 5 Oak St? is that where it's going?", "I live at 5 Oak St, where is A1003"]
)
def test_an_address_asked_about_or_stated_changes_nothing(text: str) -> None:
    assert actions(draft(text)) == [], tools(draft(text))


def test_an_order_to_a_street_is_no_billing_address_change() -> None:
    assert actions(draft("please change the billing address on A1007 to 8 Hill St")) == []


@pytest.mark.parametrize(
    "text",
    ["status of A1005 plus how do I get an invoice", "where is A1005 also how can I get a receipt"],
)
def test_a_how_question_after_a_read_without_a_question_mark(text: str) -> None:
    d = draft(text)
    assert tools(d) == [("get_order_status", "A1005"), ("search_policy", None)], d.refusal
    assert any("invoice" in q for q in topics(d)), topics(d)


def test_v1_can_i_get_an_invoice_after_a_read_is_the_read_and_the_faq() -> None:
    # cases.jsonl unsupported-en-007, relabelled in round 8 (v2 rule 2)
    d = draft("where is A1001? and can I get a VAT invoice for it")
    assert outcome_of(d).pairs == [("get_order_status", "A1001"), ("search_policy", None)]
