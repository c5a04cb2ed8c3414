"""What the planner (issue 13) stores, on SQLite and on PostgreSQL: the interpretation, the
unsupported flag and its staff filter, a step's refusal code, and the clarifying
question's claim (one answer wins, across connections too). Every test runs on both
backends (tests/storage_backends.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from agent_core.interpretation import Clarification, ClarifyOption, Interpretation
from agent_core.models import (
    ClaimResult,
    ErrorType,
    EventKind,
    PromptRef,
    Run,
    RunEvent,
    RunStatus,
    StepError,
    StepStatus,
    utcnow,
)
from storage.history import RunFilter
from storage.store import RunStore
from tests.fakes import CANCEL, STATUS, make_run
from tests.storage_backends import Backend

USER = 10001
OTHER = 20002
NONCE = "n0nce"


@pytest.fixture
async def store(store_backend: Backend) -> AsyncIterator[RunStore]:
    opened: RunStore = await store_backend.open_store()
    yield opened
    await opened.close()


async def asked(store: RunStore, run_id: str = "asked", *, age: timedelta = timedelta()) -> Run:
    """A run that ended with a clarifying question (two options), stored as the agent does."""
    run = make_run([STATUS], user_id=USER)
    run.id = run_id
    run.status = RunStatus.NEEDS_CLARIFICATION
    run.finished_at = utcnow() - age
    run.interpretation = Interpretation(
        clarify=Clarification(
            question="Which order?",
            options=[
                ClarifyOption(label="A1001", text="cancel A1001"),
                ClarifyOption(label="A1002", text="cancel A1002"),
            ],
            nonce=NONCE,
        )
    )
    await store.record(run, RunEvent(kind=EventKind.RUN_PLANNED, run_id=run.id, trace_id="t"))
    return run


async def claim(
    store: RunStore,
    run_id: str = "asked",
    *,
    user_id: int = USER,
    nonce: str | None = NONCE,
    ttl: timedelta = timedelta(hours=1),
    prompt: PromptRef | None = None,
) -> tuple[ClaimResult, Run | None]:
    now = utcnow()
    return await store.claim_clarification(
        run_id,
        user_id=user_id,
        nonce=nonce,
        choice="A1002",
        now=now,
        expires_before=now - ttl,
        prompt=prompt,
    )


def answered_events(backend: Backend, run_id: str = "asked") -> list[tuple[str, str]]:
    observer = backend.observer()
    try:
        rows = observer.execute(
            "SELECT kind, message FROM events WHERE run_id = ? AND kind = ? ORDER BY seq",
            (run_id, EventKind.CLARIFY_ANSWERED.value),
        ).fetchall()
    finally:
        observer.close()
    return [(str(kind), str(message)) for kind, message in rows]


async def test_the_interpretation_round_trips(store: RunStore) -> None:
    run = await asked(store)
    loaded = await store.load_run(run.id)
    assert loaded is not None
    assert loaded.interpretation == run.interpretation
    assert loaded.clarify is not None and loaded.clarify.nonce == NONCE
    assert loaded.status is RunStatus.NEEDS_CLARIFICATION


async def test_one_answer_wins_and_is_recorded_once(
    store: RunStore, store_backend: Backend
) -> None:
    await asked(store)
    result, run = await claim(store)
    assert result is ClaimResult.OK
    assert run is not None and run.id == "asked"
    again, run_again = await claim(store)
    assert again is ClaimResult.ALREADY_HANDLED
    assert run_again is not None  # the run's own customer sees it
    assert answered_events(store_backend) == [("clarify_answered", f"user {USER} chose: A1002")]


async def test_typed_choice_without_a_nonce_takes_the_current_question(
    store: RunStore,
) -> None:
    await asked(store)
    assert (await claim(store, nonce=None))[0] is ClaimResult.OK


async def test_answers_from_two_connections_have_one_winner(
    store: RunStore, store_backend: Backend
) -> None:
    await asked(store)
    other: RunStore = await store_backend.open_store()
    try:
        results = await asyncio.gather(*(claim(s) for s in (store, other, store, other)))
    finally:
        await other.close()
    assert sorted(r.value for r, _ in results).count(ClaimResult.OK.value) == 1
    assert len(answered_events(store_backend)) == 1


@pytest.mark.parametrize(
    ("kwargs", "age", "expected"),
    [
        ({"run_id": "nowhere"}, timedelta(), ClaimResult.NOT_FOUND),
        ({"user_id": OTHER}, timedelta(), ClaimResult.NOT_ALLOWED),
        ({"nonce": "forged"}, timedelta(), ClaimResult.STALE),
        ({}, timedelta(hours=2), ClaimResult.EXPIRED),
    ],
)
async def test_a_lost_answer_says_why_and_changes_nothing(
    store: RunStore,
    store_backend: Backend,
    kwargs: dict[str, object],
    age: timedelta,
    expected: ClaimResult,
) -> None:
    await asked(store, age=age)
    result, run = await claim(store, **kwargs)  # type: ignore[arg-type]
    assert result is expected
    if expected in (ClaimResult.NOT_FOUND, ClaimResult.NOT_ALLOWED):
        assert run is None  # nothing about someone else's run
    else:
        assert run is not None and run.clarify is not None and run.clarify.nonce == NONCE
    assert answered_events(store_backend) == []
    reloaded = await store.load_run("asked")
    assert reloaded is not None and reloaded.clarify is not None
    assert reloaded.clarify.nonce == NONCE


GROUP = -1001


async def test_a_press_counts_only_on_the_message_the_options_were_bound_to(
    store: RunStore, store_backend: Backend
) -> None:
    """The data pressed in another chat, or on another message of the same chat, is stale
    and uses nothing up; on the bound message it wins."""
    await asked(store)  # asked in USER's private chat
    shown = PromptRef(chat_id=USER, message_id=7)
    await store.bind_choices("asked", NONCE, shown)
    for elsewhere in (
        PromptRef(chat_id=GROUP, message_id=7),
        PromptRef(chat_id=USER, message_id=8),
    ):
        result, run = await claim(store, prompt=elsewhere)
        assert result is ClaimResult.STALE
        assert run is not None and run.clarify is not None and run.clarify.nonce == NONCE
    assert answered_events(store_backend) == []
    assert (await claim(store, prompt=shown))[0] is ClaimResult.OK


async def test_before_the_options_are_bound_a_press_counts_only_in_the_questions_chat(
    store: RunStore,
) -> None:
    await asked(store)
    assert (await claim(store, prompt=PromptRef(chat_id=GROUP, message_id=3)))[0] is (
        ClaimResult.STALE
    )
    assert (await claim(store, prompt=PromptRef(chat_id=USER, message_id=3)))[0] is ClaimResult.OK


async def test_options_of_an_answered_question_are_not_bound_again(store: RunStore) -> None:
    """A late bind (another nonce, or the question answered) changes nothing."""
    await asked(store)
    await store.bind_choices("asked", "other-nonce", PromptRef(chat_id=USER, message_id=9))
    assert (await claim(store, prompt=PromptRef(chat_id=USER, message_id=4)))[0] is ClaimResult.OK


async def test_staff_filter_unsupported_runs(store: RunStore) -> None:
    for run_id, unsupported in (("plain", False), ("flagged", True)):
        run = make_run([STATUS])
        run.id = run_id
        run.interpretation = Interpretation(unsupported=["a gift card"] if unsupported else [])
        await store.record(run, RunEvent(kind=EventKind.RUN_PLANNED, run_id=run_id, trace_id="t"))
    page = await store.history.list_runs(unsupported=True)
    assert [r.id for r in page.items] == ["flagged"]
    assert page.items[0].unsupported
    found = await store.history.search_runs(RunFilter(unsupported=True))
    assert [r.id for r in found.items] == ["flagged"]
    assert {r.id for r in (await store.history.list_runs()).items} == {"plain", "flagged"}


async def test_a_refusal_code_round_trips(store: RunStore) -> None:
    run = make_run([CANCEL])
    await store.record(run, RunEvent(kind=EventKind.RUN_PLANNED, run_id=run.id, trace_id="t"))
    step = run.steps[0]
    step.status = StepStatus.FAILED
    step.error = StepError(
        type=ErrorType.PERMISSION_DENIED, message="window closed", code="window_closed"
    )
    run.status = RunStatus.FAILED
    await store.record(
        run,
        RunEvent(kind=EventKind.STEP_FAILED, run_id=run.id, trace_id="t", step_id=step.id),
    )
    loaded = await store.load_run(run.id)
    assert loaded is not None and loaded.steps[0].error is not None
    assert loaded.steps[0].error.code == "window_closed"
