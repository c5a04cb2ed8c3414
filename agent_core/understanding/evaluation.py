"""Scoring a planner against labelled cases (`tests/eval/*.jsonl`, `stepwise eval`).

A case is a customer message, the chat's context and the outcome a correct planner
produces (see tests/eval/README.md). A planner's draft is reduced to the same outcome shape
and compared: the kind must match (plan, clarify, choices, unsupported, handoff, refusal
with its reason), and for plans the list of (tool, order id) pairs must be equal, in order.
Two file formats: v1 (`cases.jsonl`) and v2 (`dev.jsonl`, `heldout.jsonl`: a `register`
per case, kind `choices`, `unsupported` with a can't-do `topic`, more FAQ topics).

**clarify vs choices.** Both end the run `needs_clarification`; they differ in what the
question is about. A clarification is an *order question* (kind `clarify`: which order, the
amount or the new address an action on an order needs, what an id-like token means) when it
offers no option at all, or when any option's label or text names an order id. Otherwise —
at least one option and none of them names an order — it is a *menu of things the bot can
do* (kind `choices`). Every clarification today's rule planner asks (agent_core/understanding/clarifying)
is an order question; `choices` is what "help", a greeting or gibberish should get.

**Topics.** `search_policy` topics and the can't-do `topic` of `unsupported` are compared
only in strict mode (`strict=True`, `stepwise eval --strict`), where returns and refund
count as one topic (the shop has one "returns and refunds" policy). A can't-do topic is
also compared outside strict mode when the run's interpretation records topics for what it
could not do (an `unsupported_topics` list on the interpretation, when the planner has one).

Separately, and more important than accuracy, the **wrong-action count**: drafts that
contain a high-risk (tool, order) the case did not ask for. A clarify, choices, handoff or
refusal case allows no high-risk step at all.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_core import lazyre
from agent_core.catalog.builtin import CATALOG, ToolSpec
from agent_core.interpretation import Clarification, Interpretation
from agent_core.understanding.lexicon import POLICY_QUERIES
from agent_core.understanding.planner import (
    PlanDraft,
    Planner,
    PlanRequest,
    Refusal,
    StepDraft,
    is_high_risk,
)

Kind = Literal["plan", "clarify", "choices", "unsupported", "handoff", "refusal"]
POLICY_TOOL = "search_policy"
# An order id anywhere in an option (after NFKC, any case): the option is about an order.
_ORDER_IN_OPTION = lazyre.compile(r"(?<![A-Za-z0-9])[A-Za-z]\d{3,10}(?!\d)")
# The canonical search_policy queries, back to their topic (a step carries only the query).
_TOPIC_OF_QUERY = {
    query.casefold(): topic.value for topic, queries in POLICY_QUERIES.items()
    for query in queries.values()
}  # fmt: skip
# Topics the demo shop answers with one policy: the same topic in strict mode.
_SAME_TOPIC = {"returns": "refund", "after_sales": "refund"}


class CaseStep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str
    order_id: str | None = None
    topic: str | None = None


class Expect(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Kind
    steps: list[CaseStep] = Field(default_factory=list)
    plan_steps: list[CaseStep] = Field(default_factory=list)
    refusal: str | None = None
    # v2: the can't-do topic of an `unsupported` case (account, place_order, ..., other).
    topic: str | None = None


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str
    category: str
    lang: str
    # v2 only: how it is written (plain, typo, negation, ..., homoglyph); v1 cases have none.
    # The JSON key is `register` (a name pydantic's BaseModel already uses).
    style: str | None = Field(default=None, alias="register")
    text: str
    context: dict[str, Any] = Field(default_factory=dict)
    expect: Expect

    def request(self) -> PlanRequest:
        return PlanRequest(
            text=self.text,
            language_hint=self.lang,
            last_order_id=self.context.get("last_order_id"),
        )

    def expected_steps(self) -> list[CaseStep]:
        return self.expect.steps if self.expect.kind == "plan" else self.expect.plan_steps

    def expected_pairs(self) -> list[tuple[str, str | None]]:
        return [(s.tool, s.order_id) for s in self.expected_steps()]


@dataclass(frozen=True)
class Outcome:
    kind: Kind
    pairs: list[tuple[str, str | None]]
    refusal: str | None = None
    # The topic of each search_policy step, in order (None: not known).
    policy_topics: tuple[str | None, ...] = ()
    # What the run recorded it could not do, as can't-do topics (empty: not recorded).
    unsupported_topics: tuple[str, ...] = ()

    def describe(self) -> str:
        topics = iter(self.policy_topics)
        steps = ", ".join(
            f"{t}({o})" if o else _policy(t, next(topics, None)) for t, o in self.pairs
        )
        detail = f" {self.refusal}" if self.refusal else ""
        if self.unsupported_topics:
            detail += f" {'/'.join(self.unsupported_topics)}"
        return f"{self.kind}{detail} [{steps}]"


def _policy(tool: str, topic: str | None) -> str:
    return f"{tool}:{topic}" if tool == POLICY_TOOL and topic else tool


def is_order_question(clarify: Clarification) -> bool:
    """True when a clarifying question is about an order (kind `clarify`), False when it is
    a menu of things the bot can do (kind `choices`): see the module docstring."""
    if not clarify.options:
        return True
    return any(
        _ORDER_IN_OPTION.search(unicodedata.normalize("NFKC", f"{o.label} {o.text}"))
        for o in clarify.options
    )


def policy_topic(step: StepDraft) -> str | None:
    """The topic of a search_policy step: its `topic` argument, else its canonical query."""
    topic = step.args.get("topic")
    if isinstance(topic, str):
        return topic
    query = step.args.get("query")
    return _TOPIC_OF_QUERY.get(query.casefold()) if isinstance(query, str) else None


def recorded_unsupported_topics(interp: Interpretation | None) -> tuple[str, ...]:
    """Can't-do topics the interpretation records, if the planner records any."""
    topics = getattr(interp, "unsupported_topics", None) if interp is not None else None
    return tuple(str(t) for t in topics) if isinstance(topics, list | tuple) else ()


