"""The plan and everything written back to it.

A run is the unit the customer sees: their request, the plan made from it, and what each
step observed. Every model here round-trips through JSON losslessly, because a paused run
must survive a restart.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_core.interpretation import Clarification, Interpretation


def utcnow() -> datetime:
    return datetime.now(UTC)


class Language(StrEnum):
    ZH = "zh"
    EN = "en"


class StepStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    SKIPPED = "skipped"
    FAILED = "failed"
    PAUSED = "paused"
    FALLBACK = "fallback"
    CANCELLED = "cancelled"


class RunStatus(StrEnum):
    RUNNING = "running"
    PAUSED = "paused"
    COMPLETED = "completed"
    FAILED = "failed"
    # The customer declined a paused step, so nothing was changed. (Not "cancelled": staff
    # read that as "the order was cancelled".)
    DECLINED = "declined"
    # Legacy: what a declined run was called before; a migration rewrote those runs to
    # `declined`, and nothing ends a run this way any more.
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    # The target of an action was unclear: the run asked the customer and did nothing.
    NEEDS_CLARIFICATION = "needs_clarification"


TERMINAL_RUN_STATUSES = frozenset(
    {
        RunStatus.COMPLETED,
        RunStatus.FAILED,
        RunStatus.DECLINED,
        RunStatus.CANCELLED,
        RunStatus.EXPIRED,
        RunStatus.NEEDS_CLARIFICATION,
    }
)


class ErrorType(StrEnum):
    INVALID_ARGUMENTS = "invalid_arguments"
    UNKNOWN_TOOL = "unknown_tool"
    NOT_FOUND = "not_found"
    TIMEOUT = "timeout"
    PERMISSION_DENIED = "permission_denied"
    CONFIRMATION_REQUIRED = "confirmation_required"
    EMPTY_RESULT = "empty_result"
    # Transient upstream trouble (5xx, connection refused); the policy treats it like timeout.
    UNAVAILABLE = "unavailable"
    # A tool raised something it did not declare; never retried, never shown raw to customers.
    INTERNAL = "internal"
    # A change that may have reached a backend which ignores idempotency keys, and whose
    # reconcile read could not tell whether it happened: never sent again, staff check it.
    UNKNOWN_OUTCOME = "unknown_outcome"
    # The shop's own system is broken, not the customer's request: its credentials were
    # refused (401, or a code the tools file maps to "backend"), it kept failing (5xx)
    # after every retry, or its answer broke the contract. Never "not found" to the
    # customer; the run is flagged and the staff group alerted (`bot.alerts`).
    BACKEND = "backend"


# The code of an `unavailable` failure that was the backend's own server error (a 5xx): when
# the retries run out it is a `backend` failure, not a busy moment (`agent_core.execution.executor`).
SERVER_ERROR_CODE = "server_error"


class StepTag(StrEnum):
    """Why a step is in the plan; observation rules key on it."""

    ORDER_STATUS = "order_status"
    DELAY_COMPENSATION = "delay_compensation"  # only wanted while the order is not delivered
    POLICY = "policy"
    CANCEL = "cancel"
    # The catalog's other tools (issue 12); a tool declared only in TOML is READ or ACTION.
    TRACK = "track"
    RETURN = "return"
    REFUND = "refund"
    ADDRESS = "address"
    READ = "read"
    ACTION = "action"


class ClaimResult(StrEnum):
    """What a press on Confirm/Cancel came to (storage decides it in one transaction)."""

    OK = "ok"
    NOT_FOUND = "not_found"
    NOT_ALLOWED = "not_allowed"  # someone other than the customer who asked
    ALREADY_HANDLED = "already_handled"  # a second press, or the run moved on
    STALE = "stale"  # a nonce that is not the current pause's (forged or outdated)
    EXPIRED = "expired"


class Decision(StrEnum):
    RETRY = "retry"
    FALLBACK = "fallback"
    PAUSE = "pause"
    STOP = "stop"
    # A change that may have happened at a backend that ignores idempotency keys: a read
    # decides whether it did before anything is sent again (`agent_core.execution.policy`).
    RECONCILE = "reconcile"


class Risk(StrEnum):
    READ = "read"
    HIGH = "high"


class Idempotency(StrEnum):
    """What a side-effecting tool's backend does with the `Idempotency-Key` it is sent.

    `honoured`: a second request with the same key replays the first outcome (the demo
    shop's ledger), so a retry is safe. `ignored`: a second request acts again (WooCommerce
    and most shop APIs), so a request that may have arrived is reconciled, never re-sent
    blindly. Unknown means ignored: that assumption can cost a retry, never a second refund.
    """

    HONOURED = "honoured"
    IGNORED = "ignored"


class ToolOk(BaseModel):
    model_config = ConfigDict(frozen=True)

    ok: Literal[True] = True
    data: Any
    # What was done to the result before anyone sees it (values clipped to their bounds).
    notes: tuple[str, ...] = ()


class ToolError(BaseModel):
    model_config = ConfigDict(frozen=True)

    ok: Literal[False] = False
    error_type: ErrorType
    message: str
    # Why, as a word the catalog can explain to the customer (a refusal's reason such as
    # "window_closed", or "argument:amount" for a bad argument); None when there is none.
    code: str | None = None
    # The request may have reached the backend and been carried out (a read timeout, a
    # connection lost after sending, a 5xx): for a backend that ignores idempotency keys,
    # sending it again could do it twice. False when it surely was not (a refused
    # connection, a 4xx, a check before the change that failed).
    may_have_happened: bool = False


ToolResult = Annotated[ToolOk | ToolError, Field(discriminator="ok")]


class StepError(BaseModel):
    """The structured error of a step, as stored and shown to staff."""

    type: ErrorType
    message: str
    code: str | None = None


class Approval(BaseModel):
    """The customer's answer to a paused step: who decided, what, and when."""

    approved: bool
    by_user_id: int
    at: datetime


