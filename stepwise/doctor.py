"""`stepwise doctor`: check a deployment, one line per check, and say what to do.

It reads the same settings `serve` reads and asks what `serve` would need: Telegram
(`getMe` for the token, `getWebhookInfo` against the configured webhook URL or long
polling), the staff group (`bot.handoff.staff_chat_problem`, the start-up check of the
bot) and the staff ids, the database (reachable, schema current, a write rolled back:
`storage.probe`), the catalog (loads; read tools probed as `tools check --probe` does),
the model endpoint when `STEPWISE_PLANNER=model` (its models list), and PostgreSQL's
clock against ours (leases compare clocks).

Each line starts ✔ (fine), ✘ (fails: the exit status is 1) or – (not checked, and why).
No traceback: a check that raises is one ✘ line. Nothing secret is printed: every line is
stripped of the token, keys and passwords the settings hold (`Redactor`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

import httpx
from telegram import Bot
from telegram.error import InvalidToken, TelegramError

from agent_core.http import (
    ConfiguredTool,
    MissingTool,
    ProbeResult,
    check_tools,
    check_tools_file,
)
from bot.handoff import StaffChatFacts, staff_chat_facts, staff_chat_problem
from stepwise.dbpath import db_path_problem
from stepwise.secrecy import settings_secrets
from stepwise.settings import TOKEN_SHAPE, Settings
from stepwise.tools_check import check_line
from storage.db import StorageUnavailable
from storage.probe import DatabaseProbe, probe_database
from storage.store import is_postgres_url

CLOCK_SKEW_MAX_S = 1.0
WEBHOOK_ERROR_RECENT_S = 3600
MEMBER_STATUSES = ("creator", "administrator", "member", "restricted")


class Mark(StrEnum):
    OK = "✔"
    FAIL = "✘"
    SKIP = "–"


@dataclass(frozen=True)
class Line:
    name: str
    mark: Mark
    text: str

    def render(self) -> str:
        return f"{self.mark.value} {self.name}: {self.text}"


def ok(name: str, text: str) -> Line:
    return Line(name, Mark.OK, text)


def fail(name: str, text: str) -> Line:
    return Line(name, Mark.FAIL, text)


def skip(name: str, text: str) -> Line:
    return Line(name, Mark.SKIP, text)


class Redactor:
    """Removes every secret the settings hold from a line, whole or in part."""

    def __init__(self, settings: Settings, extra: Iterable[str] = ()) -> None:
        found = settings_secrets(settings)
        found += list(extra)
        # Longest first, so a secret containing another is removed whole.
        self.secrets = sorted({s for s in found if len(s) >= 4}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "[REDACTED]")
        return text


# -- Telegram --------------------------------------------------------------------------------


def webhook_line(
    expected_base: str | None,
    url: str,
    pending: int,
    last_error: tuple[datetime, str] | None,
    now: datetime,
) -> Line:
    """What getWebhookInfo said, against what this deployment is configured for."""
    name = "webhook"
    if not expected_base:
        if url:
            return fail(
                name,
                f"Telegram posts updates to {url}, but this deployment long-polls (no "
                "STEPWISE_WEBHOOK_URL or --webhook-url): set that URL, or start `stepwise "
                "serve`, whose poller deletes the webhook",
            )
        return ok(name, f"long polling, no webhook set; {pending} update(s) waiting at Telegram")
    expected = expected_base.rstrip("/") + "/telegram"
    if url != expected:
        have = url or "no webhook (long polling)"
        return fail(
            name,
            f"Telegram has {have}, this deployment expects {expected}: start `stepwise serve` "
            "(it sets the webhook), or correct STEPWISE_WEBHOOK_URL",
        )
    if last_error is not None:
        when, message = last_error
        ago = (now - when).total_seconds()
        if ago < WEBHOOK_ERROR_RECENT_S:
            return fail(
                name,
                f"{expected}; the last delivery failed {ago / 60:.0f} min ago ({message}): "
                "check the reverse proxy, its TLS certificate and that serve listens",
            )
    return ok(name, f"{expected}; {pending} update(s) pending")


async def telegram_lines(
    settings: Settings, webhook_url: str | None, *, bot: Bot | None = None
) -> list[Line]:
    """The token, the webhook, the staff group and the staff ids."""
    token = settings.token()
    lines: list[Line] = []
    not_checked = "not checked: no usable token"
    if not token:
        lines.append(fail("token", "TELEGRAM_BOT_TOKEN is not set: create a bot with @BotFather"))
    elif not TOKEN_SHAPE.match(token):
        lines.append(fail("token", "TELEGRAM_BOT_TOKEN is malformed (expected 123456:ABC...)"))
    if lines:
        return [
            *lines,
            skip("webhook", not_checked),
            skip("staff group", not_checked),
            *staff_id_lines(settings.staff_ids, None, {}),
        ]
    assert token is not None
    base = settings.telegram_api_base_url.rstrip("/")
    bot = bot or Bot(token, base_url=base, base_file_url=base.removesuffix("/bot") + "/file/bot")
    try:
        await bot.initialize()  # getMe
    except InvalidToken:
        return [
            fail("token", f"Telegram ({base}) rejected TELEGRAM_BOT_TOKEN: copy it again from "
                 "@BotFather"),
            skip("webhook", not_checked),
            skip("staff group", not_checked),
            *staff_id_lines(settings.staff_ids, None, {}),
        ]  # fmt: skip
    except TelegramError as exc:
        return [
            fail("token", f"Telegram unreachable at {base} ({exc}): check the network and "
                 "TELEGRAM_API_BASE_URL"),
            skip("webhook", "not checked: Telegram unreachable"),
            skip("staff group", "not checked: Telegram unreachable"),
            *staff_id_lines(settings.staff_ids, None, {}),
        ]  # fmt: skip
    try:
        lines.append(ok("token", f"@{bot.username} (id {bot.id}) answers getMe at {base}"))
        lines.append(await _webhook(bot, webhook_url))
        facts: StaffChatFacts | None = None
        members: dict[int, str] = {}
        chat_id = settings.staff_chat_id
        if chat_id is None:
            lines.append(skip("staff group", _unset_staff_chat()))
        else:
            facts = await staff_chat_facts(bot, chat_id)
            problem = staff_chat_problem(chat_id, facts, has_staff=True)
            if problem is None:
                lines.append(ok("staff group", f"{chat_id}: a forum, the bot manages topics"))
                members = await _members(bot, chat_id, settings.staff_ids)
            else:
                lines.append(fail("staff group", problem.removeprefix("human handoff: ")))
        lines += staff_id_lines(settings.staff_ids, chat_id if members else None, members)
    finally:
        await bot.shutdown()
    return lines


def _unset_staff_chat() -> str:
    problem = staff_chat_problem(None, None) or ""
    return "not checked: " + problem.removeprefix("human handoff: ")


async def _webhook(bot: Bot, webhook_url: str | None) -> Line:
    try:
        info = await bot.get_webhook_info()
    except TelegramError as exc:
        return fail("webhook", f"getWebhookInfo failed ({exc})")
    last_error = None
    if info.last_error_date is not None:
        last_error = (info.last_error_date, info.last_error_message or "")
    return webhook_line(
        webhook_url, info.url or "", info.pending_update_count, last_error, datetime.now(UTC)
    )


async def _members(bot: Bot, chat_id: int, staff_ids: frozenset[int]) -> dict[int, str]:
    """Each staff id's standing in the staff group ("left" when Telegram knows nothing)."""
    found: dict[int, str] = {}
    for user_id in sorted(i for i in staff_ids if i > 0):
        try:
            member = await bot.get_chat_member(chat_id, user_id)
            found[user_id] = str(member.status)
        except TelegramError:
            found[user_id] = "left"
    return found