def outcome_of(draft: PlanDraft) -> Outcome:
    """A draft reduced to the shape cases are labelled in."""
    pairs = [(s.tool, s.args.get("order_id")) for s in draft.steps]
    topics = tuple(policy_topic(s) for s in draft.steps if s.tool == POLICY_TOOL)
    interp = draft.interpretation
    refusal = draft.refusal
    if refusal is Refusal.HANDOFF or (interp is not None and interp.handoff is not None):
        return Outcome("handoff", pairs, policy_topics=topics)
    if refusal is Refusal.NEEDS_CLARIFICATION or (interp is not None and interp.clarify):
        clarify = interp.clarify if interp is not None else None
        kind: Kind = "clarify" if clarify is None or is_order_question(clarify) else "choices"
        return Outcome(kind, pairs, policy_topics=topics)
    if interp is not None and interp.unsupported:
        recorded = recorded_unsupported_topics(interp)
        return Outcome("unsupported", pairs, policy_topics=topics, unsupported_topics=recorded)
    if refusal is not None:
        return Outcome("refusal", pairs, refusal.value, policy_topics=topics)
    return Outcome("plan", pairs, policy_topics=topics)


def expected_outcome(case: Case) -> Outcome:
    topics = tuple(s.topic for s in case.expected_steps() if s.tool == POLICY_TOOL)
    cant_do = (case.expect.topic,) if case.expect.topic else ()
    return Outcome(case.expect.kind, case.expected_pairs(), case.expect.refusal, topics, cant_do)


def _same_topics(want: Iterable[str | None], got: Iterable[str | None]) -> bool:
    def canon(topics: Iterable[str | None]) -> list[str | None]:
        return [_SAME_TOPIC.get(t, t) if t else t for t in topics]

    return canon(want) == canon(got)


def matches(case: Case, got: Outcome, *, strict: bool = False) -> bool:
    """Whether a run's outcome is the case's; `strict` also compares the topics."""
    want = expected_outcome(case)
    if want.kind != got.kind:
        return False
    if want.kind == "refusal":
        return want.refusal == got.refusal
    if want.kind not in ("plan", "unsupported"):
        return True
    if want.pairs != got.pairs:
        return False
    if strict and not _same_topics(want.policy_topics, got.policy_topics):
        return False
    if (
        want.kind == "unsupported"
        and want.unsupported_topics
        and (strict or got.unsupported_topics)
    ):
        return want.unsupported_topics[0] in got.unsupported_topics
    return True


def wrong_actions(
    case: Case, got: Outcome, catalog: Mapping[str, ToolSpec] = CATALOG
) -> list[tuple[str, str | None]]:
    """High-risk (tool, order) pairs in the plan that the case did not ask for."""
    allowed = set(case.expected_pairs()) if case.expect.kind in ("plan", "unsupported") else set()
    # (every split, every kind: clarify, choices, handoff and refusal allow no action)
    return [p for p in got.pairs if is_high_risk(p[0], catalog) and p not in allowed]


@dataclass
class Miss:
    case: Case
    got: Outcome
    wrong: list[tuple[str, str | None]]


def _table(title: str, tallies: Mapping[str, list[int]]) -> list[str]:
    if not tallies:
        return []
    width = max(len(title), *(len(n) for n in tallies))
    out = [f"  {title}"] if title else []
    for name, (c, t) in sorted(tallies.items()):
        out.append(f"  {name:<{width}}  {c:>3}/{t:<3}  {100 * c / t:5.1f} %")
    return out


