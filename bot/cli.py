"""`stepwise`: the same agent and database as the bot, from a terminal.

Exit codes: 0 success, 1 the run failed or stopped, 2 bad usage, 3 not found or not
allowed, 4 storage unavailable right now (locked, read-only, full). Errors go to stderr as
one line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pydantic import ValidationError

from agent_core.agent import MAX_REQUEST_CHARS
from agent_core.answers import plan_text, step_progress
from agent_core.http_tools import ToolsConfigError, check_tools, load_tools_config
from agent_core.models import ClaimResult, EventKind, Run, RunEvent, RunStatus
from agent_core.shop import shop_tools
from agent_core.tools import ToolRegistry
from bot.runtime import Runtime, open_runtime
from bot.settings import Settings
from storage.db import StorageUnavailable
from storage.records import TimelineEntry, export_record, run_json

EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_UNAVAILABLE = 0, 1, 2, 3, 4


class CliError(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _is_text(value: str) -> bool:
    """False for argv bytes that were not UTF-8 (Python keeps them as lone surrogates)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def exit_code_for(run: Run) -> int:
    return EXIT_RUN_FAILED if run.status in (RunStatus.FAILED, RunStatus.EXPIRED) else EXIT_OK


def print_run(run: Run, args: argparse.Namespace) -> None:
    if args.json:
        print(json.dumps(run_json(run), ensure_ascii=False))
        return
    print(run.answer or "")
    if run.status is RunStatus.PAUSED:
        print(
            f"\nRun {run.id} is waiting for your confirmation:\n"
            f"  stepwise confirm {run.id} --user {run.user_id}\n"
            f"  stepwise reject {run.id} --user {run.user_id}"
        )


# -- commands ----------------------------------------------------------------------------


async def cmd_ask(rt: Runtime, args: argparse.Namespace) -> int:
    text = args.text
    if len(text) > MAX_REQUEST_CHARS:
        raise CliError(f"the request is longer than {MAX_REQUEST_CHARS} characters", EXIT_USAGE)
    if not _is_text(text):
        raise CliError("the request is not valid UTF-8 text", EXIT_USAGE)
    chat = args.chat if args.chat is not None else args.user
    run = await rt.agent.ask(text, user_id=args.user, chat_id=chat, language_hint=args.lang)
    print_run(run, args)
    return exit_code_for(run)


async def cmd_decide(rt: Runtime, args: argparse.Namespace, approved: bool) -> int:
    outcome = await rt.agent.decide(args.run_id, user_id=args.user, approved=approved)
    if outcome.result is ClaimResult.NOT_FOUND:
        raise CliError(f"no run {args.run_id}", EXIT_NOT_FOUND)
    if outcome.result is ClaimResult.NOT_ALLOWED:
        raise CliError(f"run {args.run_id} belongs to another customer", EXIT_NOT_FOUND)
    if outcome.result is ClaimResult.ALREADY_HANDLED:
        status = outcome.run.status.value if outcome.run else "unknown"
        raise CliError(f"run {args.run_id} was already handled (status: {status})", EXIT_NOT_FOUND)
    assert outcome.run is not None
    print_run(outcome.run, args)
    return exit_code_for(outcome.run)


async def cmd_runs(rt: Runtime, args: argparse.Namespace) -> int:
    status = RunStatus(args.status) if args.status else None
    page = await rt.store.history.list_runs(user_id=args.user, status=status, limit=args.limit)
    if args.json:
        print(json.dumps([item.model_dump(mode="json") for item in page.items], ensure_ascii=False))
        return EXIT_OK
    for item in page.items:
        when = item.created_at.strftime("%Y-%m-%d %H:%M:%S")
        text = item.request_text.replace("\n", " ")
        text = text if len(text) <= 50 else text[:49] + "…"
        print(f"{item.id}  {when}  user {item.user_id:<10}  {item.status.value:<9}  {text}")
    if not page.items:
        print("no runs")
    return EXIT_OK


