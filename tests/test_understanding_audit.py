"""Round 4's audit (issue 21) as unit tests: plain, polite and keyword phrasings the blind
audit cases showed, each a rule of tests/eval/README.md, in wordings the eval cases lack."""

from __future__ import annotations

import pytest

from agent_core.understanding.evaluation import Outcome, outcome_of
from agent_core.understanding.planner import PlanRequest, RuleBasedPlanner


def outcome(text: str) -> Outcome:
    return outcome_of(RuleBasedPlanner().draft(PlanRequest(text=text)))


@pytest.mark.parametrize(
    ("text", "topic"),
    [
        # A question in a polite frame is a question (v2 rule 2), and its "tell" is not the
        # can't-do "tell me a joke".
        ("Could you tell me how I get a VAT invoice?", "invoices"),
        ("Can you tell me if you take Visa Electron?", "payment_methods"),
        # "faulty" beside another topic is why, not a warranty question.
        ("can I get a refund if the lamp is faulty?", "refund"),
        # The shipping of a return is the return policy's question.
        ("who pays for return shipping", "refund"),
        ("退货的运费谁承担", "refund"),
    ],
)
def test_a_policy_question_gets_its_one_topic(text: str, topic: str) -> None:
    got = outcome(text)
    assert (got.kind, got.pairs) == ("plan", [("search_policy", None)])
    # A topic only the FAQ has is not named on the step (None); a legacy topic is.
    assert [t if t != "returns" else "refund" for t in got.policy_topics] in ([topic], [None])


def test_two_questions_joined_keep_both_topics() -> None:
    got = outcome("how much is shipping and do you take returns?")
    assert got.pairs == [("search_policy", None), ("search_policy", None)]


@pytest.mark.parametrize("text", ["invoice A1002", "A1002 receipt pls", "A1002 发票"])
def test_a_bare_topic_with_an_order_is_its_faq_with_the_status(text: str) -> None:
    got = outcome(text)
    assert (got.kind, got.pairs) == (
        "plan",
        [("get_order_status", "A1002"), ("search_policy", None)],
    )


@pytest.mark.parametrize(
    ("text", "order"),
    [
        ("please send me an invoice for A1002", "A1002"),
        ("I'd need a VAT receipt for A1006 for my employer", "A1006"),
        ("帮我开一张 A1002 的发票", "A1002"),
    ],
)
def test_a_request_for_an_invoice_gets_the_faqs_answer_and_the_orders_status(
    text: str, order: str
) -> None:
    """Round 8: v2 rule 2 over v1's label — where the invoice is, never "I can't do that"."""
    draft = RuleBasedPlanner().draft(PlanRequest(text=text))
    got = outcome_of(draft)
    assert (got.kind, got.pairs) == ("plan", [("get_order_status", order), ("search_policy", None)])
    assert [p.topic for p in draft.interpretation.policies] == ["invoices"]


def test_a_complaint_naming_a_parcel_is_a_complaint_a_question_still_a_read() -> None:
    assert outcome("my parcel is lost, terrible service").kind == "unsupported"
    assert outcome("where is my parcel, this is unacceptable").refusal == "missing_order_id"


def test_not_wanting_the_newsletter_anymore_is_its_faq_never_a_cancel() -> None:
    got = outcome("I don't want your newsletter anymore")
    assert (got.kind, got.pairs) == ("plan", [("search_policy", None)])
    assert outcome("I don't want it anymore").kind == "clarify"


@pytest.mark.parametrize(
    "text",
    ["A1007: please ship to 4 Park Ave, Oxford", "A1007 pls deliver to 12 Mill Lane instead"],
)
def test_an_order_then_please_and_a_street_is_an_address_change(text: str) -> None:
    assert outcome(text).pairs == [("get_order_status", "A1007"), ("change_address", "A1007")]


def test_an_order_then_please_ship_to_a_country_is_no_address_change() -> None:
    assert ("change_address", "A1007") not in outcome("A1007 please ship to Canada").pairs


@pytest.mark.parametrize(
    "text",
    [
        "change the billing address on A1003 to 5 Oak St",
        "please update the billing address for A1007 to 8 Hill Rd",
        "can you update my billing address",
    ],
)
def test_a_billing_address_is_never_a_delivery_address_change(text: str) -> None:
    assert not any(tool == "change_address" for tool, _ in outcome(text).pairs)
    assert outcome(text).kind != "clarify"  # never "which order?" for it either
