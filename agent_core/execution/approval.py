"""Who must approve a high-risk call, and what one press on its buttons decides (issue 14,
item 6: staff approval). Pure decisions only, not wired into the executor yet.

A high-risk call waits for its customer's Confirm today. Staff approval adds two rules,
both keyed on an amount argument of the call (`request_refund`'s `amount`):

* above `staff_above`, staff approve instead of the customer (the customer is told they
  are waiting for our team, and cannot press the staff buttons);
* above `four_eyes_above`, two distinct staff members must approve; a reject by any one
  of them decides at once.

`needed_approval` says who decides a call; `judge_press` what one press does, given the
approvals already recorded for this pause. The store's conditional update remains the one
place a decision is taken (nonce, expiry, tool and arguments as for the customer's
Confirm); these functions say which update to attempt.

Deliberately separate from `agent_core.catalog.spec.Approver`: adding a "staff" value there would
let a tools file declare staff approval before the executor enforces it, i.e. a customer
could confirm what staff were meant to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from typing import Any

from agent_core.models import Run, RunStatus


class Decider(StrEnum):
    CUSTOMER = "customer"
    STAFF = "staff"


@dataclass(frozen=True)
class StaffRule:
    """The thresholds (None: never) and which argument is the amount."""

    staff_above: Decimal | None = None
    four_eyes_above: Decimal | None = None
    amount_arg: str = "amount"

    def __post_init__(self) -> None:
        if (
            self.staff_above is not None
            and self.four_eyes_above is not None
            and self.four_eyes_above < self.staff_above
        ):
            raise ValueError("the four-eyes threshold cannot be below the staff threshold")


@dataclass(frozen=True)
class Needed:
    decider: Decider
    approvals: int = 1  # distinct approvals needed (2: four eyes)


def amount_of(args: Mapping[str, Any], name: str) -> Decimal | None:
    """The call's amount, or None when it has none (or one that is not a number)."""
    value = args.get(name)
    if value is None or isinstance(value, bool):
        return None
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        return None
    return amount if amount.is_finite() else None


def needed_approval(args: Mapping[str, Any], rule: StaffRule | None) -> Needed:
    """Who decides a high-risk call with `args`. Strictly above a threshold: a refund of
    exactly the threshold is still the customer's to confirm."""
    if rule is None:
        return Needed(Decider.CUSTOMER)
    amount = amount_of(args, rule.amount_arg)
    if amount is None or rule.staff_above is None or amount <= rule.staff_above:
        return Needed(Decider.CUSTOMER)
    if rule.four_eyes_above is not None and amount > rule.four_eyes_above:
        return Needed(Decider.STAFF, approvals=2)
    return Needed(Decider.STAFF)


class Verdict(StrEnum):
    """What one press does."""

    DECIDE_APPROVE = "decide_approve"  # claim the pause as approved
    DECIDE_REJECT = "decide_reject"  # claim the pause as rejected
    RECORD_APPROVAL = "record_approval"  # four eyes: a first approval, wait for another
    NOT_ALLOWED = "not_allowed"  # not this presser's to decide
    SAME_PERSON = "same_person"  # four eyes: this staff member approved already
    OWN_ORDER = "own_order"  # a staff member's own order: never theirs to approve (issue 20)


def judge_press(
    needed: Needed,
    *,
    presser: int,
    customer: int,
    staff: frozenset[int],
    approve: bool,
    earlier_approvals: Sequence[int] = (),
) -> Verdict:
    """What a press on a pause's buttons does. `earlier_approvals`: the staff members who
    approved this pause already (four eyes)."""
    if needed.decider is Decider.CUSTOMER:
        if presser != customer:
            return Verdict.NOT_ALLOWED
        return Verdict.DECIDE_APPROVE if approve else Verdict.DECIDE_REJECT
    if presser not in staff:  # the customer included: staff buttons are staff's
        return Verdict.NOT_ALLOWED
    if presser == customer:  # a staff member who is this run's customer decides nothing
        return Verdict.OWN_ORDER
    if not approve:
        return Verdict.DECIDE_REJECT
    if presser in earlier_approvals:
        return Verdict.SAME_PERSON
    # Four eyes: distinct staff members, neither of them the customer.
    distinct = len((set(earlier_approvals) & staff) - {customer}) + 1
    if distinct >= needed.approvals:
        return Verdict.DECIDE_APPROVE
    return Verdict.RECORD_APPROVAL


