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
) -> tuple[ClaimResult, Run | None]:
    now = utcnow()
    return await store.claim_clarification(
        run_id, user_id=user_id, nonce=nonce, choice="A1002", now=now, expires_before=now - ttl
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