class PlanStep(BaseModel):
    id: str
    goal: str
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    # Why the planner put this step here; observation rules key on it.
    tag: StepTag | None = None
    status: StepStatus = StepStatus.PENDING
    observation: Any = None
    error: StepError | None = None
    skip_reason: str | None = None
    fallback_reason: str | None = None
    pause_reason: str | None = None
    retry_count: int = 0
    max_retries: int = 2
    approval: Approval | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    # The earlier steps (ids) this one needs (`agent_core.execution.dependencies`): a
    # failure stops only the steps that depend on it. None: not declared (a run planned
    # before steps said it), so a failure stops the whole run, as it used to.
    depends_on: list[str] | None = None

    def args_hash(self) -> str:
        """A digest of exactly what the customer is asked to approve."""
        canonical = json.dumps(
            {"tool": self.tool, "args": self.args}, sort_keys=True, ensure_ascii=False
        )
        return hashlib.sha256(canonical.encode()).hexdigest()


class PromptRef(BaseModel):
    """The message that shows a pause's buttons (an adapter's chat and message ids)."""

    model_config = ConfigDict(frozen=True)

    chat_id: int
    message_id: int


class Pause(BaseModel):
    """What an open confirmation is bound to. The nonce goes into the buttons."""

    step_id: str
    # None once a decision has claimed this pause: nothing can approve it again.
    nonce: str | None
    tool: str
    args_hash: str
    paused_at: datetime
    # The prompt message that was delivered for it (set by the adapter once shown): a
    # press counts only on that message, not when its data is replayed onto another one.
    prompt: PromptRef | None = None
    # Who decides (issue 14): "customer", or "staff" (above the staff approval amount;
    # the customer cannot press it, `agent_core.execution.approval`).
    approver: str = "customer"


class Run(BaseModel):
    id: str
    trace_id: str
    user_id: int
    chat_id: int
    request_text: str
    language: Language
    status: RunStatus = RunStatus.RUNNING
    steps: list[PlanStep] = Field(default_factory=list)
    # Set when the planner could not make a plan (no order id, unsupported request).
    refusal: str | None = None
    # What the planner understood (issue 13); None for runs planned before it existed.
    interpretation: Interpretation | None = None
    pause: Pause | None = None
    attempts: int = 0
    max_attempts: int = 10
    stop_reason: str | None = None
    answer: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None

    def step(self, step_id: str) -> PlanStep:
        for step in self.steps:
            if step.id == step_id:
                return step
        raise KeyError(step_id)

    def next_step(self) -> PlanStep | None:
        """The one step to act on now: an interrupted or pending one, in plan order."""
        for step in self.steps:
            if step.status in (StepStatus.RUNNING, StepStatus.PENDING, StepStatus.PAUSED):
                return step
        return None

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_RUN_STATUSES

    @property
    def unsupported(self) -> list[str]:
        return list(self.interpretation.unsupported) if self.interpretation else []

    @property
    def clarify(self) -> Clarification | None:
        return self.interpretation.clarify if self.interpretation else None

    def end_without_steps(self) -> RunStatus:
        """How a run the planner gave no steps ends: a question, a stop, or answered."""
        if self.refusal == "needs_clarification":
            return RunStatus.NEEDS_CLARIFICATION
        if self.refusal in ("unknown_tool", "invalid_arguments"):
            return RunStatus.FAILED
        return RunStatus.COMPLETED

    @property
    def order_id(self) -> str | None:
        for step in self.steps:
            value = step.args.get("order_id")
            if isinstance(value, str):
                return value
        return None


class EventKind(StrEnum):
    RUN_PLANNED = "run_planned"
    STEP_STARTED = "step_started"
    STEP_RETRYING = "step_retrying"
    STEP_SUCCEEDED = "step_succeeded"
    STEP_FAILED = "step_failed"
    STEP_FALLBACK = "step_fallback"
    STEP_SKIPPED = "step_skipped"
    STEP_PAUSED = "step_paused"
    # The customer's press, claimed atomically by storage; the executor then applies it.
    DECISION_CLAIMED = "decision_claimed"
    STEP_APPROVED = "step_approved"
    STEP_DECLINED = "step_declined"
    RUN_FINISHED = "run_finished"
    # Something outside the plan worth keeping for staff.
    NOTICE = "notice"
    # A read decided whether a change that may have reached the backend happened (its
    # verdict is the message): see `agent_core.execution.policy.Verdict`.
    STEP_RECONCILED = "step_reconciled"
    # Facts an adapter learns after a transition and needs again after a restart: the
    # Confirm/Cancel prompt reached the customer; the customer has blocked the bot.
    PROMPT_SHOWN = "prompt_shown"
    CUSTOMER_BLOCKED = "customer_blocked"
    # The customer answered a clarifying question (pressed an option, or typed its number).
    CLARIFY_ANSWERED = "clarify_answered"
    # Delivered marks (issue 15 #4): the plan message and the final answer (a clarifying
    # question included) reached the customer. With `prompt_shown` they tell a restart what
    # was committed but never delivered (`storage.leases`).
    PLAN_SHOWN = "plan_shown"
    ANSWER_DELIVERED = "answer_delivered"


class RunEvent(BaseModel):
    """One transition of a run; the append-only history staff review and replay."""

    kind: EventKind
    run_id: str
    trace_id: str
    step_id: str | None = None
    tool: str | None = None
    attempt: int | None = None
    status: str | None = None
    error_type: ErrorType | None = None
    decision: Decision | None = None
    delay_s: float | None = None
    message: str | None = None
    at: datetime = Field(default_factory=utcnow)