def may_claim(
    owner: int,
    status: str,
    approver: str | None,
    *,
    user_id: int,
    staff: bool,
    approvals: int = 1,
    other_approvals: int = 0,
) -> bool:
    """Whether a lost claim lost because the pause was not the caller's to decide (the
    store's explanation of a lost claim): a customer's pause is its run's customer's, a
    staff pause staff's, but never the staff member's own order (issue 20). Staff may
    learn what became of any other run (status not paused). `approvals` > 1 (four eyes):
    the claim completes that many approvals, so `other_approvals` (recorded on this pause
    by other staff members, not the customer) must make up the rest."""
    if staff:
        if int(owner) == user_id:
            return False
        if status == "paused" and other_approvals < approvals - 1:
            return False
        return (approver or Decider.CUSTOMER) == Decider.STAFF or status != "paused"
    return int(owner) == user_id and (approver or Decider.CUSTOMER) == Decider.CUSTOMER


def pressed_on_the_prompt(
    bound: tuple[int | None, int | None],
    run_chat_id: int,
    approver: str | None,
    pressed: tuple[int, int],
) -> bool:
    """Whether a press on message `pressed` (chat id, message id) counts for a pause whose
    prompt is bound to `bound`: on that message; or, while none is bound (the process died
    between sending the prompt and recording it; the customer presses the one they have),
    on a message in the run's chat, or in the staff group for a staff pause. The claim's
    SQL says the same in both stores; this explains a lost claim (STALE otherwise)."""
    if bound[1] is not None:
        return bound == pressed
    return pressed[0] == run_chat_id or (approver or Decider.CUSTOMER) == Decider.STAFF


class StaffCheck(StrEnum):
    """What a staff member's press on a staff prompt may do before anything is shown or
    recorded (issue 20): the reason buttons after Reject, a four-eyes first approval."""

    OK = "ok"
    NOT_FOUND = "not_found"  # no such run
    NOT_STAFFS = "not_staffs"  # a customer's pause: not staff's to decide
    HANDLED = "handled"  # decided already, or the run moved on
    STALE = "stale"  # another pause's nonce, or pressed on another message
    OWN_ORDER = "own_order"  # the presser is the run's customer
    EXPIRED = "expired"  # past its time: the claim closes it


def check_staff_press(
    run: Run | None,
    *,
    presser: int,
    nonce: str,
    pressed: tuple[int, int],
    expires_before: datetime,
) -> StaffCheck:
    """Whether a staff press with `nonce` on message `pressed` belongs to `run`'s open
    staff pause: the same conditions as the claim's conditional update (run, pause by its
    nonce, the message its prompt is bound to, expiry), plus: not the presser's own order.
    The writes that follow (a first approval, the claim) check them again in their one
    conditional statement; this says what to show, and why nothing happened."""
    if run is None:
        return StaffCheck.NOT_FOUND
    pause = run.pause
    if pause is None or run.status is not RunStatus.PAUSED or pause.nonce is None:
        return StaffCheck.HANDLED
    if (pause.approver or Decider.CUSTOMER) != Decider.STAFF:
        return StaffCheck.NOT_STAFFS
    if pause.nonce != nonce:
        return StaffCheck.STALE
    bound = (pause.prompt.chat_id, pause.prompt.message_id) if pause.prompt else (None, None)
    if not pressed_on_the_prompt(bound, run.chat_id, pause.approver, pressed):
        return StaffCheck.STALE
    if run.user_id == presser:
        return StaffCheck.OWN_ORDER
    if pause.paused_at < expires_before:
        return StaffCheck.EXPIRED
    return StaffCheck.OK
