"""Pure parts of the Telegram adapter: message splitting, button data, flood control,
what the bot reads from a run after a restart, and the timeline line."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from agent_core.models import (
    Approval,
    EventKind,
    Language,
    Pause,
    PlanStep,
    Run,
    RunStatus,
    StepStatus,
)
from bot.callbacks import (
    MAX_CALLBACK_BYTES,
    DecisionData,
    PageData,
    decision_data,
    page_data,
    parse_callback,
)
from bot.handlers import paused_step_id
from bot.progress import BLOCKED_NOTE, PROMPT_SHOWN_NOTE
from bot.ratelimit import ChatPacer, SlidingWindow, counts_as_message
from bot.recovery import prompt_lost
from bot.textsplit import clip_message, split_message, utf16_units, visible_units
from storage.records import TimelineEntry, format_timeline_entry


def test_split_message_keeps_every_part_under_the_limit_and_loses_nothing() -> None:
    text = "\n".join(f"line {n} " + "x" * (n * 37 % 300) for n in range(400))
    parts = split_message(text, limit=1000)
    assert all(len(p) <= 1000 for p in parts)
    assert "\n".join(parts) == text


def test_split_message_hard_cuts_a_huge_line_but_not_inside_an_entity() -> None:
    line = "a" * 999 + "&lt;&gt;" + "b" * 1500  # the second entity is unit 1001
    parts = split_message(line, limit=1000)
    assert all(visible_units(p) <= 1000 for p in parts)
    assert "".join(parts) == line
    assert parts[0].endswith("&lt;") and parts[1].startswith("&gt;")


def test_split_message_counts_utf16_units_of_the_visible_text() -> None:
    emoji = "😀" * 3000  # 6000 units in 3000 characters
    parts = split_message(emoji)
    assert [utf16_units(p) for p in parts] == [4096, 1904]
    tags = "<b>" + "&lt;" * 5000 + "</b>"  # 20,007 characters, 5000 visible
    parts = split_message(tags)
    assert [visible_units(p) for p in parts] == [4096, 904]
    assert parts[0].endswith("</b>") and parts[1].startswith("<b>")  # each part parses


def test_clip_message_keeps_one_message_and_marks_the_cut() -> None:
    assert clip_message("short") == "short"
    clipped = clip_message("😀" * 2100)
    assert visible_units(clipped) <= 4096 and clipped.endswith("…")


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


# -- restart facts: which step a decision was about, which prompts never arrived -----------


def _run(*steps: PlanStep, pause: Pause | None = None) -> Run:
    return Run(
        id="r1",
        trace_id="t1",
        user_id=1,
        chat_id=1,
        request_text="cancel order A1003",
        language=Language.EN,
        steps=list(steps),
        pause=pause,
    )


def test_paused_step_id_reads_the_claimed_pause_or_the_expired_step() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    approved = PlanStep(
        id="s1",
        goal="g",
        tool="cancel_order",
        status=StepStatus.DONE,
        pause_reason="high_risk",
        approval=Approval(approved=True, by_user_id=1, at=at),
    )
    paused = PlanStep(id="s2", goal="g", tool="cancel_order", status=StepStatus.PAUSED)
    pause = Pause(step_id="s2", nonce=None, tool="cancel_order", args_hash="h", paused_at=at)
    assert paused_step_id(_run(approved, paused, pause=pause)) == "s2"
    expired = paused.model_copy(
        update={"status": StepStatus.CANCELLED, "pause_reason": "high_risk"}
    )
    skipped = PlanStep(id="s3", goal="g", tool="get_order", status=StepStatus.CANCELLED)
    assert paused_step_id(_run(approved, expired, skipped)) == "s2"
    assert paused_step_id(_run(approved)) is None


def _entry(seq: int, kind: EventKind, message: str | None = None) -> TimelineEntry:
    return TimelineEntry(
        seq=seq,
        kind=kind,
        step_id=None,
        tool=None,
        attempt=None,
        status=None,
        error_type=None,
        decision=None,
        delay_s=None,
        message=message,
        at=datetime(2026, 1, 1, tzinfo=UTC),
    )


def test_a_prompt_is_lost_until_a_prompt_shown_event_follows_the_last_pause() -> None:
    paused = _entry(1, EventKind.STEP_PAUSED)
    shown = _entry(2, EventKind.PROMPT_SHOWN, PROMPT_SHOWN_NOTE)
    blocked = _entry(2, EventKind.CUSTOMER_BLOCKED, BLOCKED_NOTE)
    other_note = _entry(2, EventKind.NOTICE, PROMPT_SHOWN_NOTE)  # prose is not the fact
    assert prompt_lost([paused])
    assert not prompt_lost([paused, shown])
    assert not prompt_lost([paused, blocked])
    assert prompt_lost([paused, other_note])
    assert prompt_lost([paused, shown, _entry(3, EventKind.STEP_PAUSED)])
    assert not prompt_lost([_entry(1, EventKind.RUN_PLANNED)])


def test_one_timeline_line_for_the_cli_and_the_staff_command() -> None:
    entry = _entry(1, EventKind.STEP_RETRYING, "boom").model_copy(
        update={
            "step_id": "s1",
            "tool": "get_order",
            "attempt": 1,
            "error_type": "timeout",
            "decision": "retry",
            "delay_s": 0.25,
        }
    )
    assert format_timeline_entry(entry) == (
        "00:00:00.000 step_retrying s1 attempt 1 tool=get_order error=timeout"
        " decision=retry backoff=0.25s — boom"
    )


# -- per-chat pacing (issue 11 #15) --------------------------------------------------------


async def test_chat_pacer_lets_a_burst_through_then_one_per_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [0.0]
    real_sleep = asyncio.sleep

    async def fake_sleep(seconds: float) -> None:
        now[0] += seconds
        await real_sleep(0)

    monkeypatch.setattr("bot.ratelimit.asyncio.sleep", fake_sleep)
    pacer = ChatPacer(burst=3, interval=1.0, clock=lambda: now[0])
    sent: list[float] = []
    for _ in range(6):
        await pacer.acquire()
        sent.append(now[0])
        pacer.release()  # answered at once
    assert sent == [0.0, 0.0, 0.0, 1.0, 2.0, 3.0]
    now[0] = 10.0
    assert pacer.idle  # the bucket is full again


async def test_chat_pacer_charges_a_call_when_its_answer_arrives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A call that took long may have reached the server late: the next waits for that."""
    now = [0.0]
    real_sleep = asyncio.sleep

    async def fake_sleep(seconds: float) -> None:
        now[0] += seconds
        await real_sleep(0)

    monkeypatch.setattr("bot.ratelimit.asyncio.sleep", fake_sleep)
    pacer = ChatPacer(burst=1, interval=1.0, clock=lambda: now[0])
    await pacer.acquire()
    now[0] = 0.8  # the answer comes 0.8 s later: the server counted it at most then
    pacer.release()
    await pacer.acquire()
    assert now[0] == pytest.approx(1.8)
    pacer.release()


