"""Free text in, a short plan out.

The planner only proposes: it picks tools and arguments, never runs anything. A request it
cannot plan comes back as a refusal (no order number, unsupported), so no tool runs.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Any, Protocol

from pydantic import BaseModel, Field

from agent_core.catalog import CANCEL_ORDER, GET_ORDER_STATUS, SEARCH_POLICY
from agent_core.lexicon import (
    CANCEL,
    CLAUSE_BREAK,
    CONDITION,
    DELAY_TOPICS,
    FUZZY_VOCABULARY,
    NOT_TYPOS,
    ORDER_NOUN,
    ORDER_REF,
    POLICY_MARKERS,
    STATUS_STRONG,
    STATUS_WEAK,
    TOPIC_PATTERNS,
    TRADITIONAL,
    TYPOS,
    WEAK_REF,
)
from agent_core.lexicon import POLICY_QUERIES as POLICY_QUERIES
from agent_core.lexicon import PolicyTopic as PolicyTopic
from agent_core.models import Language, StepTag


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


# --------------------------------------------------------------------------------------------
# Rule-based planner
#
# How a request becomes a plan, in order:
#   1. clean the text (cap its length, NFKC so full-width characters become ASCII, control
#      characters become spaces) and pull out order ids as whole tokens;
#   2. build a "canonical" string: case-folded, traditional characters folded to simplified,
#      English typos repaired, order ids replaced by a placeholder;
#   3. find policy topics (each topic's matches are blanked so a lower-priority topic cannot
#      reuse the same words: "late delivery compensation" is not also "delivery");
#   4. find order intents (status, cancel, "if it has not arrived ...") in what is left;
#   5. turn the intents into at most four steps, or a refusal.
# Keyword tables are data in `agent_core.lexicon`; English entries only match whole words.
# --------------------------------------------------------------------------------------------

TOOL_GET_ORDER_STATUS = GET_ORDER_STATUS.name
TOOL_CANCEL_ORDER = CANCEL_ORDER.name
TOOL_SEARCH_POLICY = SEARCH_POLICY.name

MAX_STEPS = 4
# Telegram messages are at most 4096 characters; capping keeps the planner's cost bounded.
MAX_TEXT_CHARS = 4096
DEFAULT_ORDER_ID_PATTERN = r"[A-Za-z]\d{3,10}"


_ID_PLACEHOLDER = "\ue000"  # a private-use character: never a letter, digit or keyword
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")
_LATIN = re.compile(r"[A-Za-z]")
_WORD = re.compile(r"[a-z']+")
_SPACES = re.compile(r"[ \t\r\f\v]+")


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


def _clean(text: str) -> str:
    """Cap the length, fold full-width forms to ASCII (NFKC) and blank out control characters.

    Control and format characters (zero-width spaces, BOMs, NULs) become spaces so that
    they can neither hide a keyword nor glue an order id to a word.
    """
    # Capped again after NFKC: a few characters expand a lot ("ﷺ" becomes 18).
    text = unicodedata.normalize("NFKC", text[:MAX_TEXT_CHARS])[:MAX_TEXT_CHARS]
    return "".join(
        ch if ch == "\n" or unicodedata.category(ch) not in ("Cc", "Cf", "Cs") else " "
        for ch in text
    )


def _within_one_edit(a: str, b: str) -> bool:
    """True if `a` becomes `b` by one insertion, deletion, substitution or adjacent swap."""
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diffs = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        if len(diffs) == 1:
            return True
        return (
            len(diffs) == 2
            and diffs[1] == diffs[0] + 1
            and a[diffs[0]] == b[diffs[1]]
            and a[diffs[1]] == b[diffs[0]]
        )
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    i = 0
    while i < len(short) and short[i] == long_[i]:
        i += 1
    return short[i:] == long_[i + 1 :]


@functools.lru_cache(maxsize=4096)
def _fix_word(word: str) -> str:
    """Repair one lower-case English word if it is a known or one-edit typo of a keyword."""
    if word in TYPOS:
        return TYPOS[word]
    if len(word) < 5 or word in FUZZY_VOCABULARY or word in NOT_TYPOS:
        return word
    for keyword in FUZZY_VOCABULARY:
        if _within_one_edit(word, keyword):
            return keyword
    return word


def _canonical(text: str) -> str:
    """Case-folded, simplified, typo-repaired text, with single spaces between words."""
    folded = text.casefold().translate(TRADITIONAL)
    folded = _SPACES.sub(" ", folded)
    return _WORD.sub(lambda m: _fix_word(m.group(0)), folded)


def _blank(text: str, start: int, end: int) -> str:
    """Replace text[start:end] by spaces, keeping every other position where it was."""
    return text[:start] + " " * (end - start) + text[end:]


class _Mention(IntEnum):
    """How clearly a message names delay compensation, counted as a topic or not."""

    NONE = 0
    WEAK = 1  # "delayed", "late delivery", "延迟"
    STRONG = 2  # "compensation", "after-sales", "补偿", "售后"


@dataclass(frozen=True)
class _Signals:
    """What a message says, before deciding on steps."""

    order_id: str | None  # the first order id written in the text, upper-cased
    topics: tuple[PolicyTopic, ...]  # policy questions that count, in order of mention
    delay: _Mention  # compensation or after-sales (strong), "late"/"delayed" (weak)
    strong_ref: bool  # "this order", "my order", "这单"
    weak_ref: bool  # "it", "这个"
    status: bool  # asks where an order is
    cancel: bool  # asks to cancel an order
    condition: bool  # "if", "如果"


def _find_topics(
    canonical: str, clause_has_marker: list[bool], clause_of: list[int], order_context: bool
) -> tuple[list[tuple[int, PolicyTopic]], str, _Mention]:
    """Topics that count (with their position), the text without them, and how strongly
    delay compensation was mentioned.

    Every match of a topic is blanked before the next topic looks (priority order). Only
    counted matches are blanked from the returned text, which is what the order-intent
    keywords see: an uncounted "how do I cancel" must still read as a cancel request.
    """
    seen = canonical
    residual = canonical
    found: list[tuple[int, PolicyTopic]] = []
    delay = _Mention.NONE
    for topic, strong, weak in TOPIC_PATTERNS:
        for pattern in (strong, weak):
            for match in list(pattern.finditer(seen)):
                start, end = match.span()
                if start == end:
                    continue
                seen = _blank(seen, start, end)
                if topic in DELAY_TOPICS:
                    delay = max(delay, _Mention.STRONG if pattern is strong else _Mention.WEAK)
                in_rules_clause = clause_has_marker[clause_of[start]]
                if pattern is strong or in_rules_clause or not order_context:
                    found.append((start, topic))
                    residual = _blank(residual, start, end)
    found.sort(key=lambda item: item[0])
    return found, residual, delay


def _clauses(canonical: str) -> tuple[list[bool], list[int]]:
    """For each clause, whether it asks about rules; for each position, its clause index."""
    has_marker: list[bool] = []
    clause_of: list[int] = []
    start = 0
    for match in [*CLAUSE_BREAK.finditer(canonical), None]:
        end = match.end() if match is not None else len(canonical)
        has_marker.append(POLICY_MARKERS.search(canonical, start, end) is not None)
        clause_of.extend([len(has_marker) - 1] * (end - start))
        start = end
    clause_of.append(len(has_marker) - 1)  # the end position, for empty text
    return has_marker, clause_of


def _analyse(order_ids: list[str], without_ids: str) -> _Signals:
    """Read the intents out of a message whose order ids were replaced by a placeholder."""
    canonical = _canonical(without_ids)
    strong_ref = ORDER_REF.search(canonical) is not None
    has_id = bool(order_ids)
    order_context = has_id or strong_ref or STATUS_STRONG.search(canonical) is not None
    has_marker, clause_of = _clauses(canonical)
    found, residual, delay = _find_topics(canonical, has_marker, clause_of, order_context)
    topics = tuple(dict.fromkeys(topic for _, topic in found))
    names_an_order = has_id or strong_ref or ORDER_NOUN.search(residual) is not None
    status = STATUS_STRONG.search(residual) is not None or (
        names_an_order and STATUS_WEAK.search(residual) is not None
    )
    return _Signals(
        order_id=order_ids[0] if order_ids else None,
        topics=topics,
        delay=delay,
        strong_ref=strong_ref,
        weak_ref=WEAK_REF.search(canonical) is not None,
        status=status,
        cancel=CANCEL.search(residual) is not None,
        condition=CONDITION.search(canonical) is not None,
    )


def _status_step(order_id: str, language: Language) -> StepDraft:
    return StepDraft(
        goal=GET_ORDER_STATUS.goal_for(language, order_id=order_id),
        tool=GET_ORDER_STATUS.name,
        args={"order_id": order_id},
        tag=StepTag.ORDER_STATUS,
    )


def _cancel_step(order_id: str, language: Language) -> StepDraft:
    return StepDraft(
        goal=CANCEL_ORDER.goal_for(language, order_id=order_id),
        tool=CANCEL_ORDER.name,
        args={"order_id": order_id},
        tag=StepTag.CANCEL,
    )


def _policy_step(topic: PolicyTopic, language: Language, tag: StepTag) -> StepDraft:
    query = POLICY_QUERIES[topic][language]
    return StepDraft(
        goal=SEARCH_POLICY.goal_for(language, query=query),
        tool=SEARCH_POLICY.name,
        args={"query": query, "lang": language.value},
        tag=tag,
    )


class RuleBasedPlanner:
    """Plans from keyword tables: deterministic, no I/O, never raises on customer text.

    `order_id_pattern` describes one order id (default: a letter and 3-10 digits). It is
    matched case-insensitively, ASCII only, and only as a whole token: "XA1001" or
    "A10012345678901" contain no order id. Ids are returned upper-cased.
    """

    def __init__(self, order_id_pattern: str = DEFAULT_ORDER_ID_PATTERN) -> None:
        try:
            re.compile(order_id_pattern)
            self._order_id = re.compile(
                rf"(?<![0-9A-Za-z])(?:{order_id_pattern})(?![0-9A-Za-z])",
                re.IGNORECASE | re.ASCII,
            )
        except re.error as exc:
            raise ValueError(f"invalid order id pattern {order_id_pattern!r}: {exc}") from exc

    def find_order_ids(self, text: str) -> list[str]:
        """Distinct order ids in `text`, upper-cased, in order of appearance."""
        return self._order_ids(_clean(text))

    def _order_ids(self, cleaned: str) -> list[str]:
        ids = (m.group(0).upper() for m in self._order_id.finditer(cleaned) if m.group(0))
        return list(dict.fromkeys(ids))

    def plan(self, request: PlanRequest) -> PlanDraft:
        cleaned = _clean(request.text)
        order_ids = self._order_ids(cleaned)
        without_ids = self._order_id.sub(f" {_ID_PLACEHOLDER} ", cleaned)
        # An order id alone says nothing about the language ("A1001?" from a zh-hans user).
        language = detect_language(without_ids.replace(_ID_PLACEHOLDER, " "), request.language_hint)
        if not cleaned.strip():
            return PlanDraft(language=language, refusal=Refusal.EMPTY)
        signals = _analyse(order_ids, without_ids)
        last = (request.last_order_id or "").strip().upper() or None
        return _build_plan(signals, last, language)


def _build_plan(signals: _Signals, last_order_id: str | None, language: Language) -> PlanDraft:
    """Turn signals into steps: order steps first, then policy lookups, at most MAX_STEPS."""
    order_id = signals.order_id or last_order_id
    any_order_mention = signals.order_id is not None or signals.strong_ref
    # "Check A1001 and, if it has not arrived, the compensation policy": the policy lookup
    # only matters while the order is on its way, so it gets its own tag.
    # In "if A1001 is delayed, cancel it" the delay is the condition of the cancel, not a
    # question about compensation; only an explicit "compensation" counts next to a cancel.
    delay_asked = signals.delay is _Mention.STRONG or (
        signals.delay is _Mention.WEAK and not signals.cancel
    )
    about_an_order = (
        any_order_mention or signals.status or (signals.weak_ref and last_order_id is not None)
    )
    conditional_delay = signals.condition and delay_asked and about_an_order
    wants_order = (
        signals.cancel
        or conditional_delay
        or signals.status
        or signals.order_id is not None
        or (signals.strong_ref and not signals.topics)
    )
    topics = list(signals.topics)
    if wants_order and order_id is None:
        # A general question that merely sounds order-ish ("物流延迟怎么补偿") is still
        # answerable from policy; an explicit "cancel" or "my order" needs the number.
        if topics and not signals.cancel and not signals.strong_ref:
            wants_order = False
            conditional_delay = False
        else:
            return PlanDraft(language=language, refusal=Refusal.MISSING_ORDER_ID)
    if not wants_order and not topics:
        return PlanDraft(language=language, refusal=Refusal.UNSUPPORTED)

    steps: list[StepDraft] = []
    if wants_order and order_id is not None:
        steps.append(_status_step(order_id, language))
        if signals.cancel:
            steps.append(_cancel_step(order_id, language))
        if conditional_delay:
            steps.append(
                _policy_step(PolicyTopic.DELAY_COMPENSATION, language, StepTag.DELAY_COMPENSATION)
            )
            topics = [t for t in topics if t not in DELAY_TOPICS]
    steps.extend(_policy_step(topic, language, StepTag.POLICY) for topic in topics)
    # No duplicates by construction: topics are distinct, and the delay topics were removed
    # above when the conditional lookup already covers them.
    return PlanDraft(language=language, steps=steps[:MAX_STEPS])
