"""`stepwise`: the command line, the entry point of every way to run the product.

Exit codes: 0 success, 1 the run failed or stopped, 2 bad usage or configuration (a
bad setting, a STEPWISE_DB that can never be a database), 3 not found or not allowed,
4 unavailable right now (storage locked, read-only or full; Telegram unreachable at
start). Errors go to stderr as one line.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from agent_core.ids import BadId, IdKind, telegram_id
from agent_core.models import RunStatus
from stepwise.output import silence

if TYPE_CHECKING:
    from stepwise.settings import Settings

# Everything else is imported where a command needs it (issue 23 #12): `stepwise --help`
# and the one-shot commands must not pay for the model client (openai, 1.5 s), Telegram,
# the web stack or the Postgres driver they do not use.

# What a shell reports for a command killed by SIGPIPE (128 + 13).
EXIT_BROKEN_PIPE = 141


def port(text: str) -> int:
    """A TCP port for argparse: 0-65535 (a bigger one was an OverflowError from bind())."""
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{number} is not a port (0-65535)")
    return number


class _Parser(argparse.ArgumentParser):
    """argparse, whose usage errors are one JSON line in JSON mode (`stepwise.logs`)."""

    def error(self, message: str) -> NoReturn:
        from stepwise.logs import json_requested, problem

        if not json_requested():
            super().error(message)
        problem(f"{self.prog}: {message} (see {self.prog} --help)")
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="stepwise", description="A customer-service agent that plans, acts and observes."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    ask = sub.add_parser("ask", help="plan and run one request")
    ask.add_argument("text")
    ask.add_argument("--user", required=True, metavar="USER_ID")
    ask.add_argument("--chat", metavar="CHAT_ID")
    ask.add_argument("--lang", help="language hint, e.g. zh or en")
    ask.add_argument("--json", action="store_true")

    for name, help_text in (("confirm", "approve a paused step"), ("reject", "decline it")):
        cmd = sub.add_parser(name, help=help_text)
        cmd.add_argument("run_id")
        cmd.add_argument("--user", required=True, metavar="USER_ID")
        cmd.add_argument("--json", action="store_true")

    runs = sub.add_parser("runs", help="recent runs, newest first")
    runs.add_argument("--user", metavar="USER_ID")
    runs.add_argument("--status", choices=[s.value for s in RunStatus])
    runs.add_argument("--limit", type=int, default=20)
    runs.add_argument(
        "--unsupported", action="store_true", help="only runs with parts no tool serves"
    )
    runs.add_argument("--json", action="store_true")

    show = sub.add_parser("show", help="one run's full timeline")
    show.add_argument("run_id")
    show.add_argument("--json", action="store_true")

    export = sub.add_parser("export", help="runs as JSON lines, for regression cases")
    export.add_argument("--status", choices=[s.value for s in RunStatus])
    export.add_argument("--user", metavar="USER_ID")
    export.add_argument("--cases", action="store_true", help="as eval cases for a person to label")
    export.add_argument("--unsupported", action="store_true", help="only flagged runs")

    sub.add_parser("recover", help="finish runs a crash interrupted")
    sub.add_parser("migrate", help="bring the database schema (STEPWISE_DB) up to date, then exit")

    evaluate = sub.add_parser("eval", help="score the planner on labelled cases")
    evaluate.add_argument(
        "file", nargs="*", help="case files, one split each (default: the splits in tests/eval/)"
    )
    evaluate.add_argument("--planner", choices=["rule", "model"], default="rule")
    evaluate.add_argument(
        "--backend",
        choices=["lexical", "local", "endpoint"],
        help="recognition by meaning: the words alone, the local model, or the endpoint "
        "(default: STEPWISE_EMBEDDINGS)",
    )
    evaluate.add_argument("--json", action="store_true")
    evaluate.add_argument("--strict", action="store_true", help="compare topics too")
    evaluate.add_argument(
        "--unseal",
        action="store_true",
        help="show the held-out split's missed texts (for its author; never when tuning)",
    )

    tools = sub.add_parser("tools", help="the catalog of tools the agent uses")
    tools_sub = tools.add_subparsers(dest="tools_command")
    check = tools_sub.add_parser(
        "check", help="check the tools file completely (makes no request unless --probe)"
    )
    check.add_argument("--probe", action="store_true", help="send a harmless GET to read tools")

    doctor = sub.add_parser(
        "doctor",
        help="check this deployment (Telegram, staff group, database, tools, model, clock)",
    )
    doctor.add_argument(
        "--webhook-url",
        help="the webhook URL serve is given (default STEPWISE_WEBHOOK_URL; none: polling)",
    )

    chat = sub.add_parser("chat", help="chat with the agent in this terminal")
    chat.add_argument("--user", metavar="USER_ID")

    serve = sub.add_parser("serve", help="run the Telegram bot (long polling or --webhook-url)")
    _serve_flags(serve)
    serve.add_argument(
        "--staff-port", type=port, default=8080, help="staff console port (0: no console)"
    )

    demo = sub.add_parser("demo", help="try the real bot in a browser, no Telegram token needed")
    _demo_flags(demo)
    demo.add_argument("--staff-port", type=port, default=8080, help="staff console port")

    run = sub.add_parser(
        "run",
        help="`make run`: serve with a TELEGRAM_BOT_TOKEN (environment or .env), else demo",
    )
    _serve_flags(run)
    _demo_flags(run)
    run.add_argument("--staff-port", type=port, default=8080, help="staff console port")

    standin = sub.add_parser("standin", help="serve the local Bot API stand-in (tests, demos)")
    standin.add_argument("--host", default="127.0.0.1")
    standin.add_argument("--port", type=port, default=8081, help="0 picks a free port")
    standin.add_argument("--token", default=None, help="default: the stand-in's test token")
    standin.add_argument(
        "--per-chat-limit",
        type=int,
        default=3,
        help="messages/edits a chat may burst, then one per second (Telegram: about 3)",
    )
    standin.add_argument("--group-limit", type=int, default=20, help="messages per minute")
    standin.add_argument("--global-limit", type=int, default=30, help="messages per second")
    standin.add_argument(
        "--callback-query-ttl", type=float, default=None, help="seconds to answer a button"
    )
    return parser


def _serve_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--webhook-url", help="public https URL Telegram should post updates to")
    parser.add_argument(
        "--webhook-secret",
        help="secret Telegram sends with each update (1-256 of A-Z a-z 0-9 _ -; default: random)",
    )
    parser.add_argument("--listen", default="127.0.0.1", help="webhook listen address")
    parser.add_argument("--port", type=port, default=8443, help="webhook listen port")
    parser.add_argument("--staff-listen", default="127.0.0.1", help="staff console address")
    parser.add_argument(
        "--health-port",
        type=int,
        default=None,
        help="/healthz, /readyz, /metrics port (0: off; default STEPWISE_HEALTH_PORT, 0)",
    )
    parser.add_argument(
        "--health-listen",
        default=None,
        help="health address (default STEPWISE_HEALTH_LISTEN, 127.0.0.1)",
    )


def _demo_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chat-port", type=port, default=8090, help="chat page port (0: any)")
    parser.add_argument("--bot-api-port", type=port, default=0, help="local Bot API port (0: any)")


# The options that take a Telegram id: parsed as text and checked by
# `agent_core.ids.telegram_id` in `dispatch` (argparse's own error would print its usage
# too; a bad id is one line, like a bad setting).
ID_OPTIONS: tuple[tuple[str, str, IdKind], ...] = (
    ("user", "--user", "user"),
    ("chat", "--chat", "chat"),
)


def id_problem(args: argparse.Namespace) -> str | None:
    """Turn the id options of `args` into ints, or say (one line) which one is not an id."""
    for attr, flag, kind in ID_OPTIONS:
        value = getattr(args, attr, None)
        if value is None:
            continue
        try:
            setattr(args, attr, telegram_id(value, kind))
        except BadId as exc:
            text = str(value)
            shown = text if text.isprintable() and 0 < len(text) <= 30 else repr(text[:30])
            return f"{flag} {shown}: {exc}"
    return None


def chosen_command(settings: Settings, command: str) -> str:
    """What `run` (`make run`) means: `serve` when the settings the app reads (the
    environment or `.env`) have a Telegram token, else the browser `demo`."""
    if command != "run":
        return command
    return "serve" if settings.token() else "demo"


async def _serve_or_demo(settings: Settings, args: argparse.Namespace) -> int:
    """`serve` and `demo`: the only commands that need Telegram and the web stack.

    Imported here, not at the top, for start-up time only (there is no cycle to dodge):
    every one-shot command (`ask`, `confirm`, `runs`, ...) would otherwise load PTB,
    Starlette, uvicorn and aiohttp first, which doubles its start-up (0.45 s → 0.9 s idle).
    """
    if chosen_command(settings, args.command) == "demo":
        from stepwise.demo import run_demo

        return await run_demo(
            settings,
            chat_port=args.chat_port,
            staff_port=args.staff_port,
            bot_api_port=args.bot_api_port,
        )
    from stepwise.serve import ServeOptions, serve

    secret = settings.webhook_secret.get_secret_value() if settings.webhook_secret else None
    options = ServeOptions(
        webhook_url=args.webhook_url or settings.webhook_url or None,
        webhook_secret=args.webhook_secret or secret or None,
        listen=args.listen,
        port=args.port,
        staff_port=args.staff_port,
        staff_listen=args.staff_listen,
        health_port=settings.health_port if args.health_port is None else args.health_port,
        health_listen=args.health_listen or settings.health_listen,
    )
    return await serve(settings, options)


def _serve_standin(args: argparse.Namespace) -> int:
    """`standin`: a test tool that reads no settings and opens no database (imported late,
    like `serve`, for start-up time)."""
    from standin import DEFAULT_TOKEN, FloodLimits
    from stepwise.local_api import StandInOptions, serve_standin

    options = StandInOptions(
        host=args.host,
        port=args.port,
        token=args.token or DEFAULT_TOKEN,
        flood=FloodLimits(
            per_chat=args.per_chat_limit, per_group=args.group_limit, overall=args.global_limit
        ),
        callback_query_ttl=args.callback_query_ttl,
    )
    try:
        return asyncio.run(serve_standin(options))
    except KeyboardInterrupt:
        return 130


async def dispatch(settings: Settings, args: argparse.Namespace) -> int:
    from stepwise.commands import COMMANDS, EXIT_USAGE, CliError, cmd_migrate, cmd_tools
    from stepwise.runtime import open_runtime

    problem = id_problem(args)
    if problem is not None:
        raise CliError(problem, EXIT_USAGE)
    if args.command == "chat":
        from stepwise.chat import cmd_chat

        return await cmd_chat(settings, args)
    if args.command == "tools":
        return await cmd_tools(settings, args)
    if args.command == "doctor":
        from stepwise.doctor import run_doctor  # PTB and httpx: loaded only when needed

        return await run_doctor(settings, webhook_url=args.webhook_url or settings.webhook_url)
    if args.command == "migrate":
        return await cmd_migrate(settings, args)
    if args.command == "eval":
        from stepwise.evaluate import run_eval

        return await run_eval(settings, args)
    if args.command in ("demo", "serve", "run"):
        return await _serve_or_demo(settings, args)
    rt = await open_runtime(settings)
    try:
        return await COMMANDS[args.command](rt, args)
    finally:
        await rt.close()


def main(argv: Sequence[str] | None = None) -> int:
    """The command, its output flushed here: a reader that went away (`stepwise export |
    head -1`) has what it wanted. As Unix tools do, stop quietly with 128 + SIGPIPE (a
    pipe's buffer is flushed at exit too, so it is flushed here to catch that as well);
    never a traceback."""
    try:
        code = _main(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        silence(sys.stdout)
        return EXIT_BROKEN_PIPE
    return code


def _main(argv: Sequence[str] | None) -> int:
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    from stepwise.logs import configure_logging, json_requested, problem

    if json_requested():
        # JSON from the first line: a usage error or a bad setting is read by the same log
        # shipper as everything after (the settings, read below, say it again).
        configure_logging("json", "WARNING")
    args = build_parser().parse_args(argv)
    if args.command == "standin":
        return _serve_standin(args)
    from agent_core.http import ToolsConfigError
    from stepwise.commands import EXIT_UNAVAILABLE, EXIT_USAGE, CliError
    from stepwise.dbpath import db_path_problem
    from stepwise.evaluate import EvalError
    from stepwise.secrecy import hide_settings_secrets
    from stepwise.settings import BadSettings, load_settings
    from storage.db import StorageUnavailable
    from storage.shop.seed import SeedError
    from storage.store import is_postgres_url

    try:
        settings = load_settings()
    except BadSettings as exc:
        problem(str(exc))
        return EXIT_USAGE
    # Before any command runs, so before its first request: whatever path a command takes
    # to Telegram or a database, httpx's and the drivers' log lines carry no secret.
    hide_settings_secrets(settings)
    configure_logging(settings.log_format, settings.log_level)
    if args.command not in ("tools", "doctor") and not is_postgres_url(settings.db_path):
        # Every other command opens the database; a SQLite path can be checked up front.
        problem_text = db_path_problem(Path(settings.db_path))
        if problem_text is not None:
            problem(problem_text)
            return EXIT_USAGE
    try:
        return asyncio.run(dispatch(settings, args))
    except CliError as exc:
        problem(str(exc))
        return exc.code
    except StorageUnavailable as exc:
        problem(f"storage unavailable, try again shortly ({exc})")
        return EXIT_UNAVAILABLE
    except (ToolsConfigError, EvalError) as exc:
        problem(str(exc))
        return EXIT_USAGE
    except SeedError as exc:
        problem(f"STEPWISE_SHOP_SEED: {exc}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
