"""Scoring a planner against labelled cases (`tests/eval/cases.jsonl`, `stepwise eval`).

A case is a customer message, the chat's context and the outcome a correct planner
produces (see tests/eval/README.md). A planner's draft is reduced to the same outcome shape
and compared: the kind must match (plan, clarify, unsupported, handoff, refusal with its
reason), and for plans the list of (tool, order id) pairs must be equal, in order.

Separately, and more important than accuracy, the **wrong-action count**: drafts that
contain a high-risk (tool, order) the case did not ask for. A clarify, handoff or refusal
case allows no high-risk step at all.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_core.catalog import CATALOG, ToolSpec
from agent_core.planner import PlanDraft, Planner, PlanRequest, Refusal, is_high_risk

Kind = Literal["plan", "clarify", "unsupported", "handoff", "refusal"]


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


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    category: str
    lang: str
    text: str
    context: dict[str, Any] = Field(default_factory=dict)
    expect: Expect

    def request(self) -> PlanRequest:
        return PlanRequest(
            text=self.text,
            language_hint=self.lang,
            last_order_id=self.context.get("last_order_id"),
        )

    def expected_pairs(self) -> list[tuple[str, str | None]]:
        steps = self.expect.steps if self.expect.kind == "plan" else self.expect.plan_steps
        return [(s.tool, s.order_id) for s in steps]


@dataclass(frozen=True)
class Outcome:
    kind: Kind
    pairs: list[tuple[str, str | None]]
    refusal: str | None = None

    def describe(self) -> str:
        steps = ", ".join(f"{t}({o})" if o else t for t, o in self.pairs)
        detail = f" {self.refusal}" if self.refusal else ""
        return f"{self.kind}{detail} [{steps}]"


def outcome_of(draft: PlanDraft) -> Outcome:
    """A draft reduced to the shape cases are labelled in."""
    pairs = [(s.tool, s.args.get("order_id")) for s in draft.steps]
    interp = draft.interpretation
    refusal = draft.refusal
    if refusal is Refusal.HANDOFF or (interp is not None and interp.handoff is not None):
        return Outcome("handoff", pairs)
    if refusal is Refusal.NEEDS_CLARIFICATION or (interp is not None and interp.clarify):
        return Outcome("clarify", pairs)
    if interp is not None and interp.unsupported:
        return Outcome("unsupported", pairs)
    if refusal is not None:
        return Outcome("refusal", pairs, refusal.value)
    return Outcome("plan", pairs)


def expected_outcome(case: Case) -> Outcome:
    return Outcome(case.expect.kind, case.expected_pairs(), case.expect.refusal)


def matches(case: Case, got: Outcome) -> bool:
    want = expected_outcome(case)
    if want.kind != got.kind:
        return False
    if want.kind == "refusal":
        return want.refusal == got.refusal
    if want.kind in ("plan", "unsupported"):
        return want.pairs == got.pairs
    return True


def wrong_actions(
    case: Case, got: Outcome, catalog: Mapping[str, ToolSpec] = CATALOG
) -> list[tuple[str, str | None]]:
    """High-risk (tool, order) pairs in the plan that the case did not ask for."""
    allowed = set(case.expected_pairs()) if case.expect.kind in ("plan", "unsupported") else set()
    return [p for p in got.pairs if is_high_risk(p[0], catalog) and p not in allowed]


@dataclass
class Miss:
    case: Case
    got: Outcome
    wrong: list[tuple[str, str | None]]


@dataclass
class Report:
    planner: str
    total: int = 0
    correct: int = 0
    per_category: dict[str, list[int]] = field(default_factory=dict)  # [correct, total]
    misses: list[Miss] = field(default_factory=list)
    wrong_action_cases: int = 0

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "planner": self.planner,
            "total": self.total,
            "correct": self.correct,
            "accuracy": round(self.accuracy, 4),
            "wrong_actions": self.wrong_action_cases,
            "categories": {
                name: {"correct": c, "total": t, "accuracy": round(c / t, 4) if t else 0.0}
                for name, (c, t) in sorted(self.per_category.items())
            },
            "misses": [
                {
                    "id": m.case.id,
                    "text": m.case.text,
                    "expected": expected_outcome(m.case).describe(),
                    "got": m.got.describe(),
                    "wrong_actions": [f"{t}({o})" for t, o in m.wrong],
                }
                for m in self.misses
            ],
        }

    def lines(self) -> list[str]:
        out = [f"planner: {self.planner}", ""]
        width = max((len(n) for n in self.per_category), default=8)
        for name, (c, t) in sorted(self.per_category.items()):
            out.append(f"  {name:<{width}}  {c:>3}/{t:<3}  {100 * c / t:5.1f} %")
        out.append("")
        out.append(f"accuracy: {self.correct}/{self.total} = {100 * self.accuracy:.1f} %")
        out.append(f"wrong actions: {self.wrong_action_cases}")
        if self.misses:
            out.append("")
            out.append("misses:")
            for miss in self.misses:
                flag = "  WRONG ACTION" if miss.wrong else ""
                out.append(f"  {miss.case.id}: {miss.case.text!r}{flag}")
                out.append(f"      expected {expected_outcome(miss.case).describe()}")
                out.append(f"      got      {miss.got.describe()}")
        return out


def load_cases(lines: Iterable[str]) -> list[Case]:
    return [Case.model_validate(json.loads(line)) for line in lines if line.strip()]


async def evaluate(
    planner: Planner,
    cases: Iterable[Case],
    *,
    name: str = "rule",
    catalog: Mapping[str, ToolSpec] = CATALOG,
) -> Report:
    report = Report(planner=name)
    for case in cases:
        draft = await planner.plan(case.request())
        got = outcome_of(draft)
        ok = matches(case, got)
        wrong = wrong_actions(case, got, catalog)
        report.total += 1
        report.correct += ok
        tally = report.per_category.setdefault(case.category, [0, 0])
        tally[0] += ok
        tally[1] += 1
        if wrong:
            report.wrong_action_cases += 1
        if not ok or wrong:
            report.misses.append(Miss(case, got, wrong))
    return report
