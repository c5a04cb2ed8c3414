"""The Bot API specification in the test suite: the checker, and a check of a whole test.

The vendored spec and its checker live in `standin.botapi` (the stand-in enforces them at
run time and must not import from tests/; see README.md here). `spec_problems` is the
suite-wide part: after a test, every request the bot sent must conform to the spec — even
in ways Telegram tolerates silently, such as a misspelt parameter it ignores — and every
object the stand-in returned or delivered must be shaped like the spec's type, so the
stand-in cannot drift from Telegram without the suite noticing.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

from standin import StandIn
from standin.botapi import (
    SPEC_PATH,
    Problem,
    call_problems,
    check_call,
    check_object,
    check_result,
    object_problems,
    spec,
    update_kinds,
    version,
)

__all__ = [
    "SPEC_PATH",
    "Problem",
    "assert_conforms",
    "call_problems",
    "check_call",
    "check_object",
    "check_result",
    "object_problems",
    "spec",
    "spec_problems",
    "update_kinds",
    "version",
]


@dataclass
class _Progress:
    """How far one stand-in has been checked, so a harness stop and the fixture's teardown
    never report the same thing twice."""

    calls: int = 0
    deliveries: int = 0
    updates: set[int] = field(default_factory=set)  # update_ids already checked


_checked: weakref.WeakKeyDictionary[StandIn, _Progress] = weakref.WeakKeyDictionary()


def spec_problems(standin: StandIn, *, requests: bool = True) -> list[str]:
    """Problems in the calls, updates and deliveries since the last check of this stand-in.

    Every update is checked once: whether long-polled (getUpdates results), posted to a
    webhook, or still queued. `requests=False` checks only what the stand-in answered and
    delivered (for tests that send malformed requests on purpose).
    """
    progress = _checked.setdefault(standin, _Progress())
    calls, deliveries = standin.state.calls, standin.webhook_deliveries()
    start = progress.calls
    while progress.calls < len(calls) and calls[progress.calls].status is not None:
        progress.calls += 1  # up to the first call still in flight; the rest waits
    problems: list[str] = []
    for record in calls[start : progress.calls]:
        label = f"call #{record.seq} {record.method}"
        if requests:
            problems += [f"{label}: {p}" for p in check_call(record.method, record.params)]
        if not record.ok:
            continue
        if record.method.lower() == "getupdates" and isinstance(record.result, list):
            problems += _updates(label, record.result, progress)
        else:
            problems += [f"{label}: {p}" for p in check_result(record.method, record.result)]
    for delivery in deliveries[progress.deliveries :]:
        problems += _updates("webhook delivery", [delivery.update], progress)
    progress.deliveries = len(deliveries)
    problems += _updates("queued update", standin.pending_updates(), progress)
    return problems


def _updates(label: str, updates: list[Any], progress: _Progress) -> list[str]:
    """Each update once, however often it was re-sent before being confirmed."""
    problems: list[str] = []
    for update in updates:
        update_id = update.get("update_id") if isinstance(update, dict) else None
        if isinstance(update_id, int):
            if update_id in progress.updates:
                continue
            progress.updates.add(update_id)
        problems += [f"{label}: {p}" for p in check_object("Update", update)]
    return problems


def assert_conforms(standin: StandIn, *, requests: bool = True) -> None:
    """Fail with every problem found, one per line, naming the Bot API version."""
    problems = spec_problems(standin, requests=requests)
    if problems:
        shown = "\n  ".join(problems[:40])
        more = f"\n  ... and {len(problems) - 40} more" if len(problems) > 40 else ""
        raise AssertionError(
            f"Not what {version()} allows ({len(problems)} problems):\n  {shown}{more}"
        )
