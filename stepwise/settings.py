"""Configuration from the environment (and an optional `.env` file).

Names are the documented environment variables; see the README for each one. Only the
composition root reads them: the bot and the console are handed the values they need.
"""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from agent_core.recognition.intents import load as load_intents

TOKEN_SHAPE = re.compile(r"^\d{5,}:[A-Za-z0-9_-]{30,}$")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


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
    db_timeout_s: float = Field(5.0, gt=0, validation_alias=_env("STEPWISE_DB_TIMEOUT"))
    staff_token: SecretStr | None = Field(None, validation_alias=_env("STEPWISE_STAFF_TOKEN"))
    staff_ids: frozenset[int] = Field(frozenset(), validation_alias=_env("STEPWISE_STAFF_IDS"))
    # Human handoff (issue 14): the forum supergroup where staff answer customers (its id,
    # -100…), and the staff console's public URL for links to runs in topic headers.
    staff_chat_id: int | None = Field(None, validation_alias=_env("STEPWISE_STAFF_CHAT_ID"))
    console_url: str | None = Field(None, validation_alias=_env("STEPWISE_CONSOLE_URL"))
    # Staff approval (issue 14 item 6): refunds above this amount wait for a staff member's
    # Approve in the customer's topic instead of the customer's Confirm (needs the staff chat).
    staff_approval_above: Decimal | None = Field(
        None, ge=0, validation_alias=_env("STEPWISE_STAFF_APPROVAL_ABOVE")
    )
    # Above this (at least the staff amount), two distinct staff members must approve.
    staff_four_eyes_above: Decimal | None = Field(
        None, ge=0, validation_alias=_env("STEPWISE_STAFF_FOUR_EYES_ABOVE")
    )
    approval_ttl: timedelta = Field(
        timedelta(hours=24), validation_alias=_env("STEPWISE_APPROVAL_TTL")
    )
    tools_path: Path | None = Field(None, validation_alias=_env("STEPWISE_TOOLS"))
    shop_seed: Path | None = Field(None, validation_alias=_env("STEPWISE_SHOP_SEED"))
    shop_latency_ms: int = Field(0, ge=0, validation_alias=_env("STEPWISE_SHOP_LATENCY_MS"))
    order_pattern: str = Field(r"[A-Za-z]\d{3,10}", validation_alias=_env("STEPWISE_ORDER_PATTERN"))
    # Issue 21: the shop's own intents (FAQ topics, can't-do topics, more examples for the
    # tools), in the format of agent_core/recognition/intents.toml; they extend the built-in ones.
    intents_path: Path | None = Field(None, validation_alias=_env("STEPWISE_INTENTS"))
    demo_user_id: int = Field(10001, validation_alias=_env("STEPWISE_DEMO_USER"))
    # The planner (issue 13): "rule" (default) or "model" (an OpenAI-compatible endpoint).
    planner: Literal["rule", "model"] = Field("rule", validation_alias=_env("STEPWISE_PLANNER"))
    llm_base_url: str | None = Field(None, validation_alias=_env("STEPWISE_LLM_BASE_URL"))
    llm_model: str | None = Field(None, validation_alias=_env("STEPWISE_LLM_MODEL"))
    llm_api_key: SecretStr | None = Field(None, validation_alias=_env("STEPWISE_LLM_API_KEY"))
    llm_timeout_s: float = Field(20.0, gt=0, validation_alias=_env("STEPWISE_LLM_TIMEOUT"))
    # Issue 15: how long the poller lease (one process long-polls Telegram), a claim on a
    # stored update and a process's lease on a run it drives (storage/leases.py) last without
    # renewal (renewed every third of it); another process takes over within about this long
    # after the holder dies. How long processed updates are kept.
    lease_s: float = Field(3.0, ge=0.3, le=60, validation_alias=_env("STEPWISE_LEASE"))
    inbox_keep: timedelta = Field(timedelta(hours=24), validation_alias=_env("STEPWISE_INBOX_KEEP"))

    @field_validator("staff_ids", mode="before")
    @classmethod
    def _split_ids(cls, value: object) -> object:
        if isinstance(value, str):
            return frozenset(int(part) for part in value.replace(" ", "").split(",") if part)
        if isinstance(value, int):
            return frozenset({value})
        return value

    @field_validator("approval_ttl", "inbox_keep", mode="before")
    @classmethod
    def _parse_duration(cls, value: object) -> object:
        """Seconds, or a number with s/m/h/d ("24h", "90m")."""
        if isinstance(value, str):
            match = _DURATION.match(value)
            if not match:
                raise ValueError("use seconds or a number with s, m, h or d, e.g. 24h")
            return timedelta(seconds=float(match[1]) * _UNIT_SECONDS[match[2]])
        if isinstance(value, int | float):
            return timedelta(seconds=value)
        return value

    @field_validator("order_pattern")
    @classmethod
    def _valid_regex(cls, value: str) -> str:
        re.compile(value)
        return value

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

    def token(self) -> str | None:
        return self.telegram_bot_token.get_secret_value() if self.telegram_bot_token else None


def configured_staff_token(settings: Settings) -> str | None:
    """STEPWISE_STAFF_TOKEN (environment or .env), if set."""
    if settings.staff_token is None:
        return None
    return settings.staff_token.get_secret_value().strip() or None
