"""`stepwise chat`: the agent in a terminal, as the demo customer.

The plan and each step's progress are printed as they happen, like the bot's messages;
Confirm/Cancel buttons become a [y/N] prompt. On start it finishes runs an earlier Ctrl-C
or crash left running (as `serve` does); Ctrl-C ends it at once, even at the prompt.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import secrets
import threading
from collections.abc import Callable

from agent_core.agent import MAX_REQUEST_CHARS
from agent_core.answers.compose import compose_answer, plan_text, step_progress
from agent_core.models import EventKind, Language, Run, RunEvent, RunStatus, utcnow
from bot.handoff import Customer, is_handoff_request, record_handoff
from bot.texts import say
from stepwise.commands import EXIT_OK, is_text
from stepwise.runtime import Runtime, open_runtime
from stepwise.settings import Settings
from storage.db import StorageUnavailable
from storage.handoffs import Trigger


class TerminalProgress:
    """Prints the plan and each step's progress as it happens, like the bot's messages."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self._write = write

    async def __call__(self, run: Run, event: RunEvent) -> None:
        if event.kind is EventKind.RUN_PLANNED and run.steps:
            self._write(plan_text(run))
        elif event.step_id and event.kind not in (EventKind.STEP_APPROVED,):
            self._write("  " + step_progress(run.step(event.step_id), run))


async def cmd_chat(settings: Settings, args: argparse.Namespace) -> int:
    """Chat as the demo customer. Buttons become a [y/N] prompt."""
    user = args.user if args.user is not None else settings.demo_user_id
    rt = await open_runtime(settings)
    try:
        # Runs a Ctrl-C (or a crash) left `running` are finished first, quietly: the
        # terminal shows only this customer's conversation.
        recovered = await rt.agent.recover()
        if recovered:
            print(f"stepwise chat: finished {len(recovered)} interrupted run(s)", flush=True)
        rt.add_listener(TerminalProgress(lambda line: print(line, flush=True)))
        print(
            f"stepwise chat — you are customer {user}. Try: 订单 A1001 到哪了 / "
            "cancel order A1003 / what is your refund policy. Ctrl-D to quit.",
            flush=True,
        )
        while True:
            line = await _read_line("you> ")
            if line is None:
                print()
                return EXIT_OK
            text = line.strip()
            if not text:
                continue
            if len(text) > MAX_REQUEST_CHARS:
                print(f"bot> That message is too long (over {MAX_REQUEST_CHARS} characters).")
                continue
            if not is_text(text):
                print("bot> Sorry, I couldn't read that text. Please type it again.")
                continue
            try:
                run = await rt.agent.ask(text, user_id=user, chat_id=user)
                while run.status is RunStatus.PAUSED:
                    approved = await _confirm(rt, run)
                    outcome = await rt.agent.decide(run.id, user_id=user, approved=approved)
                    if outcome.run is None:
                        break
                    run = outcome.run
            except StorageUnavailable:
                print("bot> Sorry, I can't proceed right now. Please try again in a moment.")
                continue
            answer = await _handoff_answer(rt, run) if is_handoff_request(run) else run.answer
            print("bot> " + (answer or "").replace("\n", "\nbot> "), flush=True)
            if run.clarify is not None and run.clarify.options:
                await _choose(rt, run, user)
    finally:
        await rt.close()


async def _handoff_answer(rt: Runtime, run: Run) -> str:
    """The customer asked for a person: the handoff is recorded for the Telegram bot (which
    opens the customer's topic on its next start), and the answer says where a person will
    reply — or, with no staff group configured, that nobody can yet."""
    # The name the customer last wrote to the bot with, if ever (staff never read an id).
    name = await rt.store.handoffs.name_of(run.user_id)
    customer = Customer(run.chat_id, run.user_id, name, run.language)
    now = utcnow()
    handoff, new = await record_handoff(
        rt.store.handoffs, customer, Trigger.INTENT, run, now=now, handoff_id=secrets.token_hex(6)
    )
    if rt.settings.staff_chat_id is None:
        if new:  # as the bot does: nobody can take it, so it does not stay open
            await rt.store.handoffs.close(handoff.id, by=None, at=now)
        return say("handoff_unstaffed", run.language)
    return say("handoff_cli", run.language)


async def _choose(rt: Runtime, run: Run, user: int) -> None:
    """A clarifying question's options as a numbered choice (the bot shows buttons).

    Choosing continues as if the customer had typed that option; anything else goes back
    to the prompt, where the customer can simply write what they meant.
    """
    assert run.clarify is not None
    options = run.clarify.options
    for number, option in enumerate(options, start=1):
        print(f"  {number}. {option.label}", flush=True)
    reply = (await _read_line(f"Choose 1-{len(options)} (Enter to skip): ") or "").strip()
    if not reply.isdigit() or not 1 <= int(reply) <= len(options):
        return
    outcome = await rt.agent.choose(run.id, user_id=user, option=int(reply) - 1)
    answered = outcome.run
    while answered is not None and answered.status is RunStatus.PAUSED:
        approved = await _confirm(rt, answered)
        answered = (await rt.agent.decide(answered.id, user_id=user, approved=approved)).run
    if answered is not None and answered.id != run.id:
        print("bot> " + (answered.answer or "").replace("\n", "\nbot> "), flush=True)


CONFIRM_PROMPT = {Language.ZH: "确认吗？[y/N] ", Language.EN: "Confirm? [y/N] "}
YES = ("y", "yes", "是", "是的", "确认", "好")


async def _confirm(rt: Runtime, run: Run) -> bool:
    """A paused run's prompt, asked as a typed y/n in the customer's language (the bot's
    buttons are not here, so the sentence says what to answer, not what to press)."""
    prompt = compose_answer(run, rt.agent.executor.catalog, "reply")
    print("bot> " + prompt.replace("\n", "\nbot> "), flush=True)
    reply = await _read_line(CONFIRM_PROMPT[run.language])
    return (reply or "").strip().lower() in YES


async def _read_line(prompt: str) -> str | None:
    """One line from the terminal (None at end of input), read in a daemon thread.

    Not `asyncio.to_thread`: on Ctrl-C asyncio.run waits for its executor's threads, and
    the one blocked in input() would hold the chat open until the next Enter.
    """
    loop = asyncio.get_running_loop()
    line: asyncio.Future[str | None] = loop.create_future()

    def deliver(value: str | None) -> None:
        if not line.done():
            line.set_result(value)

    def read() -> None:
        try:
            value: str | None = input(prompt)
        except (EOFError, OSError, ValueError):
            value = None
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting
            loop.call_soon_threadsafe(deliver, value)

    threading.Thread(target=read, name="stepwise-chat-input", daemon=True).start()
    return await line
