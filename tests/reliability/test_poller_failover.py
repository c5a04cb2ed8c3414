"""Several `stepwise serve` processes on one database (issue 15, items 2 and 3).

- long polling is held by one process; the other waits (one line) and takes over (one
  line) when the holder is killed, answering the next message; no `Conflict` anywhere;
- with a webhook, an update is stored before Telegram gets its 200: while the database
  refuses writes the answer is 503 (the customer hears "busy" once), and Telegram's retry
  is answered for real once the database is back.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from bot.texts import TEXTS
from standin import StandIn
from standin.webhook import WebhookRetry

from .conftest import ServeProcess, bot_texts, query, until, write_seed
from .test_database_trouble import locked

BUSY = TEXTS["busy"]["en"]


def _conflicts(standin: StandIn) -> int:
    return sum(c.method == "getUpdates" and c.status == 409 for c in standin.state.calls)


def _answers(standin: StandIn, user: int, order: str) -> int:
    return sum(order in t and "is on its way" in t for t in bot_texts(standin, user))


async def test_a_standby_takes_over_polling_when_the_holder_is_killed(
    standin: StandIn, tmp_path: Path
) -> None:
    seed = tmp_path / "seed.json"
    (customer,) = write_seed(seed, [71001])
    user, db = customer.user_id, tmp_path / "bot.db"
    env = {"STEPWISE_SHOP_SEED": str(seed), "STEPWISE_LEASE": "3"}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    holder = ServeProcess(standin, db, tmp_path / "a", env=env)
    standby = ServeProcess(standin, db, tmp_path / "b", env=env, ready_method="getMe")
    await holder.start()
    await standby.start()
    try:
        await until(lambda: "poller: waiting" in standby.tail(), what="the standby waiting")
        first, second = customer.shipping
        standin.inject_message(user, user, f"where is order {first}")
        await until(lambda: _answers(standin, user, first), what="answered by the holder")
        # ... and its delivery recorded: a kill between the send and the mark would make
        # the standby send it again (the one window a crash can double, by design).
        delivered = "SELECT count(*) FROM events WHERE kind = 'answer_delivered'"
        await until(lambda: query(db, delivered) == [(1,)], what="the answer marked delivered")
        assert _conflicts(standin) == 0

        await holder.kill()
        standin.inject_message(user, user, f"where is order {second}")
        await until(
            lambda: _answers(standin, user, second),
            within=15,
            what="the next message answered by the standby",
        )
        assert "poller: took over long polling from" in standby.tail()
        assert standby.tail().count("poller: waiting") == 1
        assert _answers(standin, user, first) == 1 and _answers(standin, user, second) == 1
        assert query(db, "SELECT count(*) FROM runs") == [(2,)]
        await until(
            lambda: query(db, "SELECT count(*) FROM inbox WHERE processed_at IS NULL") == [(0,)],
            what="every update marked processed",
        )
        for log in (holder.log, standby.log):
            assert "Conflict" not in log.read_text() and "Traceback" not in log.read_text()
    finally:
        await standby.stop()
        await holder.stop()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.standin(webhook_retry=WebhookRetry(attempts=20, first_delay=0.3, factor=1.0))
async def test_a_webhook_update_is_stored_before_its_200(standin: StandIn, tmp_path: Path) -> None:
    seed = tmp_path / "seed.json"
    (customer,) = write_seed(seed, [72001])
    user, db = customer.user_id, tmp_path / "bot.db"
    port = _free_port()
    serve = ServeProcess(
        standin,
        db,
        tmp_path,
        env={"STEPWISE_SHOP_SEED": str(seed), "STEPWISE_DB_TIMEOUT": "0.3"},
        argv=(
            "-m",
            "stepwise",
            "serve",
            "--webhook-url",
            f"http://127.0.0.1:{port}",
            "--port",
            str(port),
        ),
        ready_method="setWebhook",
    )
    await serve.start()
    try:
        order = customer.shipping[0]
        with locked(db):
            standin.inject_message(user, user, f"where is order {order}")
            update_id = standin.state.updates[-1].update_id
            await until(lambda: BUSY in bot_texts(standin, user), what="busy while locked")
            await until(
                lambda: any(d.status == 503 for d in standin.state.webhook_deliveries),
                what="the webhook refusing what it could not store",
            )
            assert not any(d.ok for d in standin.state.webhook_deliveries)
        await until(lambda: _answers(standin, user, order), what="answered once stored")
        assert bot_texts(standin, user).count(BUSY) == 1
        processed = "SELECT processed_at IS NOT NULL FROM inbox WHERE update_id = ?"
        await until(lambda: query(db, processed, update_id) == [(1,)], what="marked processed")
        assert query(db, "SELECT count(*) FROM runs") == [(1,)]
    finally:
        await serve.stop()
