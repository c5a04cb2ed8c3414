"""Staff approval's decisions (issue 14 item 6), as pure functions: who decides a call by its
amount, and what one press does (customer vs staff buttons, four eyes, rejects)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from agent_core.execution.approval import (
    Decider,
    Needed,
    StaffCheck,
    StaffRule,
    Verdict,
    amount_of,
    check_staff_press,
    judge_press,
    may_claim,
    needed_approval,
)
from agent_core.models import Pause, PromptRef, Run, RunStatus
from tests.fakes import make_run

RULE = StaffRule(staff_above=Decimal("100"), four_eyes_above=Decimal("500"))
CUSTOMER, ALICE, BOB = 10001, 900, 901
STAFF = frozenset({ALICE, BOB})


@pytest.mark.parametrize(
    ("amount", "expected"),
    [
        ("59.00", Needed(Decider.CUSTOMER)),
        ("100.00", Needed(Decider.CUSTOMER)),  # the threshold itself: still the customer's
        ("100.01", Needed(Decider.STAFF)),
        ("500.00", Needed(Decider.STAFF)),
        ("500.01", Needed(Decider.STAFF, approvals=2)),
    ],
)
def test_who_decides_by_amount(amount: str, expected: Needed) -> None:
    assert needed_approval({"order_id": "A1002", "amount": amount}, RULE) == expected


def test_without_a_rule_or_an_amount_the_customer_decides() -> None:
    assert needed_approval({"amount": "9999"}, None) == Needed(Decider.CUSTOMER)
    assert needed_approval({"order_id": "A1003"}, RULE) == Needed(Decider.CUSTOMER)
    assert needed_approval({"amount": "lots"}, RULE) == Needed(Decider.CUSTOMER)
    staff_only = StaffRule(staff_above=Decimal("0"))
    assert needed_approval({"amount": 1}, staff_only) == Needed(Decider.STAFF)


def test_amounts_are_read_exactly() -> None:
    assert amount_of({"amount": "100.10"}, "amount") == Decimal("100.10")
    assert amount_of({"amount": 59}, "amount") == Decimal(59)
    assert amount_of({"amount": True}, "amount") is None
    assert amount_of({"amount": "NaN"}, "amount") is None
    assert amount_of({}, "amount") is None


def test_four_eyes_threshold_cannot_be_below_the_staff_threshold() -> None:
    with pytest.raises(ValueError, match="four-eyes"):
        StaffRule(staff_above=Decimal("500"), four_eyes_above=Decimal("100"))


def test_customer_buttons_are_the_customers() -> None:
    needed = Needed(Decider.CUSTOMER)
    assert judge_press(needed, presser=CUSTOMER, customer=CUSTOMER, staff=STAFF, approve=True) is (
        Verdict.DECIDE_APPROVE
    )
    assert judge_press(needed, presser=ALICE, customer=CUSTOMER, staff=STAFF, approve=True) is (
        Verdict.NOT_ALLOWED
    )


def test_a_customer_cannot_press_staff_buttons_and_one_staff_member_decides() -> None:
    needed = Needed(Decider.STAFF)
    press = {"customer": CUSTOMER, "staff": STAFF}
    assert judge_press(needed, presser=CUSTOMER, approve=True, **press) is Verdict.NOT_ALLOWED
    assert judge_press(needed, presser=777, approve=True, **press) is Verdict.NOT_ALLOWED
    assert judge_press(needed, presser=ALICE, approve=True, **press) is Verdict.DECIDE_APPROVE
    assert judge_press(needed, presser=BOB, approve=False, **press) is Verdict.DECIDE_REJECT


def test_four_eyes_needs_two_distinct_staff_and_any_reject_decides() -> None:
    needed = Needed(Decider.STAFF, approvals=2)
    press = {"customer": CUSTOMER, "staff": STAFF}
    assert judge_press(needed, presser=ALICE, approve=True, **press) is Verdict.RECORD_APPROVAL
    again = judge_press(needed, presser=ALICE, approve=True, earlier_approvals=[ALICE], **press)
    assert again is Verdict.SAME_PERSON
    second = judge_press(needed, presser=BOB, approve=True, earlier_approvals=[ALICE], **press)
    assert second is Verdict.DECIDE_APPROVE
    veto = judge_press(needed, presser=BOB, approve=False, earlier_approvals=[ALICE], **press)
    assert veto is Verdict.DECIDE_REJECT
    # An approval by someone no longer on staff does not count towards the two.
    stale = judge_press(needed, presser=BOB, approve=True, earlier_approvals=[555], **press)
    assert stale is Verdict.RECORD_APPROVAL


# -- issue 20, item 4 ---------------------------------------------------------------------


def test_a_staff_member_never_decides_their_own_order() -> None:
    needed = Needed(Decider.STAFF, approvals=2)
    press = {"customer": ALICE, "staff": STAFF}
    assert judge_press(needed, presser=ALICE, approve=True, **press) is Verdict.OWN_ORDER
    assert judge_press(needed, presser=ALICE, approve=False, **press) is Verdict.OWN_ORDER
    # Four eyes: an approval recorded by the customer (a staff member) is not one of them.
    second = judge_press(needed, presser=BOB, approve=True, earlier_approvals=[ALICE], **press)
    assert second is Verdict.RECORD_APPROVAL
    assert not may_claim(ALICE, "paused", "staff", user_id=ALICE, staff=True)
    assert may_claim(ALICE, "paused", "staff", user_id=BOB, staff=True)
    assert not may_claim(CUSTOMER, "paused", "staff", user_id=BOB, staff=True, approvals=2)
    assert may_claim(
        CUSTOMER, "paused", "staff", user_id=BOB, staff=True, approvals=2, other_approvals=1
    )


T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
FORUM, PROMPT = -1005555555555, 77


def paused_run(*, bound: bool = True) -> Run:
    run = make_run([("request_refund", {"order_id": "A1002", "amount": "150"}, "refund")])
    run.status = RunStatus.PAUSED
    prompt = PromptRef(chat_id=FORUM, message_id=PROMPT) if bound else None
    run.pause = Pause(
        step_id="s1",
        nonce="nonce1",
        tool="request_refund",
        args_hash="h",
        paused_at=T0,
        prompt=prompt,
        approver="staff",
    )
    return run


@pytest.mark.parametrize(
    ("presser", "nonce", "pressed", "expected"),
    [
        (ALICE, "nonce1", (FORUM, PROMPT), StaffCheck.OK),
        (ALICE, "nonce1", (FORUM, PROMPT + 1), StaffCheck.STALE),  # another prompt
        (ALICE, "nonce1", (CUSTOMER, PROMPT), StaffCheck.STALE),
        (ALICE, "nonce2", (FORUM, PROMPT), StaffCheck.STALE),  # another pause
        (CUSTOMER, "nonce1", (FORUM, PROMPT), StaffCheck.OWN_ORDER),
        (CUSTOMER, "nonce1", (FORUM, PROMPT + 1), StaffCheck.STALE),
    ],
)
def test_a_staff_press_is_checked_against_its_message(
    presser: int, nonce: str, pressed: tuple[int, int], expected: StaffCheck
) -> None:
    check = check_staff_press(
        paused_run(), presser=presser, nonce=nonce, pressed=pressed, expires_before=T0
    )
    assert check is expected


def test_a_staff_press_on_a_gone_decided_expired_or_customers_pause() -> None:
    press = {"presser": ALICE, "nonce": "nonce1", "pressed": (FORUM, PROMPT)}
    assert check_staff_press(None, expires_before=T0, **press) is StaffCheck.NOT_FOUND
    later = T0 + timedelta(seconds=1)
    assert check_staff_press(paused_run(), expires_before=later, **press) is StaffCheck.EXPIRED
    decided = paused_run()
    assert decided.pause is not None
    decided.pause.nonce = None
    assert check_staff_press(decided, expires_before=T0, **press) is StaffCheck.HANDLED
    customers = paused_run()
    assert customers.pause is not None
    customers.pause.approver = "customer"
    assert check_staff_press(customers, expires_before=T0, **press) is StaffCheck.NOT_STAFFS
    # While no prompt is bound (a crash before it was recorded): any staff-group message.
    unbound = paused_run(bound=False)
    assert check_staff_press(unbound, expires_before=T0, **press) is StaffCheck.OK
