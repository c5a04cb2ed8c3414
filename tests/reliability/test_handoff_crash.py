"""Human handoff across a real crash (issue 14 item 7): `stepwise serve` processes killed
with SIGKILL while a relay is between "received" and "copied".

The stand-in holds the bot's copyMessage for a few seconds (and then fails it, with no
effect), the process is killed meanwhile: the relay is recorded, the copy never made. The
restarted process copies it exactly once — on its start, and Telegram's redelivery of the
same update (never acknowledged before the kill) finds it already copied — and keeps
relaying both ways for the open handoff.
"""

from __future__ import annotations

from pathlib import Path

from standin import StandIn

from .conftest import DEMO, STAFF, ServeProcess, query, until

FORUM = -1005555555555


BROKEN = "Ada:\nmy parcel arrived broken"


def topic_texts(standin: StandIn, thread: int) -> list[str | None]:
    return [
        m.text for m in standin.chat_messages(FORUM) if m.message_thread_id == thread and m.from_bot
    ]


async def test_sigkill_between_receive_and_copy_loses_nothing_and_doubles_nothing(
    standin: StandIn, tmp_path: Path
) -> None:
    standin.add_chat(FORUM, STAFF, title="Support staff", is_forum=True, first_name="Sam")
    standin.set_bot_rights(FORUM, can_manage_topics=True)
    db = tmp_path / "handoff.db"
    serve = ServeProcess(standin, db, tmp_path, env={"STEPWISE_STAFF_CHAT_ID": str(FORUM)})
    await serve.start()
    try:
        standin.inject_message(DEMO, DEMO, "talk to a person please", first_name="Ada")
        topics = await until(lambda: standin.topics(FORUM), what="the customer's topic")
        thread = int(topics[0]["message_thread_id"])
        await until(lambda: any("Handoff" in (t or "") for t in topic_texts(standin, thread)))

        await until(lambda: standin.bot_messages(DEMO), what="the customer told")
        # The next copy hangs 5 s, then fails without effect: the kill lands in between. A
        # text goes with the customer's name above it (issue 23 #8): a sendMessage.
        standin.fail_next("sendMessage", status=500, delay=5.0)
        calls = len(standin.state.calls)
        standin.inject_message(DEMO, DEMO, "my parcel arrived broken")
        await until(
            lambda: any(c.method == "sendMessage" for c in standin.state.calls[calls:]),
            what="the copy under way",
        )
        pending = "SELECT count(*) FROM handoff_relays WHERE copied_at IS NULL"
        assert query(db, pending) == [(1,)]  # recorded before the copy
        await serve.kill()
        assert BROKEN not in topic_texts(standin, thread)

        await serve.start()
        await until(
            lambda: BROKEN in topic_texts(standin, thread),
            what="the interrupted relay copied after the restart",
        )
        await until(lambda: query(db, pending) == [(0,)], what="the relay marked")
        # The open handoff keeps relaying both ways in the new process.
        standin.inject_message(FORUM, STAFF, "Sorry! Sending a new one.", message_thread_id=thread)
        await until(
            lambda: any(m.text == "Sorry! Sending a new one." for m in standin.bot_messages(DEMO)),
            what="the staff reply after the restart",
        )
        standin.inject_message(DEMO, DEMO, "thank you")
        await until(
            lambda: "Ada:\nthank you" in topic_texts(standin, thread), what="customer → topic"
        )
        assert topic_texts(standin, thread).count(BROKEN) == 1
        counts = "SELECT to_staff, to_customer FROM handoffs"
        await until(lambda: query(db, counts) == [(2, 1)], what="each copy counted once")
    finally:
        await serve.stop()