def staff_id_lines(
    staff_ids: frozenset[int], staff_chat_id: int | None, members: dict[int, str]
) -> list[Line]:
    """STEPWISE_STAFF_IDS: set, user ids (positive), in the staff group when there is one
    (`members`: what getChatMember said for each)."""
    name = "staff ids"
    if not staff_ids:
        return [
            fail(
                name,
                "STEPWISE_STAFF_IDS is empty: nobody can use staff commands or answer "
                "handoffs; add your Telegram user id (see README, Running it on Telegram)",
            )
        ]
    wrong = sorted(i for i in staff_ids if i <= 0)
    if wrong:
        listed = ", ".join(str(i) for i in wrong)
        return [
            fail(
                name,
                f"{listed} in STEPWISE_STAFF_IDS is no user id (user ids are positive; a "
                "group's id goes in STEPWISE_STAFF_CHAT_ID)",
            )
        ]
    outside = [i for i, status in sorted(members.items()) if status not in MEMBER_STATUSES]
    if staff_chat_id is not None and outside:
        listed = ", ".join(str(i) for i in outside)
        return [
            fail(
                name,
                f"{listed} not in the staff group {staff_chat_id}: add them there, or take "
                "them out of STEPWISE_STAFF_IDS",
            )
        ]
    where = " (all in the staff group)" if staff_chat_id is not None else ""
    return [ok(name, f"{len(staff_ids)} staff member(s){where}")]


# -- the database ----------------------------------------------------------------------------


