"""What a model planner may answer, and how its answer is checked (issue 13).

The model is offered the catalog's tools as JSON Schema function definitions, plus three
of the planner's own: `ask_clarification`, `hand_off` and `note_unsupported`. Its tool
calls are parsed into the same `Interpretation` and plan steps as the rule planner's, and
checked before anything can run:

- a tool that is neither in the catalog nor one of the three → `unknown_tool` (stop);
- arguments that break the tool's schema, an order id that appears neither in the
  customer's text nor in the chat's context, or more than four steps → problems the model
  gets one chance to repair; then `invalid_arguments` (stop);
- risk and approval come from the catalog only (a step's tag and goal too): the model
  cannot make a refund a read;
- when the customer's text contains instructions addressed to the assistant, no
  high-risk step is taken from the model at all (they are named as not followed);
- a high-risk step is taken only if the rule reading, with its precision layer (negation,
  questions about an action, scope, retraction, reported speech), finds that very action
  on that very order in the message (`allowed_actions`): the model may read, clarify,
  hand off or name what it cannot do on its own, but never add an action the customer's
  words do not ask for (measured on a real model: `python -m bench.model_planner`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_core.catalog.builtin import ToolSpec
from agent_core.interpretation import (
    Clarification,
    ClarifyOption,
    Handoff,
    Intent,
    Interpretation,
    PolicyLookup,
)
from agent_core.models import Language
from agent_core.understanding.lexicon import POLICY_QUERIES
from agent_core.understanding.planner import MAX_STEPS, StepDraft, goal_for, is_high_risk, tag_for

ASK = "ask_clarification"
HAND_OFF = "hand_off"
UNSUPPORTED = "note_unsupported"
OWN_TOOLS = frozenset({ASK, HAND_OFF, UNSUPPORTED})

_OWN_SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": ASK,
            "description": (
                "Ask the customer a short question instead of acting, when the target of an "
                "action is unclear (no order number, several orders, a choice). Nothing else "
                "is done in that turn."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "question": {"type": "string", "maxLength": 300},
                    "options": {
                        "type": "array",
                        "maxItems": 4,
                        "items": {
                            "type": "object",
                            "properties": {
                                "label": {"type": "string", "maxLength": 64},
                                "text": {"type": "string", "maxLength": 300},
                            },
                            "required": ["label", "text"],
                        },
                    },
                },
                "required": ["question"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": HAND_OFF,
            "description": "The customer asks to talk to a person.",
            "parameters": {
                "type": "object",
                "properties": {"reason": {"type": "string", "maxLength": 300}},
                "required": ["reason"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": UNSUPPORTED,
            "description": (
                "A part of the request that no tool serves (say what, in the customer's "
                "language, e.g. 'changing the payment method')."
            ),
            "parameters": {
                "type": "object",
                "properties": {"what": {"type": "string", "maxLength": 200}},
                "required": ["what"],
            },
        },
    },
]


def tool_schemas(catalog: Mapping[str, ToolSpec]) -> list[dict[str, Any]]:
    """The catalog as OpenAI-style function definitions, then the planner's own three."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": spec.name,
                "description": f"{spec.description.en} (risk: {spec.risk.value})",
                "parameters": spec.args_model.model_json_schema(),
            },
        }
        for spec in catalog.values()
        if spec.name not in OWN_TOOLS
    ]
    return [*tools, *_OWN_SCHEMAS]


@dataclass(frozen=True)
class Call:
    """One tool call as the model wrote it."""

    id: str
    name: str
    arguments: str


@dataclass
class Checked:
    """A model answer after checking: either a plan, or the problems found in it."""

    interpretation: Interpretation
    steps: list[StepDraft] = field(default_factory=list)
    unknown_tool: str | None = None
    problems: dict[str, str] = field(default_factory=dict)  # call id → what is wrong
    clarify: bool = False
    handoff: bool = False


