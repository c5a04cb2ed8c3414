"""Handoffs in the staff console (issue 14): the "handed off" filter, the handoff on the
run's page, and the overview's handoffs per day and median time to the first staff reply.
On both backends (the `seeded` store of the console tests)."""

from __future__ import annotations

import itertools
import re
from collections.abc import AsyncIterator
from datetime import timedelta

import httpx
import pytest

from agent_core.models import utcnow
from console.filters import parse_filter
from storage.handoffs import Direction, Handoff, Relay, Trigger
from storage.history import RunFilter
from tests.browser.seed import Seeded, seed
from tests.storage_backends import Backend
from tests.test_console import client_for, run_ids, sign_in

MESSAGE_IDS = itertools.count(1)


@pytest.fixture
async def seeded(store_backend: Backend) -> AsyncIterator[Seeded]:
    data = await seed(store_backend.url)
    yield data
    await data.close()


@pytest.fixture
async def staff(seeded: Seeded) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(seeded.store) as client:
        assert (await sign_in(client)).status_code == 303
        yield client


async def hand_off(seeded: Seeded, run_id: str, *, reply_after_s: float | None) -> Handoff:
    run = await seeded.store.load_run(run_id)
    assert run is not None
    opened_at = utcnow() - timedelta(minutes=10)
    handoff, new = await seeded.store.handoffs.open(
        Handoff(
            id="0a1b2c" + run_id[:6],
            customer_chat_id=run.chat_id,
            customer_user_id=run.user_id,
            customer_name="Ada <Lovelace>",
            language=run.language.value,
            trigger=Trigger.BUTTON,
            run_id=run.id,
            opened_at=opened_at,
            topic_id=77,
        )
    )
    assert new
    if reply_after_s is not None:
        relay = await seeded.store.handoffs.record_relay(
            Relay(
                handoff.id,
                Direction.TO_CUSTOMER,
                -100,
                next(MESSAGE_IDS),
                0,
                run.chat_id,
                None,
                None,
                opened_at,
            )
        )
        replied = opened_at + timedelta(seconds=reply_after_s)
        await seeded.store.handoffs.mark_copied(relay, replied)
        # Closed, so the same customer's next run may be handed off too.
        await seeded.store.handoffs.close(handoff.id, by=900, at=replied)
    return handoff


def test_the_handed_off_filter_is_parsed_and_kept_in_links() -> None:
    parsed = parse_filter({"handed": "on"})
    assert parsed.filter == RunFilter(handed_off=True)
    assert parsed.query() == "handed=1" and parsed.active
    assert parse_filter({"handed": "nope"}).filter == RunFilter()


async def test_handed_off_filter_lists_only_runs_with_a_handoff(
    seeded: Seeded, staff: httpx.AsyncClient
) -> None:
    target = next(iter(seeded.ids.values()))
    await hand_off(seeded, target, reply_after_s=90)
    page = await staff.get("/runs", params={"handed": "1"})
    assert page.status_code == 200
    assert run_ids(page.text) == [target]
    assert re.search(r'name="handed" value="1"\s+checked', page.text)
    everything = await staff.get("/runs")
    assert len(run_ids(everything.text)) > 1


async def test_run_page_shows_the_handoff(seeded: Seeded, staff: httpx.AsyncClient) -> None:
    target = next(iter(seeded.ids.values()))
    await hand_off(seeded, target, reply_after_s=None)
    page = await staff.get(f"/runs/{target}")
    assert page.status_code == 200
    assert "Handed off to a person" in page.text
    assert "Ada &lt;Lovelace&gt;" in page.text and "<strong>open</strong>" in page.text
    other = next(i for i in seeded.ids.values() if i != target)
    assert "Handed off to a person" not in (await staff.get(f"/runs/{other}")).text


async def test_overview_counts_handoffs_and_the_median_first_reply(
    seeded: Seeded, staff: httpx.AsyncClient
) -> None:
    before = await staff.get("/overview", params={"period": "24h"})
    assert "0 handoffs" in before.text and "no reply yet" in before.text
    ids = list(seeded.ids.values())
    await hand_off(seeded, ids[0], reply_after_s=60)
    await hand_off(seeded, ids[1], reply_after_s=180)
    await hand_off(seeded, ids[2], reply_after_s=None)
    after = await staff.get("/overview", params={"period": "24h"})
    assert "3 handoffs" in after.text
    assert "<strong>2 min 0 s</strong>" in after.text  # the median of 60 s and 180 s
    assert "Handoffs to a person per day" in after.text
