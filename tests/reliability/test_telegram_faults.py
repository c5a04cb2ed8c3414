"""Telegram faults: 429 with retry_after, 5xx, timeouts and Forbidden on the bot's calls.

The stand-in injects the faults on `sendMessage` / `editMessageText` of particular chats
while other chats keep talking to the bot. No run may be lost (the database has every run,
finished), and every customer who can still be reached ends up seeing the final answer.
PTB's default read timeout is 5 s (HTTPXRequest), so a "timeout" is an answer held back
for longer than that.
"""

from __future__ import annotations

from pathlib import Path

from bot.progress import PROMPT_SHOWN_NOTE
from standin import StandIn

from .conftest import (
    ServeProcess,
    bot_texts,
    press,
    prompt_for,
    query,
    start_bot,
    until,
    write_seed,
)

PTB_READ_TIMEOUT_S = 5.0  # telegram.request.HTTPXRequest's default


def _run_of(db: Path, user: int) -> tuple[str, str] | None:
    rows = query(db, "SELECT id, status FROM runs WHERE user_id = ? ORDER BY created_at", user)
    return rows[-1] if rows else None


async def test_faults_on_some_chats_lose_no_run_and_every_reachable_customer_gets_the_answer(
    standin: StandIn, tmp_path: Path
) -> None:
    seed = tmp_path / "seed.json"
    flood, broken, blocked, slow, stale, calm = write_seed(
        seed, [51001, 51002, 51003, 51004, 51005, 51006]
    )
    bot = await start_bot(
        standin,
        tmp_path / "bot.db",
        STEPWISE_SHOP_SEED=str(seed),
        STEPWISE_SHOP_LATENCY_MS="700",  # steps outlive show_after_s: "⏳ working…", then edited
    )
    try:
        # 429 twice in a row: the rate limiter waits retry_after and sends again.
        standin.fail_next("sendMessage", 2, status=429, retry_after=1, chat_id=flood.user_id)
        # 5xx on the plan, the step's messages and the first Confirm/Cancel prompt attempts.
        standin.fail_next("sendMessage", 5, status=502, chat_id=broken.user_id)
        standin.fail_next("editMessageText", 1, status=500, chat_id=broken.user_id)
        # The customer blocked the bot: 403 Forbidden on everything.
        standin.add_chat(blocked.user_id, blocked.user_id)
        standin.block_chat(blocked.user_id, notify=False)
        # The step's final edit fails once: the step message must not stay "working…".
        standin.fail_next("editMessageText", 1, status=500, chat_id=stale.user_id)

        asks = {
            flood.user_id: f"cancel order {flood.pending[0]}",
            broken.user_id: f"cancel order {broken.pending[0]}",
            blocked.user_id: f"where is order {blocked.shipping[0]}",
            slow.user_id: f"cancel order {slow.pending[0]}",
            stale.user_id: f"where is order {stale.shipping[0]}",
            calm.user_id: f"where is order {calm.shipping[0]}",
        }
        for user, text in asks.items():
            standin.inject_message(user, user, text)

        # The calm chat is answered while the others are still fighting their faults.
        await until(
            lambda: any("on its way" in t for t in bot_texts(standin, calm.user_id)),
            within=10,
            what="the unaffected chat's answer",
        )

        # Everyone with a cancel gets buttons despite 429/5xx; the slow chat's answer to
        # the press will time out on the client after Telegram delivered it.
        for customer in (flood, broken, slow):
            prompt = await until(
                lambda c=customer: (
                    (run := _run_of(bot.db, c.user_id)) and prompt_for(standin, c.user_id, run[0])
                ),
                within=15,
                what=f"buttons for {customer.user_id}",
            )
            if customer is slow:
                standin.fail_next(
                    "sendMessage",
                    status=None,  # delivered; the answer to the call comes too late
                    delay=PTB_READ_TIMEOUT_S + 1,
                    chat_id=slow.user_id,
                )
            press(standin, customer.user_id, prompt, approve=True, user=customer.user_id)

        def all_finished() -> bool:
            runs = query(bot.db, "SELECT status FROM runs")
            return len(runs) == len(asks) and all(s == "completed" for (s,) in runs)

        await until(all_finished, within=30, what="every run completed")
        for customer in (flood, broken, slow):
            await until(
                lambda c=customer: any(
                    f"Order {c.pending[0]} has been cancelled." in t
                    for t in bot_texts(standin, c.user_id)
                ),
                within=15,
                what=f"final answer for {customer.user_id}",
            )
            assert query(
                bot.db, "SELECT count(*) FROM shop_cancellations WHERE order_id = ?",
                customer.pending[0],
            ) == [(1,)]  # fmt: skip

        # The slow chat's answer reached Telegram but not its reply: PTB times out after 5 s
        # and the bot sends it again. Telegram has no idempotent sendMessage, so the customer
        # may see it twice; never zero, never more than once per attempt.
        def settled() -> bool:
            sends = standin.calls("sendMessage", chat_id=slow.user_id)
            return len(sends) >= 5 and all(c.status is not None for c in sends)

        await until(settled, within=15, what="the timed-out send retried")
        answers = [t for t in bot_texts(standin, slow.user_id) if "has been cancelled." in t]
        assert 1 <= len(answers) <= 2, answers
        assert 1 <= len(answers) <= 2
        await until(
            lambda: any(t.startswith("Order ") for t in bot_texts(standin, stale.user_id)),
            within=10,
            what="the stale chat's answer",
        )

        # The step message whose final edit failed was settled when the run finished.
        step = next(
            m for m in standin.bot_messages(stale.user_id) if "Check the status" in (m.text or "")
            and not (m.text or "").startswith("Here")
        )  # fmt: skip
        assert (step.text or "").startswith("✅"), step.text

        # The blocked customer: run finished and noted, one refused call, nothing retried.
        assert query(
            bot.db,
            "SELECT count(*) FROM events e JOIN runs r ON r.id = e.run_id"
            " WHERE r.user_id = ? AND e.kind = 'customer_blocked'",
            blocked.user_id,
        ) == [(1,)]
        assert len(standin.calls(chat_id=blocked.user_id)) == 1
        assert standin.served_429 >= 2
    finally:
        await bot.stop()


