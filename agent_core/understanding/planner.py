"""Free text in, an interpretation and a short plan out.

The planner only proposes: it picks tools and arguments, never runs anything. It first
reads the request into an `Interpretation` (`agent_core.interpretation`): what was asked,
of which order, what was negated, what no tool serves, whether a person was asked for, and
what must be asked back. The plan is built from that: order steps first (each order's
status or parcel read, then its actions in the order asked), then policy lookups, at most
four steps. A request it cannot plan comes back with a `refusal` saying why no tool runs.

Two planners share this interface: `RuleBasedPlanner` (keyword tables, deterministic, no
I/O) and `agent_core.understanding.model_planner.ModelPlanner` (any OpenAI-compatible model, validated,
falling back to the rules).
"""

from __future__ import annotations

import asyncio
import functools
import re
import string
import unicodedata
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any, Protocol

from pydantic import BaseModel, Field

from agent_core import lazyre
from agent_core.catalog.builtin import CATALOG, SEARCH_POLICY, ToolSpec
from agent_core.interpretation import Intent, Interpretation
from agent_core.models import Language, Risk, StepTag
from agent_core.understanding.clarifying import among_chat_orders, example_order_id, with_example
from agent_core.understanding.clause_view import CustomPhrases, Mention
from agent_core.understanding.lexicon import DELAY_TOPICS, POLICY_QUERIES, Terms
from agent_core.understanding.lexicon import PolicyTopic as PolicyTopic
from agent_core.understanding.lexicon_intents import GOALS, TRACK_TOOL, Action
from agent_core.understanding.reading import MAX_TEXT_CHARS as MAX_TEXT_CHARS
from agent_core.understanding.reading import Reader, Reading, clean
from agent_core.understanding.recognised import faq_queries, recognise, with_cant_do
from agent_core.understanding.recognition.embedding import SemanticIndex
from agent_core.understanding.recognition.intents import IntentDef
from agent_core.understanding.recognition.intents import load as load_intents
from agent_core.understanding.recognition.recognise import Recogniser
from agent_core.understanding.understand import STATUS_TOOL, Understood, understand

__all__ = [
    "MAX_STEPS",
    "MAX_TEXT_CHARS",
    "POLICY_QUERIES",
    "PlanDraft",
    "PlanRequest",
    "Planner",
    "PolicyTopic",
    "Refusal",
    "RuleBasedPlanner",
    "StepDraft",
    "StepTag",
    "build_steps",
    "detect_language",
]


class Refusal(StrEnum):
    """Why a request has no steps."""

    EMPTY = "empty"
    MISSING_ORDER_ID = "missing_order_id"
    UNSUPPORTED = "unsupported"
    NEEDS_CLARIFICATION = "needs_clarification"
    HANDOFF = "handoff"
    # The model planner proposed something that cannot run (issue 13): the run stops.
    UNKNOWN_TOOL = "unknown_tool"
    INVALID_ARGUMENTS = "invalid_arguments"


class StepDraft(BaseModel):
    goal: str
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    tag: StepTag


class PlanRequest(BaseModel):
    text: str
    language_hint: str | None = None  # Telegram's language_code, e.g. "zh-hans", "en"
    last_order_id: str | None = None  # the last order this chat mentioned ("this order")
    # Every order the chat's last message named (last_order_id first): an action on "it"
    # asks which of them, never picks the first.
    chat_order_ids: list[str] = Field(default_factory=list)


class PlanDraft(BaseModel):
    language: Language
    steps: list[StepDraft] = Field(default_factory=list, max_length=4)
    refusal: Refusal | None = None
    interpretation: Interpretation | None = None


class Planner(Protocol):
    async def plan(self, request: PlanRequest) -> PlanDraft: ...


MAX_STEPS = 4
DEFAULT_ORDER_ID_PATTERN = r"[A-Za-z]\d{3,10}"

_HAN = lazyre.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")
_LATIN = lazyre.compile(r"[A-Za-z]")

