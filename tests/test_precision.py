"""The precision layer (issue 21): requests that must never become the action they mention.

Each case was a wrong action before: the rule planner cancelled, refunded or read an order
the customer did not ask it to. The layer only removes or narrows actions; the reads the
message does ask for stay.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_core.understanding.planner import PlanDraft, PlanRequest, Refusal, RuleBasedPlanner

HIGH_RISK = {"cancel_order", "request_return", "request_refund", "change_address"}


def plan(text: str, pattern: str | None = None) -> PlanDraft:
    planner = RuleBasedPlanner(pattern) if pattern else RuleBasedPlanner()
    return planner.draft(PlanRequest(text=text))


def pairs(draft: PlanDraft) -> list[tuple[str, str | None]]:
    return [(s.tool, s.args.get("order_id")) for s in draft.steps]


def actions(draft: PlanDraft) -> list[tuple[str, str | None]]:
    return [p for p in pairs(draft) if p[0] in HIGH_RISK]


def test_a_cyrillic_lookalike_inside_an_id_is_asked_about_never_mapped() -> None:
    draft = plan("where is A1007? cancel order А1003")  # Cyrillic А
    assert draft.refusal is Refusal.NEEDS_CLARIFICATION
    assert actions(draft) == []
    assert draft.interpretation is not None and draft.interpretation.clarify is not None
    assert "А1003" in draft.interpretation.clarify.question
    greek = plan("cancel Α1003")  # Greek Alpha
    assert greek.refusal is Refusal.NEEDS_CLARIFICATION and actions(greek) == []


@pytest.mark.parametrize("text", ["cancel order A1007 not A1003", "cancel A1007 instead of A1003"])
def test_not_x_and_instead_of_x_act_only_on_the_order_meant(text: str) -> None:
    assert pairs(plan(text)) == [("get_order_status", "A1007"), ("cancel_order", "A1007")]


@pytest.mark.parametrize(
    "text",
    [
        "算了，不取消 A1003 了",
        "请勿取消 A1003",
        "禁止取消 A1003",
        "千万别取消 A1003",
        "do NOT, under any circumstances, cancel A1003",
    ],
)
def test_negations_the_keyword_table_missed_drop_the_action(text: str) -> None:
    assert actions(plan(text)) == []


@pytest.mark.parametrize(
    "text",
    [
        "why did you cancel A1003?",
        "A1003 已经取消了吗",
        "has A1003 been cancelled?",
        "cancel A1003? no wait, just tell me where it is",
    ],
)
def test_a_question_about_what_happened_or_a_retraction_reads_the_status(text: str) -> None:
    assert pairs(plan(text)) == [("get_order_status", "A1003")]


def test_should_i_is_a_question_about_the_policy() -> None:
    draft = plan("should I cancel A1003?")
    assert pairs(draft) == [("get_order_status", "A1003"), ("search_policy", None)]


def test_just_kidding_takes_the_action_back() -> None:
    assert actions(plan("cancel A1003 just kidding")) == []


def test_a_polite_prefix_is_no_negation() -> None:
    """A bare 不 negates only right before the verb: "不好意思" is "excuse me"."""
    assert actions(plan("不好意思，取消A1003")) == [("cancel_order", "A1003")]


@pytest.mark.parametrize(
    "text",
    [
        "refund 1e9 for order A1002",
        "refund 1,000 for order A1002",
        "refund 59,00 for A1002",
        "refund 5 9 for A1002",
    ],
)
def test_an_amount_not_written_plainly_is_asked_about(text: str) -> None:
    draft = plan(text)
    assert draft.refusal is Refusal.NEEDS_CLARIFICATION
    assert actions(draft) == []


def test_a_plain_amount_is_read_as_written() -> None:
    draft = plan("refund 59.00 for A1002")
    assert [s.args.get("amount") for s in draft.steps if s.tool == "request_refund"] == ["59.00"]


def test_a_digits_only_id_is_never_read_from_inside_an_amount() -> None:
    draft = plan("refund 120.50 for order 734", pattern=r"\d{3,6}")
    assert actions(draft) == [("request_refund", "734")]
    assert [s.args.get("amount") for s in draft.steps if s.tool == "request_refund"] == ["120.50"]
    assert actions(plan("refund $734 for order 120", pattern=r"\d{3,6}")) == [
        ("request_refund", "120")
    ]


def test_somebody_elses_wish_is_a_question_not_a_request() -> None:
    """ "my friend wants to cancel B2001": the order's status and the policy, no action."""
    for text in ("my friend wants to cancel B2001", "我朋友想取消 B2001"):
        draft = plan(text)
        assert pairs(draft) == [("get_order_status", "B2001"), ("search_policy", None)]


def test_ask_json_never_cancels_the_wrong_order(tmp_path: Path) -> None:
    """The same at the CLI: the run asks about "А1003" and no step runs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPWISE_", "TELEGRAM_"))}
    env["STEPWISE_DB"] = str(tmp_path / "stepwise.db")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "stepwise",
            "ask",
            "where is A1007? cancel order А1003",
            "--user",
            "10001",
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    out = json.loads(proc.stdout)
    assert out["status"] == "needs_clarification", out
    assert out["steps"] == []


@pytest.mark.parametrize(
    "text",
    [
        "A1002 退货不需要了",
        "A1002 退货不要了",
        "A1003 取消不要了",
        "A1002 退款就不用了，看看到哪了",
        "is cancellation of A1003 free?",
        "what does cancelling A1003 cost?",
    ],
)
def test_an_action_taken_back_after_it_or_only_asked_about_is_not_done(text: str) -> None:
    """Chinese often negates after the verb; a question about what an action costs is a
    question."""
    assert actions(plan(text)) == []


@pytest.mark.parametrize(
    ("text", "order"),
    [
        ("requesting cancelation of A1007", "A1007"),
        ("I'm cancelling A1003, please process it", "A1003"),
        ("A1003 不要了", "A1003"),
        ("A1007 退单", "A1007"),
    ],
)
def test_a_cancel_in_other_words_is_still_a_cancel(text: str, order: str) -> None:
    assert actions(plan(text)) == [("cancel_order", order)]