async def test_a_prompt_that_failed_every_attempt_is_shown_again_on_restart(
    standin: StandIn, tmp_path: Path
) -> None:
    """Telegram down for the whole delivery of a Confirm/Cancel prompt: the next start of
    the bot shows it again, and it works."""
    seed = tmp_path / "seed.json"
    (customer,) = write_seed(seed, [52001])
    user = customer.user_id
    db = tmp_path / "bot.db"
    serve = ServeProcess(standin, db, tmp_path, env={"STEPWISE_SHOP_SEED": str(seed)})
    await serve.start()
    try:
        standin.inject_message(user, user, f"where is order {customer.shipping[0]}")
        await until(lambda: len(bot_texts(standin, user)) == 3, what="a first answer")
        standin.fail_next("sendMessage", 50, status=503, chat_id=user)
        standin.inject_message(user, user, f"cancel order {customer.pending[0]}")
        await until(
            lambda: (
                query(db, "SELECT count(*) FROM runs WHERE status = 'paused'") == [(1,)]
                and len(standin.calls("sendMessage", chat_id=user)) >= 3 + 2 + 4
            ),
            what="pause recorded and every delivery attempt failed",
        )
        assert await serve.stop() == 0
        run_id = query(db, "SELECT id FROM runs WHERE status = 'paused'")[0][0]
        assert prompt_for(standin, user, run_id) is None
        standin.clear_faults()
        await serve.start()
        prompt = await until(lambda: prompt_for(standin, user, run_id), what="prompt shown again")
        # Delivered prompts are marked on the run, so later starts do not repeat them.
        noted = "SELECT count(*) FROM events WHERE run_id = ? AND message = ?"
        await until(
            lambda: query(db, noted, run_id, PROMPT_SHOWN_NOTE) == [(1,)],
            what="the prompt noted as shown",
        )
        press(standin, user, prompt, approve=True, user=user)
        await until(
            lambda: any("has been cancelled" in t for t in bot_texts(standin, user)),
            what="cancelled after the restart",
        )
        assert query(db, "SELECT count(*) FROM shop_cancellations") == [(1,)]
    finally:
        await serve.stop()


