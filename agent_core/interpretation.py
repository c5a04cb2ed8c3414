"""What the planner understood, before it planned anything (issue 13).

A request is first read into an `Interpretation`: the intents with the order ids of their
own clause, the intents the customer negated, the policy questions, the parts no tool
serves, a request for a person, and — when the target of an action is unclear — the
question to ask back. The plan is built from it, and it is stored with the run so staff see
*why* a step is there (or is not).

Both planners produce this one model: the rule planner (`agent_core.understanding.understand`) and the
model planner (`agent_core.understanding.model_planner`), whose output is parsed into it and validated.
A leaf module: it imports nothing from the rest of agent_core, so `models.Run` can hold it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

MAX_OPTIONS = 4


class Intent(BaseModel):
    """One thing the customer asked for: a tool on the order(s) named in its own clause."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    order_ids: list[str] = Field(default_factory=list)
    # Arguments besides the order id that came from the text (an address, an amount).
    args: dict[str, Any] = Field(default_factory=dict)
    # The words it was read from (a clause of the request), for staff.
    clause: str = ""
    # True when the order came from earlier in the chat, not from this message (reads only).
    from_context: bool = False


class PolicyLookup(BaseModel):
    """A question a policy answers ("cancellation policy", "how do I return")."""

    model_config = ConfigDict(extra="forbid")

    topic: str
    clause: str = ""


class ClarifyOption(BaseModel):
    """One answer to a clarifying question: a short button label and the request it sends."""

    model_config = ConfigDict(extra="forbid")

    label: str = Field(min_length=1, max_length=64)
    text: str = Field(min_length=1, max_length=300)


class Clarification(BaseModel):
    """The question a run ends with when the target of an action is unclear."""

    model_config = ConfigDict(extra="forbid")

    question: str
    options: list[ClarifyOption] = Field(default_factory=list, max_length=MAX_OPTIONS)
    # Set by the agent when the run is created; option buttons carry it (like Confirm).
    nonce: str | None = None
    # The action the question is about, when it asks which order (the agent keeps only
    # orders that can take it, `agent_core.understanding.order_facts`); None for other questions. Used
    # while planning only: never stored or shown.
    tool: str | None = Field(default=None, exclude=True)


class Handoff(BaseModel):
    """The customer asked for a person; the handoff issue routes it to staff."""

    model_config = ConfigDict(extra="forbid")

    reason: str


class Interpretation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    language: str = "en"
    intents: list[Intent] = Field(default_factory=list)
    # Actions the customer said NOT to do ("don't cancel A1001"): never planned.
    negated: list[Intent] = Field(default_factory=list)
    # Orders the customer said to leave alone ("keep A1001", "A1005 不用动").
    kept: list[str] = Field(default_factory=list)
    policies: list[PolicyLookup] = Field(default_factory=list)
    # What no tool serves, in the customer's language ("changing the payment method").
    unsupported: list[str] = Field(default_factory=list)
    # Nothing in the request was recognised at all (`unsupported` then holds its text).
    unrecognised: bool = False
    # The question asked back (`clarify`) is a choice of things the bot can do (issue 21):
    # nothing recognisable to act on, or "what can you do?". Like any clarify, the run ends
    # `needs_clarification` and a press continues as if the customer had written the option.
    choices: bool = False
    # The can't-do topics of `unsupported` (issue 21: "account", "complaint", "other", …).
    unsupported_topics: list[str] = Field(default_factory=list)
    # What recognition over the declared examples proposed, for staff ("faq:invoices 0.72").
    recognised: str | None = None
    # Text that reads as instructions to the assistant (prompt injection): never followed.
    ignored_instructions: list[str] = Field(default_factory=list)
    handoff: Handoff | None = None
    clarify: Clarification | None = None
    # The earlier order the reads were applied to (the text named none); said in the answer.
    context_order_id: str | None = None
    # The last order the chat mentioned before this message (what the planner was given).
    chat_order_id: str | None = None
    # Orders and topics the step cap left out; named in the answer.
    not_covered: list[str] = Field(default_factory=list)
    planner: str = "rule"
    # Anything staff should know about how this was planned (e.g. a model fallback).
    notes: list[str] = Field(default_factory=list)
