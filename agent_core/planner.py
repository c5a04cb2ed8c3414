"""Free text in, a short plan out.

The planner only proposes: it picks tools and arguments, never runs anything. A request it
cannot plan comes back as a refusal (no order number, unsupported), so no tool runs.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Protocol

from pydantic import BaseModel, Field

from agent_core.models import Language


class StepTag(StrEnum):
    """Why a step is in the plan; observation rules key on it."""

    ORDER_STATUS = "order_status"
    DELAY_COMPENSATION = "delay_compensation"  # only wanted while the order is not delivered
    POLICY = "policy"
    CANCEL = "cancel"


class Refusal(StrEnum):
    EMPTY = "empty"
    MISSING_ORDER_ID = "missing_order_id"
    UNSUPPORTED = "unsupported"


class StepDraft(BaseModel):
    goal: str
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    tag: StepTag


class PlanRequest(BaseModel):
    text: str
    language_hint: str | None = None  # Telegram's language_code, e.g. "zh-hans", "en"
    last_order_id: str | None = None  # the last order this chat mentioned ("this order")


class PlanDraft(BaseModel):
    language: Language
    steps: list[StepDraft] = Field(default_factory=list, max_length=4)
    refusal: Refusal | None = None


class Planner(Protocol):
    def plan(self, request: PlanRequest) -> PlanDraft: ...