def _tally_json(tallies: Mapping[str, list[int]]) -> dict[str, dict[str, Any]]:
    return {
        name: {"correct": c, "total": t, "accuracy": round(c / t, 4) if t else 0.0}
        for name, (c, t) in sorted(tallies.items())
    }


@dataclass
class Report:
    planner: str
    # The split (file name) the cases came from; "" when not given.
    split: str = ""
    strict: bool = False
    total: int = 0
    correct: int = 0
    per_category: dict[str, list[int]] = field(default_factory=dict)  # [correct, total]
    per_register: dict[str, list[int]] = field(default_factory=dict)  # v2 cases only
    per_language: dict[str, list[int]] = field(default_factory=dict)
    misses: list[Miss] = field(default_factory=list)
    wrong_action_cases: int = 0
    # A sealed split (the held-out one) names its misses by id and register only: whoever
    # tunes recognition reads its aggregates, never its texts or labels.
    sealed: bool = False

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"planner": self.planner}
        if self.split:
            out["split"] = self.split
        out |= {
            "strict": self.strict,
            "total": self.total,
            "correct": self.correct,
            "accuracy": round(self.accuracy, 4),
            "wrong_actions": self.wrong_action_cases,
            "categories": _tally_json(self.per_category),
            "registers": _tally_json(self.per_register),
            "languages": _tally_json(self.per_language),
            "sealed": self.sealed,
            "misses": [self._miss_json(m) for m in self.misses],
        }
        return out

    def _miss_json(self, miss: Miss) -> dict[str, Any]:
        out: dict[str, Any] = {"id": miss.case.id, "register": miss.case.style}
        if not self.sealed:
            out |= {
                "text": miss.case.text,
                "expected": expected_outcome(miss.case).describe(),
                "got": miss.got.describe(),
            }
        # Sealed: the tools only, not the orders the text named.
        out["wrong_actions"] = [t if self.sealed else f"{t}({o})" for t, o in miss.wrong]
        return out

    def lines(self) -> list[str]:
        split = f"  split: {self.split}" if self.split else ""
        strict = "  (strict: topics compared)" if self.strict else ""
        out = [f"planner: {self.planner}{split}{strict}", ""]
        if self.per_register:
            out += _table("per intent (category)", self.per_category)
            out += ["", *_table("per register", self.per_register)]
            out += ["", *_table("per language", self.per_language)]
        else:
            out += _table("", self.per_category)
        out.append("")
        out.append(f"accuracy: {self.correct}/{self.total} = {100 * self.accuracy:.1f} %")
        out.append(f"wrong actions: {self.wrong_action_cases}")
        if self.misses:
            out.append("")
            out.append("misses (sealed: ids only):" if self.sealed else "misses:")
            for miss in self.misses:
                flag = "  WRONG ACTION" if miss.wrong else ""
                register = f" [{miss.case.style}]" if miss.case.style else ""
                if self.sealed:
                    out.append(f"  {miss.case.id}{register}{flag}")
                    continue
                out.append(f"  {miss.case.id}{register}: {miss.case.text!r}{flag}")
                out.append(f"      expected {expected_outcome(miss.case).describe()}")
                out.append(f"      got      {miss.got.describe()}")
        return out


def load_cases(lines: Iterable[str]) -> list[Case]:
    return [Case.model_validate(json.loads(line)) for line in lines if line.strip()]


def _count(tallies: dict[str, list[int]], key: str, ok: bool) -> None:
    tally = tallies.setdefault(key, [0, 0])
    tally[0] += ok
    tally[1] += 1


async def evaluate(
    planner: Planner,
    cases: Iterable[Case],
    *,
    name: str = "rule",
    catalog: Mapping[str, ToolSpec] = CATALOG,
    split: str = "",
    strict: bool = False,
    sealed: bool | None = None,
) -> Report:
    """Score `planner` on `cases`. A split whose name starts with "heldout" is sealed unless
    `sealed=False` is passed (the held-out split's author checking labels)."""
    if sealed is None:
        sealed = split.startswith("heldout")
    report = Report(planner=name, split=split, strict=strict, sealed=sealed)
    for case in cases:
        draft = await planner.plan(case.request())
        got = outcome_of(draft)
        ok = matches(case, got, strict=strict)
        wrong = wrong_actions(case, got, catalog)
        report.total += 1
        report.correct += ok
        _count(report.per_category, case.category, ok)
        _count(report.per_language, case.lang, ok)
        if case.style is not None:
            _count(report.per_register, case.style, ok)
        if wrong:
            report.wrong_action_cases += 1
        if not ok or wrong:
            report.misses.append(Miss(case, got, wrong))
    return report
