"""Recognition over the declared examples (issue 21): how customers really write.

The phrasings here are the issue's own (word forms, typos, synonyms, "can u"); none of
them is an example in intents.toml verbatim unless said. The planner is the real one.
"""

from __future__ import annotations

import pytest

from agent_core.understanding.planner import PlanDraft, PlanRequest, Refusal, RuleBasedPlanner
from agent_core.understanding.recognition.intents import Kind, load

HIGH_RISK = {"cancel_order", "request_return", "request_refund", "change_address"}


def plan(text: str, last: str | None = None) -> PlanDraft:
    return RuleBasedPlanner().draft(PlanRequest(text=text, last_order_id=last))


def pairs(draft: PlanDraft) -> list[tuple[str, str | None]]:
    return [(s.tool, s.args.get("order_id")) for s in draft.steps]


def queries(draft: PlanDraft) -> list[str]:
    return [s.args["query"] for s in draft.steps if s.tool == "search_policy"]


def test_every_intent_is_declared_with_examples_in_both_languages() -> None:
    intents = load()
    kinds = {i.kind for i in intents}
    assert kinds == set(Kind)
    for intent in intents:
        assert 5 <= len(intent.examples.en) <= 15, intent.key
        assert 5 <= len(intent.examples.zh) <= 15, intent.key
    names = {i.name for i in intents if i.kind is Kind.TOOL}
    assert names == {
        "get_order_status", "track_parcel", "cancel_order", "request_return",
        "request_refund", "change_address",
    }  # fmt: skip


@pytest.mark.parametrize(
    "text", ["can you help me canceling purchase A1003?", "can u cancel A1003"]
)
def test_word_forms_and_shorthand_of_a_cancel(text: str) -> None:
    assert pairs(plan(text)) == [("get_order_status", "A1003"), ("cancel_order", "A1003")]


def test_a_typo_repaired_action_is_offered_not_done() -> None:
    """ "cancdling my ordedr A1003": recognised, but a repaired typo is not enough to act
    on: the cancel is the first button."""
    draft = plan("cancdling my ordedr A1003")
    assert [p for p in pairs(draft) if p[0] in HIGH_RISK] == []
    clarify = draft.interpretation.clarify if draft.interpretation else None
    assert clarify is not None
    assert clarify.options[0].text == "cancel order A1003"


@pytest.mark.parametrize("text", ["cancelling", "cancelation please", "cancel"])
def test_a_bare_cancel_asks_which_order(text: str) -> None:
    draft = plan(text)
    assert draft.refusal in (Refusal.NEEDS_CLARIFICATION, None)
    assert [p for p in pairs(draft) if p[0] in HIGH_RISK] == []


@pytest.mark.parametrize(
    "text", ["reimbursement", "money back", "get my money returned", "I want reimbursement"]
)
def test_refund_in_other_words_asks_which_order(text: str) -> None:
    draft = plan(text)
    assert draft.refusal is Refusal.NEEDS_CLARIFICATION
    clarify = draft.interpretation.clarify if draft.interpretation else None
    assert clarify is not None and "refund" in clarify.question


@pytest.mark.parametrize(
    "text",
    [
        "speak with somebody",
        "talk to someone",
        "an operator",
        "a representative",
        "a human being",
        "找客服",
    ],
)
def test_a_person_in_any_words(text: str) -> None:
    assert plan(text).refusal is Refusal.HANDOFF


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("where's my bill?", "invoices"),
        ("early termination penalty", "cancellation fee"),
        ("I want to cancel my newsletter subscription", "newsletter"),
        ("do you accept paypal", "payment methods"),
        ("do you ship to Toronto?", "countries"),
        ("how long does delivery take", "delivery times"),
        ("how do I delete my account", "account"),
        ("钱多久能退回来", "退款到账"),
        ("怎么开发票", "发票"),
    ],
)
def test_a_question_the_faq_answers_is_one_policy_step(text: str, query: str) -> None:
    draft = plan(text)
    assert pairs(draft) == [("search_policy", None)]
    assert queries(draft) == [query]


@pytest.mark.parametrize(
    ("text", "topic"),
    [
        ("delete my account", "account"),
        ("I want to buy 2 of these", "place_order"),
        ("I want to complain about your staff", "complaint"),
        ("帮我注销账号", "account"),
    ],
)
def test_a_request_no_tool_serves_is_named_by_its_topic(text: str, topic: str) -> None:
    draft = plan(text)
    assert draft.refusal is Refusal.UNSUPPORTED and draft.steps == []
    assert draft.interpretation is not None
    assert draft.interpretation.unsupported_topics == [topic]


@pytest.mark.parametrize("text", ["what can you do?", "help", "hello", "asdfgh", "你能做什么"])
def test_nothing_to_act_on_ends_with_choices(text: str) -> None:
    draft = plan(text)
    interp = draft.interpretation
    assert draft.refusal is Refusal.NEEDS_CLARIFICATION and draft.steps == []
    assert interp is not None and interp.choices and interp.clarify is not None
    assert 1 <= len(interp.clarify.options) <= 4


def test_a_choice_pressed_continues_as_if_written() -> None:
    options = plan("asdfgh").interpretation.clarify.options  # type: ignore[union-attr]
    assert [o.label for o in options] == [
        "Track an order", "Cancel an order", "Refund", "Talk to a person",
    ]  # fmt: skip
    assert plan(options[3].text).refusal is Refusal.HANDOFF
    pressed = plan(options[1].text)  # "cancel my order": which order?
    assert pressed.refusal is Refusal.NEEDS_CLARIFICATION and not pressed.steps


def test_a_negated_request_is_never_offered_as_a_button() -> None:
    draft = plan("不要再给我退款")
    clarify = draft.interpretation.clarify if draft.interpretation else None
    labels = [o.label for o in clarify.options] if clarify else []
    assert "退款" not in labels and "取消订单" not in labels


@pytest.mark.parametrize(
    ("word", "read"),
    [
        ("doyoushiptocanada", "do you ship to canada"),  # a name no list has, at the end
        ("whatpaymentmethodsdoyouaccept", "what payment methods do you accept"),
        ("deletemyaccount", "delete my account"),
        ("understanding", "understanding"),  # a real word stays whole
        ("tomorrow", "tomorrow"),
    ],
)
def test_a_run_on_question_is_read_as_its_words(word: str, read: str) -> None:
    from agent_core.understanding.recognition.normalise import split_run_on

    assert split_run_on(word) == read


@pytest.mark.parametrize(
    "text",
    [
        "how do I reset my password, and can I get invoices for my orders?",
        "is cancelling free, and how long does the refund take after?",
    ],
)
def test_two_faq_questions_in_one_message_are_two_policy_steps(text: str) -> None:
    assert [t for t, _ in pairs(plan(text))] == ["search_policy", "search_policy"]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        # a missing item, not a new address (round 4: it was an address change)
        ("forgot to put the charger in A1007, it should be in there too", []),
        ("who changed the address on A1003", []),
        ("wrong address on A1003, it should be 19 Castle St, Edinburgh", ["change_address"]),
    ],
)
def test_an_address_change_needs_an_address_asked_for(text: str, want: list[str]) -> None:
    assert [t for t, _ in pairs(plan(text)) if t in HIGH_RISK] == want
