"""What to do when a tool fails: the seed's table, as data.

Only transient failures are retried, a bounded number of times, with exponential backoff
and jitter. Empty results degrade honestly, confirmations pause, everything else stops.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from agent_core.models import Decision, ErrorType

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
    }
)


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
