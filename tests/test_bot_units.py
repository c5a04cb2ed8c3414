"""Pure parts of the Telegram adapter: message splitting, button data, flood control."""

from __future__ import annotations

import asyncio

import pytest

from agent_core.models import RunStatus
from bot.callbacks import (
    MAX_CALLBACK_BYTES,
    DecisionData,
    PageData,
    decision_data,
    page_data,
    parse_callback,
)
from bot.progress import split_message
from bot.ratelimit import SlidingWindow


def test_split_message_keeps_every_part_under_the_limit_and_loses_nothing() -> None:
    text = "\n".join(f"line {n} " + "x" * (n * 37 % 300) for n in range(400))
    parts = split_message(text, limit=1000)
    assert all(len(p) <= 1000 for p in parts)
    assert "\n".join(parts) == text


def test_split_message_hard_cuts_a_huge_line_but_not_inside_an_entity() -> None:
    line = "a" * 997 + "&lt;tag&gt;" + "b" * 1500  # "&lt;" straddles position 1000
    parts = split_message(line, limit=1000)
    assert all(len(p) <= 1000 for p in parts)
    assert "".join(parts) == line
    assert parts[0].endswith("a") and parts[1].startswith("&lt;")


def test_split_message_of_empty_text_is_one_empty_part() -> None:
    assert split_message("") == [""]


def test_decision_data_round_trips_and_fits_telegrams_limit() -> None:
    data = decision_data("0123456789ab", "AbC-_x9y8z7", approved=True)
    assert len(data.encode()) <= MAX_CALLBACK_BYTES
    assert parse_callback(data) == DecisionData("0123456789ab", "AbC-_x9y8z7", approved=True)
    declined = decision_data("0123456789ab", "AbC-_x9y8z7", approved=False)
    assert parse_callback(declined) == DecisionData("0123456789ab", "AbC-_x9y8z7", approved=False)
    with pytest.raises(ValueError):
        decision_data("not hex!", "nonce", approved=True)


@pytest.mark.parametrize(
    "data",
    [
        None,
        "",
        "sw:c:0123456789ab:AbC-_x9y8z7\n",
        "sw:c:0123456789AB:nonce123",
        "sw:y:0123456789ab:nonce123",
        "sw:c:0123456789ab:" + "n" * 60,
        "sw:p:everything:0",
        "sw:p:*:-1",
        "sw:p:*:١٢",  # Arabic-Indic digits are not an offset
        b"sw:c:0123456789ab:nonce123",
    ],
)
def test_unexpected_button_data_is_ignored(data: object) -> None:
    assert parse_callback(data) is None


def test_page_data_round_trips() -> None:
    assert parse_callback(page_data(None, 16)) == PageData(None, 16)
    assert parse_callback(page_data(RunStatus.FAILED, 8)) == PageData(RunStatus.FAILED, 8)


async def test_sliding_window_never_admits_more_than_the_limit_per_period(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [0.0]
    admitted: list[float] = []
    real_sleep = asyncio.sleep

    async def fake_sleep(seconds: float) -> None:
        now[0] += seconds  # time passes only when someone waits
        await real_sleep(0)

    monkeypatch.setattr("bot.ratelimit.asyncio.sleep", fake_sleep)
    window = SlidingWindow(limit=5, period=1.0, clock=lambda: now[0])

    async def one() -> None:
        slot = await window.acquire()
        admitted.append(now[0])
        window.release(slot)  # the answer arrives at once

    await asyncio.gather(*(one() for _ in range(17)))
    assert len(admitted) == 17
    for i, t in enumerate(admitted):
        in_window = [u for u in admitted[: i + 1] if t - u < 1.0]
        assert len(in_window) <= 5
    assert admitted[-1] == pytest.approx(3.0)  # 17 calls at 5/s need three extra seconds


async def test_a_call_still_in_flight_keeps_its_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds
        await real_sleep(0)

    monkeypatch.setattr("bot.ratelimit.asyncio.sleep", fake_sleep)
    window = SlidingWindow(limit=2, period=1.0, clock=lambda: now[0])
    first = await window.acquire()
    second = await window.acquire()
    third = asyncio.ensure_future(window.acquire())
    now[0] = 5.0  # long after the window: both calls are still waiting for their answer
    await real_sleep(0)
    assert not third.done() and slept == []  # waits for an answer, not for the clock
    window.release(first)  # its answer arrives at t=5, so it counts until t=6
    slot = await asyncio.wait_for(third, timeout=5)
    assert slot is not None
    assert slept == [1.0] and now[0] == 6.0
    window.release(second)