_TAGS: Mapping[str, StepTag] = {
    STATUS_TOOL: StepTag.ORDER_STATUS,
    TRACK_TOOL: StepTag.TRACK,
    Action.CANCEL.value: StepTag.CANCEL,
    Action.RETURN.value: StepTag.RETURN,
    Action.REFUND.value: StepTag.REFUND,
    Action.ADDRESS.value: StepTag.ADDRESS,
}
_BUILT_IN_QUERIES: Mapping[str, Mapping[Language, str]] = {
    t.value: q for t, q in POLICY_QUERIES.items()
}


@functools.lru_cache(maxsize=1)
def built_in_intents() -> tuple[IntentDef, ...]:
    return tuple(load_intents())


@functools.lru_cache(maxsize=1)
def _built_in_recogniser() -> Recogniser:
    return Recogniser(built_in_intents())


_FROM_CONTEXT = {
    Language.ZH: "（你之前问过的订单）",
    Language.EN: " (the order you asked about earlier)",
}


def detect_language(text: str, hint: str | None) -> Language:
    """The language to answer in.

    Any Chinese character wins (customers mix in order ids and English words); otherwise
    Latin letters mean English; otherwise (digits, emoji) Telegram's language_code decides.
    """
    if _HAN.search(text):
        return Language.ZH
    if _LATIN.search(unicodedata.normalize("NFKC", text)):
        return Language.EN
    if hint is not None:
        primary = re.split(r"[-_]", hint.strip().casefold(), maxsplit=1)[0]
        if primary == "zh":
            return Language.ZH
    return Language.EN


def is_high_risk(tool: str, catalog: Mapping[str, ToolSpec]) -> bool:
    spec = catalog.get(tool)
    if spec is not None:
        return spec.risk is Risk.HIGH
    return tool in {a.value for a in Action}


def tag_for(tool: str, catalog: Mapping[str, ToolSpec]) -> StepTag:
    if tool in _TAGS:
        return _TAGS[tool]
    return StepTag.ACTION if is_high_risk(tool, catalog) else StepTag.READ


