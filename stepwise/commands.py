"""The one-shot `stepwise` commands: ask, confirm/reject, runs, show, export, recover,
migrate, tools check. Each prints its result and returns the exit code (see `stepwise.cli`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable

from agent_core.agent import MAX_REQUEST_CHARS
from agent_core.answers.compose import Catalog, compose_answer, step_progress
from agent_core.catalog.builtin import CATALOG
from agent_core.catalog.spec import catalog_of
from agent_core.http import check_tools_file
from agent_core.models import ClaimResult, Run, RunStatus
from stepwise.runtime import Runtime
from stepwise.settings import Settings
from stepwise.tools_check import catalog_lines, print_tools_check
from storage.records import (
    case_record,
    export_record,
    format_timeline_entry,
    interpretation_json,
    run_json,
)
from storage.store import migrate_database

EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_UNAVAILABLE = 0, 1, 2, 3, 4


class CliError(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def is_text(value: str) -> bool:
    """False for argv bytes that were not UTF-8 (Python keeps them as lone surrogates)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def exit_code_for(run: Run) -> int:
    return EXIT_RUN_FAILED if run.status in (RunStatus.FAILED, RunStatus.EXPIRED) else EXIT_OK


def print_run(run: Run, args: argparse.Namespace, catalog: Catalog = CATALOG) -> None:
    if args.json:
        payload = run_json(run)
        if run.status is RunStatus.PAUSED:
            # The stored answer is the one a chat shows with buttons ("press … below");
            # here there are none: it says which command answers, as the text output does.
            payload["answer"] = compose_answer(run, catalog, "command")
        print(json.dumps(payload, ensure_ascii=False))
        return
    if run.status is RunStatus.PAUSED:
        # No buttons here: the prompt says which command answers it.
        print(compose_answer(run, catalog, "command"))
    else:
        print(run.answer or "")
    if run.clarify is not None and run.clarify.options:
        for number, option in enumerate(run.clarify.options, start=1):
            print(f"  {number}. {option.label}: stepwise ask {json.dumps(option.text)}")
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
    if not is_text(text):
        raise CliError("the request is not valid UTF-8 text", EXIT_USAGE)
    chat = args.chat if args.chat is not None else args.user
    run = await rt.agent.ask(text, user_id=args.user, chat_id=chat, language_hint=args.lang)
    print_run(run, args, rt.agent.executor.catalog)
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
    print_run(outcome.run, args, rt.agent.executor.catalog)
    return exit_code_for(outcome.run)


async def cmd_runs(rt: Runtime, args: argparse.Namespace) -> int:
    status = RunStatus(args.status) if args.status else None
    page = await rt.store.history.list_runs(
        user_id=args.user,
        status=status,
        limit=args.limit,
        unsupported=getattr(args, "unsupported", False),
    )
    if args.json:
        print(json.dumps([item.model_dump(mode="json") for item in page.items], ensure_ascii=False))
        return EXIT_OK
    for item in page.items:
        when = item.created_at.strftime("%Y-%m-%d %H:%M:%S")
        text = item.request_text.replace("\n", " ")
        text = text if len(text) <= 50 else text[:49] + "…"
        # A run with unsupported parts is never shown as a clean success.
        shown = item.status.value + ("*" if item.unsupported else "")
        print(f"{item.id}  {when}  user {item.user_id:<10}  {shown:<9}  {text}")
    if not page.items:
        print("no runs")
    elif any(item.unsupported for item in page.items):
        print("* part of the request was something no tool serves (stepwise show RUN_ID)")
    return EXIT_OK


