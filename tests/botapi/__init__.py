"""The Bot API specification in the test suite: the checker, and a check of a whole test.

The vendored spec and its checker live in `standin.botapi` (the stand-in enforces them at
run time and must not import from tests/; see README.md here). `spec_problems` is the
suite-wide part: after a test, every request the bot sent must conform to the spec — even
in ways Telegram tolerates silently, such as a misspelt parameter it ignores — and every
object the stand-in returned or delivered must be shaped like the spec's type, so the
stand-in cannot drift from Telegram without the suite noticing.
"""

from __future__ import annotations

import json
import weakref
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

# How far each stand-in's call log and webhook deliveries have been checked, so a harness
# stop and the fixture's teardown never report the same thing twice.
_checked: weakref.WeakKeyDictionary[StandIn, tuple[int, int]] = weakref.WeakKeyDictionary()


def spec_problems(standin: StandIn, *, requests: bool = True) -> list[str]:
    """Problems in the calls and deliveries since the last check of this stand-in.

    `requests=False` checks only what the stand-in answered and delivered (for tests that
    send malformed requests on purpose).
    """
    calls, deliveries = standin.state.calls, standin.webhook_deliveries()
    call_start, delivery_start = _checked.get(standin, (0, 0))
    finished = 0  # check up to the first call still in flight; the rest waits for next time
    while call_start + finished < len(calls) and calls[call_start + finished].status is not None:
        finished += 1
    _checked[standin] = (call_start + finished, len(deliveries))
    problems: list[str] = []
    seen: set[str] = set()
    for record in calls[call_start : call_start + finished]:
        label = f"call #{record.seq} {record.method}"
        if requests:
            problems += [f"{label}: {p}" for p in check_call(record.method, record.params)]
        if not record.ok:
            continue
        if record.method.lower() == "getupdates" and isinstance(record.result, list):
            problems += _updates(label, record.result, seen)
        else:
            problems += [f"{label}: {p}" for p in check_result(record.method, record.result)]
    for delivery in deliveries[delivery_start:]:
        problems += _updates("webhook delivery", [delivery.update], seen)
    return problems


def _updates(label: str, updates: list[Any], seen: set[str]) -> list[str]:
    """Each update once, however often it was re-sent before being confirmed."""
    problems: list[str] = []
    for update in updates:
        key = json.dumps(update, sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
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
