"""Staff approval's claim (issue 14 item 6) on both backends: a pause above the staff amount
is decided by one staff member — never by the customer, and never twice — and a customer's
pause stays the customer's. The same one conditional update as the customer's Confirm."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from agent_core.catalog.builtin import REQUEST_REFUND
from agent_core.catalog.contracts import RefundArgs
from agent_core.execution.approval import StaffRule
from agent_core.execution.executor import Executor
from agent_core.execution.tools import Tool, ToolContext, ToolRegistry
from agent_core.models import ClaimResult, PromptRef, RunStatus, utcnow
from storage.store import RunStore
from tests.fakes import STATUS, RecordingSleep, make_run, shop_like_tools
from tests.storage_backends import Backend

FAR_PAST = datetime(2000, 1, 1, tzinfo=UTC)
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
CUSTOMER, ALICE, BOB = 10001, 900, 901
RULE = StaffRule(staff_above=Decimal("100"))
BIG = ("request_refund", {"order_id": "A1002", "amount": "150.00"}, "refund")
SMALL = ("request_refund", {"order_id": "A1002", "amount": "20.00"}, "refund")
refunds: list[str] = []


async def refund(args: RefundArgs, ctx: ToolContext) -> dict[str, Any]:
    refunds.append(ctx.idempotency_key)
    return {"order_id": args.order_id, "refund_id": "R1", "amount": f"{args.amount:.2f}"}


@pytest.fixture
async def store(store_backend: Backend) -> AsyncIterator[RunStore]:
    opened: RunStore = await store_backend.open_store()
    try:
        yield opened
    finally:
        await opened.close()


def executor_for(store: RunStore) -> Executor:
    registry, _ = shop_like_tools()
    tools = [*registry, Tool.of(REQUEST_REFUND, refund)]
    return Executor(ToolRegistry(tools), journal=store, sleep=RecordingSleep(), staff_rule=RULE)


async def test_a_staff_pause_is_decided_by_one_staff_member_never_the_customer(
    store: RunStore,
) -> None:
    executor = executor_for(store)
    run = await executor.start(make_run([STATUS, BIG]))
    assert run.status is RunStatus.PAUSED and run.pause is not None
    assert run.pause.approver == "staff"
    loaded = await store.load_run(run.id)
    assert loaded is not None and loaded.pause is not None and loaded.pause.approver == "staff"
    nonce = run.pause.nonce

    refused, seen = await store.claim_pause(
        run.id, user_id=CUSTOMER, approved=True, nonce=nonce, now=utcnow(), expires_before=FAR_PAST
    )
    assert (refused, seen) == (ClaimResult.NOT_ALLOWED, None)
    won, claimed = await store.claim_pause(
        run.id,
        user_id=ALICE,
        approved=True,
        nonce=nonce,
        now=utcnow(),
        expires_before=FAR_PAST,
        staff=True,
    )
    assert won is ClaimResult.OK and claimed is not None
    approval = claimed.steps[1].approval
    assert approval is not None and approval.approved and approval.by_user_id == ALICE
    again, _ = await store.claim_pause(
        run.id,
        user_id=BOB,
        approved=False,
        nonce=nonce,
        now=utcnow(),
        expires_before=FAR_PAST,
        staff=True,
    )
    assert again is ClaimResult.ALREADY_HANDLED
    timeline = await store.history.timeline(run.id)
    assert any(e.message == f"confirmed by staff {ALICE}" for e in timeline)
    refunds.clear()
    done = await executor.drive(claimed)
    assert done.status is RunStatus.COMPLETED
    assert refunds == [f"{run.id}:s2"]  # the side effect once, with its idempotency key


async def test_a_customers_pause_is_not_staffs(store: RunStore) -> None:
    run = await executor_for(store).start(make_run([STATUS, SMALL]))
    assert run.pause is not None and run.pause.approver == "customer"
    result, _ = await store.claim_pause(
        run.id,
        user_id=ALICE,
        approved=True,
        nonce=run.pause.nonce,
        now=utcnow(),
        expires_before=FAR_PAST,
        staff=True,
    )
    assert result is ClaimResult.NOT_ALLOWED
    mine, _ = await store.claim_pause(
        run.id,
        user_id=CUSTOMER,
        approved=True,
        nonce=run.pause.nonce,
        now=utcnow(),
        expires_before=FAR_PAST,
    )
    assert mine is ClaimResult.OK


async def test_two_staff_members_pressing_at_once_give_one_decision(
    store_backend: Backend,
) -> None:
    a = await store_backend.open_store()
    b = await store_backend.open_store()
    try:
        run = await executor_for(a).start(make_run([STATUS, BIG]))
        assert run.pause is not None
        results = await asyncio.gather(
            *(
                s.claim_pause(
                    run.id,
                    user_id=who,
                    approved=True,
                    nonce=run.pause.nonce,
                    now=utcnow(),
                    expires_before=FAR_PAST,
                    staff=True,
                )
                for s, who in ((a, ALICE), (b, BOB), (a, BOB), (b, ALICE))
            )
        )
    finally:
        await a.close()
        await b.close()
    assert sorted(r.value for r, _ in results) == ["already_handled"] * 3 + ["ok"]


# -- issue 20, item 4: staff presses bound to their message; never on one's own order --------

FORUM = -1005555555555
FAR_FUTURE = datetime(2999, 1, 1, tzinfo=UTC)


async def staff_pause(store: RunStore) -> tuple[str, str, PromptRef]:
    """A staff pause of CUSTOMER's run, its prompt bound to a message in the staff group."""
    run = await executor_for(store).start(make_run([STATUS, BIG]))
    assert run.pause is not None and run.pause.nonce is not None
    prompt = PromptRef(chat_id=FORUM, message_id=77)
    await store.bind_prompt(run.id, run.pause.nonce, prompt)
    return run.id, run.pause.nonce, prompt