async def cmd_show(rt: Runtime, args: argparse.Namespace) -> int:
    run = await rt.store.load_run(args.run_id)
    if run is None:
        raise CliError(f"no run {args.run_id}", EXIT_NOT_FOUND)
    timeline = await rt.store.history.timeline(run.id)
    if args.json:
        payload = run_json(run) | {
            "interpretation": interpretation_json(run),
            "timeline": [e.model_dump(mode="json") for e in timeline],
        }
        print(json.dumps(payload, ensure_ascii=False))
        return EXIT_OK
    print(f"run {run.id}  trace {run.trace_id}  user {run.user_id}  chat {run.chat_id}")
    print(f"status {run.status.value}  language {run.language.value}")
    print(f"request: {run.request_text}")
    if (understood := interpretation_json(run)) is not None:
        print(f"understood: {json.dumps(understood, ensure_ascii=False)}")
    print()
    for step in run.steps:
        print(step_progress(step, run))
    print()
    for entry in timeline:
        print(format_timeline_entry(entry))
    print()
    print(run.answer or "")
    return EXIT_OK


async def cmd_export(rt: Runtime, args: argparse.Namespace) -> int:
    """Runs as JSON lines; with --cases, as eval cases (tests/eval format) to label."""
    status = RunStatus(args.status) if args.status else None
    cursor = None
    while True:
        page = await rt.store.history.list_runs(
            status=status,
            user_id=args.user,
            before=cursor,
            limit=200,
            unsupported=getattr(args, "unsupported", False),
        )
        for item in page.items:
            run = await rt.store.load_run(item.id)
            if run is None:
                continue
            if getattr(args, "cases", False):
                record = case_record(run)
            else:
                record = export_record(run, await rt.store.history.timeline(run.id))
            print(json.dumps(record, ensure_ascii=False))
        if page.next_cursor is None:
            return EXIT_OK
        cursor = page.next_cursor


async def cmd_tools(settings: Settings, args: argparse.Namespace) -> int:
    """`tools`: the catalog in use; `tools check [--probe]`: the tools file, completely."""
    if settings.tools_path is None:
        print("STEPWISE_TOOLS is not set: the built-in demo shop provides the tools.")
        served = dict.fromkeys(CATALOG, "demo shop")
        for line in catalog_lines(CATALOG, served):
            print("  " + line)
        return EXIT_OK
    config, problems = check_tools_file(settings.tools_path)
    if config is None:
        for line in problems:
            print(line)
        return EXIT_USAGE
    if args.tools_command == "check":
        return await print_tools_check(config, probe=args.probe, out=print)
    catalog = catalog_of([*CATALOG.values(), *config.catalog().values()])
    served = {tool.name: f"{tool.method} {tool.url}" for tool in config.tools}
    print(f"tools from {config.source}:")
    for line in catalog_lines(catalog, served):
        print("  " + line)
    return EXIT_OK


async def cmd_migrate(settings: Settings, args: argparse.Namespace) -> int:
    """Apply the migrations `STEPWISE_DB` has not seen yet (opening a store does it too;
    operators run this before starting new processes on an upgraded version)."""
    done = await migrate_database(settings.db_path, busy_timeout_s=settings.db_timeout_s)
    if done.after > done.known:
        print(
            f"{done.backend} schema is at version {done.after}, newer than this stepwise "
            f"knows ({done.known}): nothing applied"
        )
        return EXIT_OK
    applied = done.after - done.before
    print(f"{done.backend} schema at version {done.after} ({applied} migration(s) applied)")
    return EXIT_OK


async def cmd_recover(rt: Runtime, args: argparse.Namespace) -> int:
    runs = await rt.agent.recover()
    for run in runs:
        print(f"{run.id}  {run.status.value}")
    print(f"recovered {len(runs)} run(s)")
    return EXIT_OK


COMMANDS: dict[str, Callable[[Runtime, argparse.Namespace], Awaitable[int]]] = {
    "ask": cmd_ask,
    "confirm": lambda rt, a: cmd_decide(rt, a, True),
    "reject": lambda rt, a: cmd_decide(rt, a, False),
    "runs": cmd_runs,
    "show": cmd_show,
    "export": cmd_export,
    "recover": cmd_recover,
}