def database_lines(probe: DatabaseProbe) -> list[Line]:
    """Reachable, the schema current, a write rolled back."""
    if not probe.exists:
        return [
            ok("database", f"no file at {probe.where} yet; its directory takes new files"),
            fail(
                "migrations",
                "no schema yet: run `stepwise migrate` (or start `stepwise serve`, which "
                "creates it)",
            ),
            skip("database writes", "not checked: no database yet"),
        ]
    lines = [ok("database", f"{probe.backend} at {probe.where} answers")]
    if probe.version == probe.known:
        lines.append(ok("migrations", f"schema at version {probe.version}, current"))
    elif probe.version < probe.known:
        lines.append(
            fail(
                "migrations",
                f"schema at version {probe.version}, this stepwise knows {probe.known}: run "
                "`stepwise migrate`",
            )
        )
    else:
        lines.append(
            fail(
                "migrations",
                f"schema at version {probe.version}, newer than this stepwise knows "
                f"({probe.known}): upgrade stepwise on this machine",
            )
        )
    if probe.write_error is None:
        lines.append(ok("database writes", "a write in a transaction (rolled back) worked"))
    else:
        lines.append(
            fail(
                "database writes",
                f"a write failed ({probe.write_error}): check the disk, its space and "
                "the database user's rights",
            )
        )
    return lines


def clock_line(probe: DatabaseProbe | None, *, max_skew_s: float = CLOCK_SKEW_MAX_S) -> Line:
    name = "clock"
    if probe is None:
        return skip(name, "not checked: the database did not answer")
    if probe.clock is None:
        return skip(
            name, "SQLite has no clock of its own to compare (one machine: nothing to skew)"
        )
    offset = probe.clock.offset_s()
    slack = probe.clock.uncertainty_s()
    if abs(offset) - slack > max_skew_s:
        side = "ahead of" if offset > 0 else "behind"
        return fail(
            name,
            f"the database's clock is {abs(offset):.1f} s {side} this machine's (more than "
            f"{max_skew_s:g} s; leases compare clocks): sync both with NTP",
        )
    return ok(name, f"the database's clock is within {abs(offset) + slack:.2f} s of this machine's")


async def database_check(settings: Settings) -> tuple[list[Line], DatabaseProbe | None]:
    target = settings.db_path
    if not is_postgres_url(target):
        problem = db_path_problem(Path(target))
        if problem is not None:
            return _database_down(problem), None
    try:
        probe = await probe_database(target, busy_timeout_s=settings.db_timeout_s)
    except StorageUnavailable as exc:
        return _database_down(f"{exc}: check STEPWISE_DB and that the server runs"), None
    return database_lines(probe), probe


def _database_down(why: str) -> list[Line]:
    return [
        fail("database", why),
        skip("migrations", "not checked: no database"),
        skip("database writes", "not checked: no database"),
    ]


# -- the catalog and the model ---------------------------------------------------------------


async def catalog_lines(
    settings: Settings, *, client: httpx.AsyncClient | None = None
) -> tuple[list[Line], Callable[[str], str]]:
    """The tools file loads, and every read tool answers a probe (as `tools check --probe`).
    Also returns the file's own redaction (its header values)."""
    name = "catalog"
    if settings.tools_path is None:
        return [ok(name, "the built-in demo shop serves every tool (STEPWISE_TOOLS not set)")], str
    config, problems = check_tools_file(settings.tools_path)
    if config is None:
        return [fail(name, f"{line}: fix {settings.tools_path}") for line in problems], str
    checks = await check_tools(config, probe=True, client=client)
    configured = sum(isinstance(c, ConfiguredTool) for c in checks)
    missing = [c.name for c in checks if isinstance(c, MissingTool)]
    lines = [
        ok(
            name,
            f"{config.source} loads: {configured} tool(s)"
            + (f"; not configured: {', '.join(missing)}" if missing else ""),
        )
    ]
    for check in checks:
        if not isinstance(check, ProbeResult) or not check.probed:
            continue
        text = check_line(check).strip().removeprefix(f"{check.name}: ")
        if check.passed:
            lines.append(ok(f"tool {check.name}", text))
        else:
            lines.append(fail(f"tool {check.name}", f"{text}: check its URL and headers"))
    return lines, config.redact


