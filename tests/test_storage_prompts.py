"""What the Telegram branch stores, on SQLite and on PostgreSQL: the message a pause's
prompt was delivered on (a press counts only there) and signed-out console sessions.
Every test runs on both backends (tests/storage_backends.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent_core.models import ClaimResult, EventKind, PromptRef, RunStatus, utcnow
from storage.store import RunStore
from tests.fakes import CANCEL, STATUS, make_run
from tests.storage_backends import Backend
from tests.test_storage import FAR_PAST, executor_for

SHOWN = PromptRef(chat_id=10001, message_id=77)


@pytest.fixture
async def store(store_backend: Backend) -> AsyncIterator[RunStore]:
    opened: RunStore = await store_backend.open_store()
    yield opened
    await opened.close()


async def paused(store: RunStore) -> tuple[str, str]:
    executor, _ = executor_for(store)
    run = await executor.start(make_run([STATUS, CANCEL]))
    assert run.pause is not None and run.pause.nonce
    return run.id, run.pause.nonce


async def press(store: RunStore, run_id: str, nonce: str, prompt: PromptRef | None) -> ClaimResult:
    result, _ = await store.claim_pause(
        run_id,
        user_id=10001,
        approved=True,
        nonce=nonce,
        now=utcnow(),
        expires_before=FAR_PAST,
        prompt=prompt,
    )
    return result


async def test_a_bound_prompt_round_trips_and_is_recorded(
    store: RunStore, store_backend: Backend
) -> None:
    run_id, nonce = await paused(store)
    await store.bind_prompt(run_id, nonce, SHOWN, "shown")
    loaded = await store.load_run(run_id)
    assert loaded is not None and loaded.pause is not None
    assert loaded.pause.prompt == SHOWN
    observer = store_backend.observer()
    try:
        kinds = observer.execute(
            "SELECT kind FROM events WHERE run_id = ? AND kind = ?",
            (run_id, EventKind.PROMPT_SHOWN.value),
        ).fetchall()
    finally:
        observer.close()
    assert len(kinds) == 1


async def test_a_press_on_another_message_is_stale_and_changes_nothing(store: RunStore) -> None:
    run_id, nonce = await paused(store)
    await store.bind_prompt(run_id, nonce, SHOWN)
    elsewhere = PromptRef(chat_id=10001, message_id=78)
    assert await press(store, run_id, nonce, elsewhere) is ClaimResult.STALE
    still = await store.load_run(run_id)
    assert still is not None and still.status is RunStatus.PAUSED
    assert await press(store, run_id, nonce, SHOWN) is ClaimResult.OK


async def test_a_prompt_sent_but_never_bound_is_pressable_in_the_runs_chat_only(
    store: RunStore,
) -> None:
    """The process died between sending the prompt and binding it: the customer's press on
    the message they have counts (it carries the nonce); the same data pressed in another
    chat is stale and changes nothing (crash soak finding: "this button is no longer valid"
    on the only prompt the customer had)."""
    run_id, nonce = await paused(store)
    other_chat = PromptRef(chat_id=20002, message_id=77)
    assert await press(store, run_id, nonce, other_chat) is ClaimResult.STALE
    still = await store.load_run(run_id)
    assert still is not None and still.status is RunStatus.PAUSED
    assert await press(store, run_id, nonce, SHOWN) is ClaimResult.OK


async def test_a_stale_nonce_binds_nothing(store: RunStore) -> None:
    run_id, _ = await paused(store)
    await store.bind_prompt(run_id, "old-nonce", SHOWN)
    loaded = await store.load_run(run_id)
    assert loaded is not None and loaded.pause is not None and loaded.pause.prompt is None


async def test_a_signed_out_session_stays_revoked_until_it_expires(
    store_backend: Backend,
) -> None:
    store: RunStore = await store_backend.open_store()
    await store.revocations.revoke("n1", expires_at=1_000, now=500)
    await store.revocations.revoke("n1", expires_at=900, now=500)  # never shortened
    await store.close()
    reopened: RunStore = await store_backend.open_store()  # survives a restart
    try:
        assert await reopened.revocations.is_revoked("n1", now=950)
        assert not await reopened.revocations.is_revoked("n1", now=1_000)
        assert not await reopened.revocations.is_revoked("n2", now=950)
        await reopened.revocations.revoke("n2", expires_at=2_000, now=1_500)  # drops n1
    finally:
        await reopened.close()
    assert store_backend.count_rows("revoked_sessions") == 1