async def cmd_show(rt: Runtime, args: argparse.Namespace) -> int:
    run = await rt.store.load_run(args.run_id)
    if run is None:
        raise CliError(f"no run {args.run_id}", EXIT_NOT_FOUND)
    timeline = await rt.store.history.timeline(run.id)
    if args.json:
        payload = run_json(run) | {"timeline": [e.model_dump(mode="json") for e in timeline]}
        print(json.dumps(payload, ensure_ascii=False))
        return EXIT_OK
    print(f"run {run.id}  trace {run.trace_id}  user {run.user_id}  chat {run.chat_id}")
    print(f"status {run.status.value}  language {run.language.value}")
    print(f"request: {run.request_text}")
    print()
    for step in run.steps:
        print(step_progress(step, run))
    print()
    for entry in timeline:
        print(format_timeline_entry(entry))
    print()
    print(run.answer or "")
    return EXIT_OK


def format_timeline_entry(entry: TimelineEntry) -> str:
    parts = [entry.at.strftime("%H:%M:%S.%f")[:-3], entry.kind.value]
    if entry.step_id:
        parts.append(f"{entry.step_id}({entry.tool})")
    if entry.attempt:
        parts.append(f"attempt {entry.attempt}")
    if entry.error_type:
        parts.append(f"error={entry.error_type}")
    if entry.decision:
        parts.append(f"decision={entry.decision}")
    if entry.delay_s is not None:
        parts.append(f"backoff={entry.delay_s:.2f}s")
    if entry.message:
        parts.append(f"— {entry.message}")
    return "  ".join(parts)


async def cmd_export(rt: Runtime, args: argparse.Namespace) -> int:
    status = RunStatus(args.status) if args.status else None
    cursor = None
    while True:
        page = await rt.store.history.list_runs(
            status=status, user_id=args.user, before=cursor, limit=200
        )
        for item in page.items:
            run = await rt.store.load_run(item.id)
            if run is None:
                continue
            record = export_record(run, await rt.store.history.timeline(run.id))
            print(json.dumps(record, ensure_ascii=False))
        if page.next_cursor is None:
            return EXIT_OK
        cursor = page.next_cursor


async def cmd_tools_check(settings: Settings, args: argparse.Namespace) -> int:
    """List the tools the agent would use; with --probe, try each read tool once."""
    if settings.tools_path is None:
        print("STEPWISE_TOOLS is not set: the built-in demo shop provides the tools.")
        registry = ToolRegistry(shop_tools(_NoShop()))
        for tool in registry:
            print(
                f"  {tool.name:<18} {tool.risk.value:<5} timeout {tool.timeout_s:g}s  (demo shop)"
            )
        return EXIT_OK
    config = load_tools_config(settings.tools_path)
    return await check_tools(config, probe=args.probe, out=print)


class _NoShop:
    """Stands in for the demo shop when only the tool declarations are listed."""

    async def get_order(self, order_id: str) -> None:
        return None

    async def search_policies(self, query: str, lang: str) -> list[Any]:
        return []

    async def cancel_order(self, order_id: str, user_id: int, idempotency_key: str) -> Any:
        raise NotImplementedError


async def cmd_recover(rt: Runtime, args: argparse.Namespace) -> int:
    runs = await rt.agent.recover()
    for run in runs:
        print(f"{run.id}  {run.status.value}")
    print(f"recovered {len(runs)} run(s)")
    return EXIT_OK


# -- the interactive terminal chat -------------------------------------------------------


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
    progress = TerminalProgress(lambda line: print(line, flush=True))
    rt = await open_runtime(settings, listeners=[progress])
    try:
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
            if not _is_text(text):
                print("bot> Sorry, I couldn't read that text. Please type it again.")
                continue
            try:
                run = await rt.agent.ask(text, user_id=user, chat_id=user)
                while run.status is RunStatus.PAUSED:
                    print("bot> " + (run.answer or "").replace("\n", "\nbot> "), flush=True)
                    reply = await _read_line("Confirm? [y/N] ")
                    approved = (reply or "").strip().lower() in ("y", "yes", "是", "确认")
                    outcome = await rt.agent.decide(run.id, user_id=user, approved=approved)
                    if outcome.run is None:
                        break
                    run = outcome.run
            except StorageUnavailable:
                print("bot> Sorry, I can't proceed right now. Please try again in a moment.")
                continue
            print("bot> " + (run.answer or "").replace("\n", "\nbot> "), flush=True)
    finally:
        await rt.close()


async def _read_line(prompt: str) -> str | None:
    def read() -> str | None:
        try:
            return input(prompt)
        except EOFError:
            return None

    return await asyncio.to_thread(read)


