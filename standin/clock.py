"""The stand-in's one clock: message dates, flood windows, query expiry and the call log.

Everything time-dependent in the stand-in reads a single `Clock` (a callable returning
seconds on the Unix timeline) so a test can swap in a fake one and move all of it
together: advancing a fake clock ages messages, empties flood windows and expires
callback queries consistently, with no sleeping. Telegram dates are Unix seconds, so
the reading is Unix time; the default is monotonic after one wall-clock reading, so a
wall-clock step (NTP, DST bugs) can neither reopen a flood window nor make a call
appear to take negative time. This module is the only place that reads the system time.
"""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], float]
"""Seconds since the Unix epoch, never decreasing."""


class SystemClock:
    """Unix time that never goes backwards: the wall clock read once, then monotonic time."""

    def __init__(self) -> None:
        self._offset = time.time() - time.monotonic()

    def __call__(self) -> float:
        return self._offset + time.monotonic()


def unix_date(clock: Clock) -> int:
    """A Telegram `date`: integer Unix seconds on the stand-in's clock."""
    return int(clock())