class _Fields(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        raise KeyError(key)


def goal_for(
    tool: str, args: Mapping[str, Any], language: Language, catalog: Mapping[str, ToolSpec]
) -> str:
    """A step's goal from the catalog (or the fallback table), filled with its arguments."""
    templates: list[str] = []
    fields: dict[str, Any] = dict(args)
    spec = catalog.get(tool)
    if spec is not None:
        templates.append(spec.goal[language])
        fields = spec.display_args(args)  # "59" reads "59.00"
    if tool in GOALS:
        templates.append(GOALS[tool][language])
    for template in templates:
        try:
            return string.Formatter().vformat(template, (), _Fields(fields))
        except (KeyError, IndexError, ValueError, AttributeError):
            continue
    return tool


def build_steps(
    understood: Understood,
    language: Language,
    catalog: Mapping[str, ToolSpec],
    queries: Mapping[str, Mapping[Language, str]] | None = None,
) -> list[StepDraft]:
    """Order steps first (each order's read, then its actions), then policy lookups.

    Every action is preceded by a status read of its order (the rules skip an action the
    status makes pointless). Groups that do not fit in MAX_STEPS are left out whole and
    named in `interpretation.not_covered`.
    """
    interp = understood.interpretation
    orders = list(understood.mention_order)
    if interp.context_order_id and interp.context_order_id not in orders:
        orders.append(interp.context_order_id)
    groups: list[tuple[str, list[StepDraft]]] = []
    any_action = False
    for order_id in orders:
        mine = [i for i in interp.intents if order_id in i.order_ids]
        actions = [i for i in mine if is_high_risk(i.tool, catalog)]
        reads = [i for i in mine if not is_high_risk(i.tool, catalog)]
        if not mine:
            continue
        any_action = any_action or bool(actions)
        group: list[StepDraft] = []
        read_tools = list(dict.fromkeys(i.tool for i in reads))
        if actions and STATUS_TOOL not in read_tools:
            read_tools.insert(0, STATUS_TOOL)
        elif TRACK_TOOL in read_tools and STATUS_TOOL in read_tools and not actions:
            read_tools.remove(STATUS_TOOL)  # the parcel read says more than the status
        for tool in read_tools:
            group.append(_order_step(tool, order_id, {}, language, catalog, interp))
        for intent in _distinct(actions):
            group.append(_order_step(intent.tool, order_id, intent.args, language, catalog, interp))
        groups.append((order_id, group))

    # Reads keyed by the asking customer ("my points", "my last order"): no order at all.
    for intent in _distinct([i for i in interp.intents if not i.order_ids]):
        if intent.tool in customer_tools(catalog):
            goal = goal_for(intent.tool, intent.args, language, catalog)
            step = StepDraft(goal=goal, tool=intent.tool, args=dict(intent.args), tag=StepTag.READ)
            groups.append((intent.tool, [step]))

    policy_groups: list[tuple[str, list[StepDraft]]] = []
    queries = queries if queries is not None else _BUILT_IN_QUERIES
    topics = [p.topic for p in interp.policies if p.topic in queries]
    delay_asked = understood.delay is Mention.STRONG or (
        understood.delay is Mention.WEAK and not any_action
    )
    if understood.condition and delay_asked and groups:
        # "Check A1001 and, if it has not arrived, the compensation policy": the lookup
        # only matters while the order is on its way, so it gets its own tag.
        topic = PolicyTopic.DELAY_COMPENSATION
        step = _policy_step(POLICY_QUERIES[topic], language, StepTag.DELAY_COMPENSATION)
        policy_groups.append((topic.value, [step]))
        topics = [t for t in topics if t not in DELAY_TOPICS]
    for name in topics:
        step = _policy_step(queries[name], language, StepTag.POLICY)
        policy_groups.append((name, [step]))

    steps: list[StepDraft] = []
    for name, group in [*groups, *policy_groups]:
        if len(steps) + len(group) <= MAX_STEPS:
            steps.extend(group)
        else:
            interp.not_covered.append(name)
    return steps


def customer_tools(catalog: Mapping[str, ToolSpec]) -> frozenset[str]:
    """The read tools keyed by the asking customer: they take no order and need no
    argument (the shop's `[customer]` lookup says whose points, whose orders)."""
    return frozenset(
        name
        for name, spec in catalog.items()
        if spec.risk is Risk.READ
        and "order_id" not in spec.args_model.model_fields
        and not spec.args_model.model_json_schema().get("required")
    )


def _distinct(intents: Sequence[Intent]) -> list[Intent]:
    seen: set[str] = set()
    out = []
    for intent in intents:
        if intent.tool not in seen:
            seen.add(intent.tool)
            out.append(intent)
    return out


def _order_step(
    tool: str,
    order_id: str,
    extra: Mapping[str, Any],
    language: Language,
    catalog: Mapping[str, ToolSpec],
    interp: Interpretation,
) -> StepDraft:
    args = {"order_id": order_id, **extra}
    goal = goal_for(tool, args, language, catalog)
    if order_id == interp.context_order_id:
        goal += _FROM_CONTEXT[language]
    return StepDraft(goal=goal, tool=tool, args=args, tag=tag_for(tool, catalog))


def _policy_step(queries: Mapping[Language, str], language: Language, tag: StepTag) -> StepDraft:
    query = queries[language]
    return StepDraft(
        goal=SEARCH_POLICY.goal_for(language, query=query),
        tool=SEARCH_POLICY.name,
        args={"query": query, "lang": language.value},
        tag=tag,
    )


def custom_phrases(catalog: Mapping[str, ToolSpec]) -> list[CustomPhrases]:
    """Keyword rules of catalog tools declared with `phrases` (a TOML-only tool)."""
    rules = []
    for spec in catalog.values():
        phrases = getattr(spec, "phrases", None)
        if not phrases:
            continue
        zh = tuple(re.escape(p.casefold()) for p in getattr(phrases, "zh", ()) or ())
        en = tuple(
            " ".join(re.escape(word) for word in p.casefold().split())
            for p in getattr(phrases, "en", ()) or ()
        )
        if zh or en:
            pattern = Terms(zh=zh, en=en).compile()
            rules.append(CustomPhrases(spec.name, pattern, spec.risk is Risk.HIGH))
    return rules


class RuleBasedPlanner:
    """Plans from keyword tables: deterministic, no I/O, never raises on customer text.

    `order_id_pattern` describes one order id (default: a letter and 3-10 digits). It is
    matched case-insensitively, ASCII only, and only as a whole token: "XA1001" or
    "A10012345678901" contain no order id. Ids are returned upper-cased. `catalog` is the
    tools in use: their goals, risks and declared phrases.
    """

    def __init__(
        self,
        order_id_pattern: str = DEFAULT_ORDER_ID_PATTERN,
        catalog: Mapping[str, ToolSpec] = CATALOG,
        intents: Sequence[IntentDef] | None = None,
        meaning: Sequence[SemanticIndex] = (),
    ) -> None:
        """`intents`: the intent inventory recognition compares requests with (the built-in
        `agent_core/understanding/recognition/intents.toml` by default, a shop's extension otherwise);
        `meaning`: that inventory's examples by meaning (`semantic_indexes`), in order of
        preference; none: recognition by their words alone."""
        self._reader = Reader(order_id_pattern)
        self._example = example_order_id(order_id_pattern)
        if intents is None and not meaning:
            self._recogniser = _built_in_recogniser()
        else:
            self._recogniser = Recogniser(
                intents if intents is not None else built_in_intents(), meaning
            )
        # An endpoint answers over the network: then the plan is drafted off the event loop.
        self._blocking = any(index.blocking for index in meaning)
        self._queries = faq_queries(self._recogniser.intents)
        self._catalog = catalog
        self._custom = custom_phrases(catalog)
        self._customer_tools = customer_tools(catalog)
        refund = catalog.get(Action.REFUND.value)
        self._amount_required = refund is not None and "amount" in (
            refund.args_model.model_json_schema().get("required") or []
        )

    def read(self, cleaned: str) -> Reading:
        """The reading of a cleaned message (order ids, clauses, hidden instructions)."""
        return self._reader.read(cleaned)

    def without_ids(self, cleaned: str) -> str:
        return self._reader.without_ids(cleaned)

    def find_order_ids(self, text: str) -> list[str]:
        """Distinct order ids in `text`, upper-cased, in order of appearance."""
        return self._reader.order_ids(clean(text))

    async def plan(self, request: PlanRequest) -> PlanDraft:
        if self._blocking:
            return await asyncio.to_thread(self.draft, request)
        return self.draft(request)

    def draft(self, request: PlanRequest) -> PlanDraft:
        """`plan`, synchronously (the rules do no I/O)."""
        cleaned = clean(request.text)
        reading = self._reader.read(cleaned)
        without_ids = self._reader.without_ids(cleaned)
        # An order id alone says nothing about the language ("A1001?" from a zh-hans user).
        language = detect_language(without_ids, request.language_hint)
        if not cleaned.strip():
            return PlanDraft(
                language=language,
                refusal=Refusal.EMPTY,
                interpretation=Interpretation(language=language.value),
            )
        last = (request.last_order_id or "").strip().upper() or None
        understood = understand(
            reading,
            language,
            context_order_id=last,
            custom=self._custom,
            amount_required=self._amount_required,
        )
        understood = with_cant_do(understood)
        understood = recognise(
            understood, reading, language, self._recogniser, last, self._customer_tools
        )
        interp = understood.interpretation
        interp.chat_order_id = last
        if interp.clarify is not None:
            interp.clarify = among_chat_orders(interp.clarify, request.chat_order_ids, reading)
            interp.clarify.question = with_example(interp.clarify.question, self._example)
        if understood.refusal is not None:
            return PlanDraft(
                language=language, refusal=Refusal(understood.refusal), interpretation=interp
            )
        steps = build_steps(understood, language, self._catalog, self._queries)
        if not steps:
            return PlanDraft(language=language, refusal=Refusal.UNSUPPORTED, interpretation=interp)
        return PlanDraft(language=language, steps=steps, interpretation=interp)