# -- wiring ------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stepwise", description="A customer-service agent that plans, acts and observes."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    ask = sub.add_parser("ask", help="plan and run one request")
    ask.add_argument("text")
    ask.add_argument("--user", type=int, required=True)
    ask.add_argument("--chat", type=int)
    ask.add_argument("--lang", help="language hint, e.g. zh or en")
    ask.add_argument("--json", action="store_true")

    for name, help_text in (("confirm", "approve a paused step"), ("reject", "decline it")):
        cmd = sub.add_parser(name, help=help_text)
        cmd.add_argument("run_id")
        cmd.add_argument("--user", type=int, required=True)
        cmd.add_argument("--json", action="store_true")

    runs = sub.add_parser("runs", help="recent runs, newest first")
    runs.add_argument("--user", type=int)
    runs.add_argument("--status", choices=[s.value for s in RunStatus])
    runs.add_argument("--limit", type=int, default=20)
    runs.add_argument("--json", action="store_true")

    show = sub.add_parser("show", help="one run's full timeline")
    show.add_argument("run_id")
    show.add_argument("--json", action="store_true")

    export = sub.add_parser("export", help="runs as JSON lines, for regression cases")
    export.add_argument("--status", choices=[s.value for s in RunStatus])
    export.add_argument("--user", type=int)

    sub.add_parser("recover", help="finish runs a crash interrupted")

    tools = sub.add_parser("tools", help="the tools the agent uses")
    tools_sub = tools.add_subparsers(dest="tools_command", required=True)
    check = tools_sub.add_parser("check", help="list the configured tools (makes no request)")
    check.add_argument("--probe", action="store_true", help="send a harmless GET to read tools")

    chat = sub.add_parser("chat", help="chat with the agent in this terminal")
    chat.add_argument("--user", type=int)

    serve = sub.add_parser("serve", help="run the Telegram bot (long polling or --webhook-url)")
    serve.add_argument("--webhook-url", help="public https URL Telegram should post updates to")
    serve.add_argument("--webhook-secret", help="secret token Telegram sends with each update")
    serve.add_argument("--listen", default="127.0.0.1", help="webhook listen address")
    serve.add_argument("--port", type=int, default=8443, help="webhook listen port")
    serve.add_argument(
        "--staff-port", type=int, default=8080, help="staff console port (0: no console)"
    )
    serve.add_argument("--staff-listen", default="127.0.0.1", help="staff console address")

    demo = sub.add_parser("demo", help="try the real bot in a browser, no Telegram token needed")
    demo.add_argument("--chat-port", type=int, default=8090, help="chat page port (0: any free)")
    demo.add_argument("--staff-port", type=int, default=8080, help="staff console port")
    demo.add_argument("--bot-api-port", type=int, default=0, help="local Bot API port (0: any)")
    return parser


COMMANDS: dict[str, Callable[[Runtime, argparse.Namespace], Awaitable[int]]] = {
    "ask": cmd_ask,
    "confirm": lambda rt, a: cmd_decide(rt, a, True),
    "reject": lambda rt, a: cmd_decide(rt, a, False),
    "runs": cmd_runs,
    "show": cmd_show,
    "export": cmd_export,
    "recover": cmd_recover,
}


async def dispatch(settings: Settings, args: argparse.Namespace) -> int:
    if args.command == "chat":
        return await cmd_chat(settings, args)
    if args.command == "tools":
        return await cmd_tools_check(settings, args)
    if args.command == "demo":
        from console.demo import run_demo  # imported late: only the demo needs the web stack

        return await run_demo(
            settings,
            chat_port=args.chat_port,
            staff_port=args.staff_port,
            bot_api_port=args.bot_api_port,
        )
    if args.command == "serve":
        from bot.telegram_app import serve  # imported late: only `serve` needs Telegram

        return await serve(settings, args)
    rt = await open_runtime(settings)
    try:
        return await COMMANDS[args.command](rt, args)
    finally:
        await rt.close()


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    args = build_parser().parse_args(argv)
    try:
        settings = Settings()
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        print(f"stepwise: bad setting {where}: {first['msg']}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return asyncio.run(dispatch(settings, args))
    except CliError as exc:
        print(f"stepwise: {exc}", file=sys.stderr)
        return exc.code
    except StorageUnavailable as exc:
        print(f"stepwise: storage unavailable, try again shortly ({exc})", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except ToolsConfigError as exc:
        print(f"stepwise: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
