"""A WARNING for every failed call to the shop's system, whatever the log level's default.

The executor retries a shop that answers 5xx or does not answer at all, then stops the run
and the customer is told; before this, none of it reached a log line above INFO, so an
operator at the default level (WARNING) saw nothing while the shop was down. This listener
sees every committed transition (`Runtime.add_listener`) and writes one line per failed
attempt of a call that failed on the shop's side (`agent_core.faults`): the tool, the
kind of failure, the attempt and what happens next, the run id (and, in JSON lines,
`run_id` and `trace_id`). Never the customer's text, never the shop's own words (they may
quote the request): only names, kinds and numbers.
"""

from __future__ import annotations

import logging

from agent_core.faults import fault_kind
from agent_core.models import EventKind, Run, RunEvent

log = logging.getLogger("stepwise.shop")

_FAILURES = frozenset({EventKind.STEP_RETRYING, EventKind.STEP_FAILED, EventKind.STEP_FALLBACK})


def shop_failure_line(event: RunEvent) -> str | None:
    """The line for `event`, or None when it is not a failed shop call."""
    if event.kind not in _FAILURES or event.tool is None:
        return None
    kind = fault_kind(event.error_type, event.message or "")
    if kind is None:
        return None
    attempt = f"attempt {event.attempt}" if event.attempt is not None else "a call"
    if event.kind is EventKind.STEP_RETRYING:
        after = f"retrying in {event.delay_s:.2f} s" if event.delay_s is not None else "retrying"
    elif event.kind is EventKind.STEP_FALLBACK:
        after = "falling back"
    else:
        after = "gave up: the run stops"
    return f"shop call failed: {event.tool}, {kind} ({attempt}; {after}); run {event.run_id}"


async def log_shop_failures(run: Run, event: RunEvent) -> None:
    """The listener (see the module)."""
    line = shop_failure_line(event)
    if line is not None:
        log.warning(line, extra={"run_id": run.id, "trace_id": run.trace_id})