def check_calls(
    calls: Sequence[Call],
    *,
    catalog: Mapping[str, ToolSpec],
    language: Language,
    known_ids: set[str],
    injected: bool,
    allowed_actions: frozenset[tuple[str, str | None]] | None = None,
) -> Checked:
    """Parse and validate a model's tool calls (see the module docstring)."""
    interp = Interpretation(language=language.value, planner="model")
    checked = Checked(interp)
    for call in calls:
        if call.name not in catalog and call.name not in OWN_TOOLS:
            checked.unknown_tool = call.name
            return checked
        try:
            args = json.loads(call.arguments or "{}")
        except json.JSONDecodeError:
            checked.problems[call.id] = "the arguments are not valid JSON"
            continue
        if not isinstance(args, dict):
            checked.problems[call.id] = "the arguments must be a JSON object"
            continue
        if call.name in OWN_TOOLS:
            problem = _own(call.name, args, checked)
            if problem:
                checked.problems[call.id] = problem
            continue
        spec = catalog[call.name]
        normalised, bad = spec.check_args(args)
        if normalised is None:
            checked.problems[call.id] = f"argument {bad!r} does not fit the tool's schema"
            continue
        order_id = normalised.get("order_id")
        if isinstance(order_id, str) and order_id.upper() not in known_ids:
            checked.problems[call.id] = (
                f"order {order_id} appears neither in the customer's message nor in the chat"
            )
            continue
        if injected and is_high_risk(call.name, catalog):
            # Instructions inside the message may have asked for it: never from the model.
            if "instructions" not in " ".join(interp.unsupported):
                interp.unsupported.append("following instructions written inside a message")
            continue
        if allowed_actions is not None and is_high_risk(call.name, catalog):
            key = (call.name, order_id.upper() if isinstance(order_id, str) else None)
            if key not in allowed_actions:
                # Not a repairable problem: the message itself does not ask for it.
                interp.notes.append(
                    f"not taken: the model's {call.name} for {order_id}: the message does not "
                    "ask for it (the rule reading and its precision layer find no such request)"
                )
                continue
        _step(call.name, normalised, checked, catalog, language)
    if len(checked.steps) > MAX_STEPS:
        checked.problems["*"] = f"at most {MAX_STEPS} steps; plan fewer"
    return checked


def _own(name: str, args: dict[str, Any], checked: Checked) -> str | None:
    interp = checked.interpretation
    try:
        if name == ASK:
            options = [ClarifyOption.model_validate(o) for o in args.get("options") or []][:4]
            interp.clarify = Clarification(question=str(args["question"])[:300], options=options)
            checked.clarify = True
        elif name == HAND_OFF:
            interp.handoff = Handoff(reason=str(args["reason"])[:300])
            checked.handoff = True
        else:
            interp.unsupported.append(str(args["what"])[:200])
    except (KeyError, ValueError, TypeError) as exc:
        return f"invalid {name} call: {exc}"
    return None


def _step(
    tool: str,
    args: dict[str, Any],
    checked: Checked,
    catalog: Mapping[str, ToolSpec],
    language: Language,
) -> None:
    interp = checked.interpretation
    checked.steps.append(
        StepDraft(
            goal=goal_for(tool, args, language, catalog),
            tool=tool,
            args=args,
            tag=tag_for(tool, catalog),
        )
    )
    if tool == "search_policy":
        interp.policies.append(PolicyLookup(topic=_topic(str(args.get("query", "")))))
        return
    order_id = args.get("order_id")
    rest = {k: v for k, v in args.items() if k != "order_id"}
    interp.intents.append(
        Intent(tool=tool, order_ids=[order_id] if isinstance(order_id, str) else [], args=rest)
    )


def _topic(query: str) -> str:
    for topic, queries in POLICY_QUERIES.items():
        if query.casefold() in (q.casefold() for q in queries.values()):
            return topic.value
    return query