async def test_a_call_cancelled_while_it_waits_for_a_token_lets_go_of_the_chat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A progress edit cancelled while paced (its step finished first) must not keep the
    chat: every later message to it would wait forever (a bot that cannot stop)."""
    now = [0.0]
    waiting = asyncio.Event()
    never = asyncio.Event()

    async def blocking_sleep(seconds: float) -> None:
        waiting.set()
        await never.wait()  # a wait for a token, cancelled below before it ends

    monkeypatch.setattr("bot.ratelimit.asyncio.sleep", blocking_sleep)
    pacer = ChatPacer(burst=1, interval=1.0, clock=lambda: now[0])
    await pacer.acquire()
    pacer.release()  # the bucket is empty until t=1
    paced = asyncio.create_task(pacer.acquire())
    await waiting.wait()
    paced.cancel()
    with pytest.raises(asyncio.CancelledError):
        await paced
    now[0] = 5.0  # the bucket is full again: the next call goes at once
    await asyncio.wait_for(pacer.acquire(), timeout=5)
    pacer.release()


def test_only_messages_spend_a_chats_budget_and_the_numbers_are_telegrams() -> None:
    assert counts_as_message("sendMessage") and counts_as_message("editMessageText")
    assert not counts_as_message("sendChatAction") and not counts_as_message("answerCallbackQuery")
    assert not counts_as_message("getUpdates") and not counts_as_message("setMyCommands")
