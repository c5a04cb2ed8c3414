"""Delivered marks (issue 15 #4) across a crash: what was committed but never sent is sent
once after the restart, and what was sent is not sent again.

The answer's case is in test_telegram_faults.py (an answer interrupted by a crash); here,
the plan's: the bot is killed while the plan's message is on its way.
"""

from __future__ import annotations

from pathlib import Path

from standin import StandIn

from .conftest import ServeProcess, bot_texts, query, until, write_seed


async def test_a_plan_interrupted_by_a_crash_is_shown_once_after_restart(
    standin: StandIn, tmp_path: Path
) -> None:
    seed = tmp_path / "seed.json"
    (customer,) = write_seed(seed, [55001])
    user, order_id = customer.user_id, customer.shipping[0]
    db = tmp_path / "bot.db"
    env = {"STEPWISE_SHOP_SEED": str(seed), "STEPWISE_SHOP_LATENCY_MS": "1500"}
    serve = ServeProcess(standin, db, tmp_path, env=env)
    await serve.start()
    try:
        # The plan's message hangs (and would fail): the run goes on without it.
        standin.fail_next("sendMessage", status=500, delay=30.0, chat_id=user)
        standin.inject_message(user, user, f"where is order {order_id}")
        await until(
            lambda: (
                query(db, "SELECT status FROM runs") == [("running",)]
                and any(c.method == "sendMessage" for c in standin.calls(chat_id=user))
            ),
            what="run started, plan in flight",
        )
        assert query(db, "SELECT count(*) FROM events WHERE kind = 'plan_shown'") == [(0,)]
        await serve.kill()
        standin.clear_faults()
        await serve.start()
        await until(
            lambda: query(db, "SELECT status, lease_owner FROM runs") == [("completed", None)],
            within=15,
            what="the run recovered, finished and answered",
        )
        texts = bot_texts(standin, user)
        assert [n for n, t in enumerate(texts) if t.startswith("Here is my plan:")] == [0]
        assert len([t for t in texts if t.startswith(f"Order {order_id}")]) == 1  # the answer
        assert query(db, "SELECT count(*) FROM events WHERE kind = 'plan_shown'") == [(1,)]
    except BaseException:
        print(serve.tail(60))
        raise
    finally:
        await serve.stop()