async def status_of(store: RunStore, run_id: str) -> RunStatus:
    run = await store.load_run(run_id)
    assert run is not None
    return run.status


async def test_a_staff_member_never_claims_their_own_order(store: RunStore) -> None:
    run_id, nonce, prompt = await staff_pause(store)
    for expires_before in (FAR_PAST, FAR_FUTURE):  # refused, and never taken for expired
        own, seen = await store.claim_pause(
            run_id,
            user_id=CUSTOMER,
            approved=True,
            nonce=nonce,
            now=utcnow(),
            expires_before=expires_before,
            prompt=prompt,
            staff=True,
        )
        assert (own, seen) == (ClaimResult.NOT_ALLOWED, None)
        assert await status_of(store, run_id) is RunStatus.PAUSED
    refused = await store.handoffs.approve_once(
        run_id, nonce, CUSTOMER, utcnow(), prompt=prompt, expires_before=FAR_PAST
    )
    assert refused == []  # not one of the four eyes either


async def test_a_first_approval_counts_only_on_its_prompt_in_time(store: RunStore) -> None:
    run_id, nonce, prompt = await staff_pause(store)
    elsewhere = PromptRef(chat_id=FORUM, message_id=78)
    approve = store.handoffs.approve_once
    assert await approve(run_id, nonce, ALICE, T0, prompt=elsewhere, expires_before=FAR_PAST) == []
    assert (
        await approve(run_id, "other-nonce", ALICE, T0, prompt=prompt, expires_before=FAR_PAST)
        == []
    )
    assert await approve(run_id, nonce, ALICE, T0, prompt=prompt, expires_before=FAR_FUTURE) == []
    assert (
        await approve("nosuchrun", nonce, ALICE, T0, prompt=prompt, expires_before=FAR_PAST) == []
    )
    # On its prompt, in time: once per person, in order.
    assert await approve(run_id, nonce, ALICE, T0, prompt=prompt, expires_before=FAR_PAST) == [
        ALICE
    ]
    later = T0 + timedelta(seconds=1)
    assert await approve(run_id, nonce, ALICE, later, prompt=prompt, expires_before=FAR_PAST) == [
        ALICE
    ]
    last = T0 + timedelta(seconds=2)
    assert await approve(run_id, nonce, BOB, last, prompt=prompt, expires_before=FAR_PAST) == [
        ALICE,
        BOB,
    ]
    assert await store.handoffs.approvals_of(run_id, "n2") == []  # a new pause starts over


async def test_four_eyes_claim_needs_another_staff_members_approval_on_the_pause(
    store: RunStore,
) -> None:
    run_id, nonce, prompt = await staff_pause(store)

    async def claim(who: int, on: PromptRef = prompt) -> ClaimResult:
        result, _ = await store.claim_pause(
            run_id,
            user_id=who,
            approved=True,
            nonce=nonce,
            now=utcnow(),
            expires_before=FAR_PAST,
            prompt=on,
            staff=True,
            approvals=2,
        )
        return result

    assert await claim(ALICE) is ClaimResult.NOT_ALLOWED  # nobody approved first
    assert await store.handoffs.approve_once(
        run_id, nonce, ALICE, T0, prompt=prompt, expires_before=FAR_PAST
    ) == [ALICE]
    assert await claim(ALICE) is ClaimResult.NOT_ALLOWED  # her own approval is not a second
    assert await claim(BOB, PromptRef(chat_id=FORUM, message_id=78)) is ClaimResult.STALE
    assert await status_of(store, run_id) is RunStatus.PAUSED
    assert await claim(BOB) is ClaimResult.OK


# -- issue 20, item 6: the expiry sweep reaches every expired staff approval ---------------


async def pause_many(store: RunStore, prefix: str, users: range, at: datetime) -> list[str]:
    """A staff pause for each of `users`, paused at `at` (the executor's clock)."""
    registry, _ = shop_like_tools()
    executor = Executor(
        ToolRegistry([*registry, Tool.of(REQUEST_REFUND, refund)]),
        journal=store,
        sleep=RecordingSleep(),
        staff_rule=RULE,
        clock=lambda: at,
    )
    runs = [make_run([BIG], user_id=u).model_copy(update={"id": f"{prefix}{u}"}) for u in users]
    started = await asyncio.gather(*(executor.start(run) for run in runs))
    assert all(r.status is RunStatus.PAUSED for r in started)
    return [run.id for run in runs]


async def test_every_expired_staff_pause_is_found_oldest_first_in_pages(store: RunStore) -> None:
    ttl = timedelta(hours=1)
    now = T0 + timedelta(hours=2)
    oldest = await pause_many(store, "a", range(30000, 30103), T0)
    older = await pause_many(store, "b", range(31000, 31102), T0 + timedelta(minutes=30))
    # Newer ones still waiting (created last), and a customer's pause as old as any.
    waiting = await pause_many(store, "c", range(32000, 32003), now - timedelta(minutes=5))
    customers = await executor_for(store).start(
        make_run([STATUS, SMALL]).model_copy(update={"id": "customer1"})
    )
    assert customers.pause is not None and customers.pause.approver == "customer"

    found: list[str] = []
    after = None
    pages = 0
    while True:
        ids, after = await store.history.expired_staff_pauses(now - ttl, after=after, limit=50)
        found += ids
        pages += 1
        if after is None:
            break
    assert found == sorted(oldest) + sorted(older)  # all 205, oldest first
    assert pages == 5
    assert not set(found) & {*waiting, customers.id}