async def test_a_message_queued_behind_a_slow_run_survives_a_crash(
    standin: StandIn, tmp_path: Path
) -> None:
    seed = tmp_path / "seed.json"
    (customer,) = write_seed(seed, [53001])
    user = customer.user_id
    db = tmp_path / "bot.db"
    slow = {"STEPWISE_SHOP_SEED": str(seed), "STEPWISE_SHOP_LATENCY_MS": "1500"}
    serve = ServeProcess(standin, db, tmp_path, env=slow)
    await serve.start()
    try:
        standin.inject_message(user, user, f"where is order {customer.shipping[0]}")
        await until(lambda: query(db, "SELECT 1 FROM steps WHERE status = 'running'"))
        standin.inject_message(user, user, f"where is order {customer.shipping[1]}")
        second = standin.state.updates[-1].update_id
        await until(lambda: _acked_now(standin, second), what="second message acknowledged")
        await serve.kill()
        serve.env["STEPWISE_SHOP_LATENCY_MS"] = "0"
        await serve.start()
        await until(
            lambda: any(customer.shipping[1] in t for t in bot_texts(standin, user)),
            within=30,
            what="an answer to the message the crash interrupted",
        )
    finally:
        await serve.stop()


def _acked_now(standin: StandIn, update_id: int) -> bool:
    return any(
        c.method == "getUpdates" and int(c.params.get("offset") or 0) > update_id
        for c in standin.state.calls
    )


async def test_an_answer_interrupted_by_a_crash_is_delivered_after_restart(
    standin: StandIn, tmp_path: Path
) -> None:
    seed = tmp_path / "seed.json"
    (customer,) = write_seed(seed, [54001])
    user = customer.user_id
    db = tmp_path / "bot.db"
    env = {"STEPWISE_SHOP_SEED": str(seed), "STEPWISE_SHOP_LATENCY_MS": "400"}
    serve = ServeProcess(standin, db, tmp_path, env=env)
    await serve.start()
    try:
        standin.inject_message(user, user, f"where is order {customer.shipping[0]}")
        await until(lambda: len(bot_texts(standin, user)) == 1, what="the plan shown")
        # The step's message goes through; the answer's call hangs (and would fail).
        standin.fail_next("sendMessage", status=None, delay=0.0, chat_id=user)
        standin.fail_next("sendMessage", status=500, delay=30.0, chat_id=user)
        await until(
            lambda: (
                query(db, "SELECT status FROM runs") == [("completed",)]
                and any(
                    c.method == "sendMessage" and c.status is None
                    for c in standin.calls(chat_id=user)
                )
            ),
            what="run finished, answer in flight",
        )
        await serve.kill()
        standin.clear_faults()
        await serve.start()
        await until(
            lambda: any(
                t.startswith(f"Order {customer.shipping[0]}") for t in bot_texts(standin, user)
            ),
            within=30,
            what="the final answer after the restart",
        )
        await until(
            lambda: (
                query(db, "SELECT count(*) FROM events WHERE kind = 'answer_delivered'") == [(1,)]
            ),
            what="the answer marked delivered",
        )
        answers = [
            t for t in bot_texts(standin, user) if t.startswith(f"Order {customer.shipping[0]}")
        ]
        assert len(answers) == 1
        assert query(db, "SELECT lease_owner FROM runs") == [(None,)]  # nothing owed any more
    finally:
        await serve.stop()


def test_the_timeout_fault_outlasts_ptbs_read_timeout() -> None:
    """Guards the premise above: if PTB's default changes, the timeout test must too."""
    from telegram.request import HTTPXRequest

    assert HTTPXRequest().read_timeout == PTB_READ_TIMEOUT_S
