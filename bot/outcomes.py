"""What staff read about a staff-approved step, before and after it ran (English, HTML).

A staff member who pressed Approve must learn what the shop then did: the prompt they
pressed is edited once more to the outcome ("✅ approved by Sam, refunded 59.00" or "⚠️
approved by Sam, the shop refused: only 29.00 left to refund"), never left at "approved"
when the change failed. Before they decide, a refund's prompt says what was already
refunded on the order, read from the observations the run already has (its status step),
so nobody approves blind to an earlier refund.
"""

from __future__ import annotations

import html
from decimal import Decimal, InvalidOperation
from typing import Any

from agent_core.answers.compose import Catalog
from agent_core.catalog.builtin import (
    CANCEL_ORDER,
    CATALOG,
    CHANGE_ADDRESS,
    REQUEST_REFUND,
    REQUEST_RETURN,
)
from agent_core.catalog.spec import fill
from agent_core.models import ErrorType, Language, PlanStep, Run, StepStatus

# The refusal code whose staff wording is computed from the order's figures.
AMOUNT_TOO_HIGH = "amount_too_high"


def order_figures(run: Run, order_id: str) -> tuple[Decimal, Decimal] | None:
    """(paid, already refunded) of `order_id` as the run's own steps observed them (the
    latest read wins), or None when no step read both."""
    found: tuple[Decimal, Decimal] | None = None
    for step in run.steps:
        seen = step.observation
        if step.status is not StepStatus.DONE or not isinstance(seen, dict):
            continue
        if str(seen.get("order_id", "")).upper() != order_id.upper():
            continue
        paid, refunded = _money(seen.get("amount_paid")), _money(seen.get("refunded"))
        if paid is not None and refunded is not None:
            found = (paid, refunded)
    return found


def refund_context(run: Run, step: PlanStep) -> str | None:
    """The line a refund's approval prompt adds: what the order already got back."""
    if step.tool != REQUEST_REFUND.name:
        return None
    order_id = str(step.args.get("order_id") or "")
    figures = order_figures(run, order_id) if order_id else None
    if figures is None:
        return None
    paid, refunded = figures
    if refunded <= 0:
        return f"Nothing refunded on {html.escape(order_id)} yet (paid {paid:.2f})."
    left = max(paid - refunded, Decimal(0))
    return (
        f"Already refunded on {html.escape(order_id)}: <b>{refunded:.2f}</b> of {paid:.2f} "
        f"paid, {left:.2f} left."
    )


def staff_outcome_text(run: Run, step_id: str, who: str, catalog: Catalog = CATALOG) -> str | None:
    """The approved step's outcome for the staff prompt (`who` already HTML-escaped), or
    None while the step has not ended (the prompt then keeps saying who approved)."""
    step = run.step(step_id)
    if step.status is StepStatus.DONE:
        return f"✅ approved by {who}, {html.escape(_done(step))}"
    if step.status is not StepStatus.FAILED or step.error is None:
        return None
    error = step.error
    if error.type is ErrorType.UNKNOWN_OUTCOME:
        return (
            f"⚠️ approved by {who}, but the shop gave no clear answer: check at the shop "
            "whether it happened before doing it again"
        )
    if error.type is ErrorType.INVALID_ARGUMENTS:
        why = _refusal(run, step, catalog)
        return f"⚠️ approved by {who}, the shop refused: {html.escape(why)}"
    what = {
        ErrorType.TIMEOUT: "the shop did not answer in time",
        ErrorType.UNAVAILABLE: "the shop was unavailable",
        ErrorType.NOT_FOUND: "the shop does not know this order",
        ErrorType.PERMISSION_DENIED: "the order is not this customer's",
    }.get(error.type, f"it failed ({error.type.value})")
    return f"⚠️ approved by {who}, not done: {what}"


def _done(step: PlanStep) -> str:
    """What the shop did, in a few words, from the step's result (its arguments else)."""
    seen: dict[str, Any] = step.observation if isinstance(step.observation, dict) else {}
    order_id = str(seen.get("order_id") or step.args.get("order_id") or "")
    if step.tool == REQUEST_REFUND.name:
        amount = _money(seen.get("amount")) or _money(step.args.get("amount"))
        shown = f"{amount:.2f}" if amount is not None else "the amount asked"
        if str(seen.get("money_moved", "")).lower() == "false":
            return f"refund of {shown} recorded; no money moved, pay it back at the shop"
        return f"refunded {shown}"
    done = {
        CANCEL_ORDER.name: f"cancelled {order_id}",
        REQUEST_RETURN.name: f"return requested for {order_id}",
        CHANGE_ADDRESS.name: f"address of {order_id} changed",
    }
    return done.get(step.tool, f"done: {step.goal}")


def _refusal(run: Run, step: PlanStep, catalog: Catalog) -> str:
    """Why the shop refused, for staff: the figure that decided it when the run read it,
    the catalog's own (English) refusal text otherwise."""
    code = step.error.code if step.error is not None else None
    order_id = str(step.args.get("order_id") or "")
    if code == AMOUNT_TOO_HIGH and order_id:
        figures = order_figures(run, order_id)
        if figures is not None:
            paid, refunded = figures
            return f"only {max(paid - refunded, Decimal(0)):.2f} left to refund"
    spec = catalog.get(step.tool)
    refusal = None
    if spec is not None:
        refusal = spec.refusals.get(code or "") or spec.refusals.get("")
    if refusal is not None and spec is not None:
        text = fill(refusal[Language.EN], spec.display_args(step.args), missing="")
        if text:
            return text.rstrip(".")
    return code or (step.error.message if step.error is not None else "refused")


def _money(value: object) -> Decimal | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None
