"""`settle_heap`: start-up's objects frozen, and a young generation sized for many runs."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from stepwise.heap import YOUNG_THRESHOLD, settle_heap


@pytest.fixture
def restored_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


@pytest.mark.usefixtures("restored_gc")
def test_settle_heap_freezes_and_raises_only_the_young_threshold() -> None:
    gc.set_threshold(700, 11, 12)
    settle_heap()
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == (YOUNG_THRESHOLD, 11, 12)


@pytest.mark.usefixtures("restored_gc")
def test_settle_heap_keeps_a_larger_young_threshold() -> None:
    gc.set_threshold(YOUNG_THRESHOLD * 2, 10, 10)
    settle_heap()
    assert gc.get_threshold() == (YOUNG_THRESHOLD * 2, 10, 10)