async def model_line(settings: Settings, *, client: httpx.AsyncClient | None = None) -> Line:
    """STEPWISE_PLANNER=model: the endpoint's models list names the model."""
    name = "model endpoint"
    if settings.planner != "model":
        return skip(name, "not used (STEPWISE_PLANNER=rule)")
    base = (settings.llm_base_url or "").rstrip("/")
    headers = {}
    if settings.llm_api_key is not None:
        headers["Authorization"] = f"Bearer {settings.llm_api_key.get_secret_value()}"
    owned = client is None
    http = client or httpx.AsyncClient(timeout=settings.llm_timeout_s)
    try:
        response = await http.get(f"{base}/models", headers=headers)
    except httpx.HTTPError as exc:
        return fail(name, f"{base} unreachable ({type(exc).__name__}): check STEPWISE_LLM_BASE_URL")
    finally:
        if owned:
            await http.aclose()
    if response.status_code in (401, 403):
        return fail(
            name,
            f"{base} refused the key (HTTP {response.status_code}): check STEPWISE_LLM_API_KEY",
        )
    if response.status_code != 200:
        return fail(name, f"{base}/models answered HTTP {response.status_code}")
    try:
        listed = {str(m.get("id")) for m in response.json().get("data", [])}
    except (ValueError, AttributeError):
        listed = set()
    model = settings.llm_model or ""
    if listed and model not in listed:
        return fail(name, f"{base} does not list {model}: check STEPWISE_LLM_MODEL")
    return ok(name, f"{base} answers and lists {model}" if listed else f"{base} answers")


def recognition_line(settings: Settings) -> Line:
    """STEPWISE_EMBEDDINGS (issue 33): the backend embeds a word, or what is wrong with it."""
    from agent_core.understanding.recognition.backends import EndpointEmbedder, LocalUSE
    from agent_core.understanding.recognition.embedding import EmbeddingUnavailable

    name = "recognition"
    if settings.embeddings == "none":
        return skip(name, "by words alone (STEPWISE_EMBEDDINGS=none): no model")
    try:
        if settings.embeddings == "endpoint":
            key = settings.embeddings_api_key
            embedder: EndpointEmbedder | LocalUSE = EndpointEmbedder(
                settings.embeddings_url or "",
                settings.embeddings_model or "",
                api_key=key.get_secret_value() if key else None,
                timeout_s=settings.embeddings_timeout_s,
            )
        else:
            embedder = LocalUSE()
        try:
            embedder.embed(["where is my order"], query=True)
        finally:
            if isinstance(embedder, EndpointEmbedder):
                embedder.close()  # its HTTP client: doctor asks once
    except EmbeddingUnavailable as exc:
        hint = (
            "check STEPWISE_EMBEDDINGS_URL, _MODEL and _API_KEY (the local model answers meanwhile)"
            if settings.embeddings == "endpoint"
            else "reinstall (make run), or STEPWISE_EMBEDDINGS=none for words alone"
        )
        return fail(name, f"{exc}: {hint}")
    where = "in-process" if settings.embeddings == "local" else settings.embeddings_url
    return ok(name, f"by meaning: {embedder.model_id} ({where})")


# -- all of it -------------------------------------------------------------------------------


async def _guarded(name: str, work: Awaitable[list[Line]]) -> list[Line]:
    """A check that raised is one ✘ line, never a traceback."""
    try:
        return await work
    except Exception as exc:
        return [fail(name, f"could not be checked ({type(exc).__name__}: {exc})")]


async def run_doctor(
    settings: Settings,
    *,
    webhook_url: str | None = None,
    out: Callable[[str], None] = print,
    bot: Bot | None = None,
    http: httpx.AsyncClient | None = None,
) -> int:
    """Print every check's line; 0 when none failed, else 1."""
    redact = Redactor(settings)
    lines: list[Line] = []

    def emit(new: list[Line], also: Callable[[str], str] = str) -> None:
        for line in new:
            lines.append(line)
            out(redact(also(line.render())))

    started = time.monotonic()
    emit(await _guarded("telegram", telegram_lines(settings, webhook_url, bot=bot)))
    probe: DatabaseProbe | None = None

    async def database() -> list[Line]:
        nonlocal probe
        found, probe = await database_check(settings)
        return found

    emit(await _guarded("database", database()))
    tools_redact: Callable[[str], str] = str

    async def catalog() -> list[Line]:
        nonlocal tools_redact
        found, tools_redact = await catalog_lines(settings, client=http)
        return found

    found = await _guarded("catalog", catalog())
    emit(found, tools_redact)
    emit(await _guarded("model endpoint", _one(model_line(settings, client=http))))
    emit(await _guarded("recognition", _one(asyncio.to_thread(recognition_line, settings))))
    emit([clock_line(probe)])
    failed = [line for line in lines if line.mark is Mark.FAIL]
    took = time.monotonic() - started
    if failed:
        out(f"{len(failed)} check(s) failed ({took:.1f} s)")
        return 1
    out(f"all checks passed ({took:.1f} s)")
    return 0


async def _one(work: Awaitable[Line]) -> list[Line]:
    return [await work]
