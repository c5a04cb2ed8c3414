"""What to do when a tool fails: the seed's table, as data.

Only transient failures are retried, a bounded number of times, with exponential backoff
and jitter. Empty results degrade honestly, confirmations pause, everything else stops.

Exactly-once for writes (issue 20)
----------------------------------
A retry is only harmless when the backend honours the `Idempotency-Key` (it replays the
first outcome). Most shop APIs ignore it: a refund that WooCommerce makes but answers after
the timeout would be made twice by a retry. So a change that *may have happened*
(`ToolError.may_have_happened`: a read timeout, a connection lost after sending, a 5xx) at a
backend that ignores keys is never retried blindly (`reconciles`): a declared read
decides first (`Verdict`), and `RECONCILED` says what each verdict leads to. A failure that
surely did not reach the backend (a refused connection, a failed check before the change)
is retried as before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from agent_core.models import Decision, ErrorType, Idempotency, Risk

DEFAULT_TABLE: Mapping[ErrorType, Decision] = MappingProxyType(
    {
        ErrorType.TIMEOUT: Decision.RETRY,
        ErrorType.UNAVAILABLE: Decision.RETRY,
        ErrorType.EMPTY_RESULT: Decision.FALLBACK,
        ErrorType.CONFIRMATION_REQUIRED: Decision.PAUSE,
        ErrorType.NOT_FOUND: Decision.STOP,
        ErrorType.INVALID_ARGUMENTS: Decision.STOP,
        ErrorType.UNKNOWN_TOOL: Decision.STOP,
        ErrorType.PERMISSION_DENIED: Decision.STOP,
        ErrorType.INTERNAL: Decision.STOP,
        ErrorType.UNKNOWN_OUTCOME: Decision.STOP,
        ErrorType.BACKEND: Decision.STOP,
    }
)


class Verdict(StrEnum):
    """What the reconcile read of a change that may have happened found."""

    HAPPENED = "happened"  # the change is there: the step is done with what the read saw
    NOT_HAPPENED = "not_happened"  # it is not: sending it (again) cannot do it twice
    UNDECIDED = "undecided"  # the read failed too, or no read is declared: nobody knows


class AfterReconcile(StrEnum):
    """What a verdict leads to."""

    DONE = "done"  # the step succeeds with the read's observation; nothing is sent
    RETRY = "retry"  # the step is sent again (its retry budget permitting)
    STOP = "stop"  # not there and no retries left: the step stops with its own error
    # Stop without sending: the customer is told it is being checked, staff are flagged.
    UNKNOWN_OUTCOME = "unknown_outcome"


RECONCILED: Mapping[Verdict, AfterReconcile] = MappingProxyType(
    {
        Verdict.HAPPENED: AfterReconcile.DONE,
        Verdict.NOT_HAPPENED: AfterReconcile.RETRY,
        Verdict.UNDECIDED: AfterReconcile.UNKNOWN_OUTCOME,
    }
)


def reconciles(*, risk: Risk, idempotency: Idempotency, may_have_happened: bool) -> bool:
    """Whether a failed attempt must be reconciled instead of decided by the table.

    Only a change (high risk) can happen twice; a backend that honours the key replays the
    first outcome, so its retry is safe; a failure that never reached the backend changed
    nothing. This holds whatever the table or the retry budget says: a timeout on the last
    retry is reconciled too, or the customer would be told "failed" about a refund that
    was made.
    """
    return risk is Risk.HIGH and idempotency is Idempotency.IGNORED and may_have_happened


def after_reconcile(verdict: Verdict, *, retry_count: int, max_retries: int) -> AfterReconcile:
    """What to do once the read has spoken. A safe retry still keeps the step's budget."""
    outcome = RECONCILED[verdict]
    if outcome is AfterReconcile.RETRY and retry_count >= max_retries:
        return AfterReconcile.STOP
    return outcome


@dataclass(frozen=True)
class Backoff:
    """Delay before retry n (1-based): base * factor**(n-1), capped, with +/- jitter."""

    base_s: float = 0.5
    factor: float = 2.0
    cap_s: float = 8.0
    jitter: float = 0.25  # fraction of the delay, spread evenly around it

    def delay(self, retry_number: int, rand: Callable[[], float]) -> float:
        raw = min(self.cap_s, self.base_s * self.factor ** max(0, retry_number - 1))
        spread = raw * self.jitter
        return max(0.0, min(self.cap_s, raw - spread + 2 * spread * rand()))


@dataclass(frozen=True)
class FailurePolicy:
    table: Mapping[ErrorType, Decision] = field(default_factory=lambda: DEFAULT_TABLE)
    backoff: Backoff = field(default_factory=Backoff)

    def decide(
        self,
        error_type: ErrorType,
        *,
        retry_count: int,
        max_retries: int,
        overrides: Mapping[ErrorType, Decision] | None = None,
    ) -> Decision:
        """The decision for one failed attempt. A retry with no budget left becomes a stop."""
        decision = (overrides or {}).get(error_type) or self.table.get(error_type, Decision.STOP)
        if decision is Decision.RETRY and retry_count >= max_retries:
            return Decision.STOP
        return decision
