"""Which earlier steps a step needs, and what a failure stops.

A message can hold unrelated requests ("return A1002 and change the address of A1007"):
one failing must not stop the other. So each planned step says which earlier steps it
depends on (`PlanStep.depends_on`), and a failure stops only the steps that depend on it,
directly or through another stopped step; the rest run and are answered, each with its own
outcome.

A step depends on:

* every earlier step about the same order: an action needs its order's status read (and
  a later action on that order, the earlier one);
* every earlier step whose observation a catalog rule reads to decide whether to skip it
  (`SkipRule.after_tool`): "if it is not delivered yet, the delay policy" needs the read
  that says whether it is.

Nothing else: a policy lookup on its own depends on nothing. A run planned before steps
declared this (`depends_on` is None) keeps the old rule: a failure stops the whole run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from agent_core.catalog.spec import SkipRule
from agent_core.models import PlanStep, Run, StepStatus


def declare_dependencies(steps: Sequence[PlanStep], rules: Iterable[SkipRule]) -> None:
    """Set each step's `depends_on` (ids of earlier steps, in plan order)."""
    rules = tuple(rules)
    for index, step in enumerate(steps):
        step.depends_on = [earlier.id for earlier in steps[:index] if _needs(step, earlier, rules)]


def _needs(step: PlanStep, earlier: PlanStep, rules: Sequence[SkipRule]) -> bool:
    order = step.args.get("order_id")
    if order is not None and earlier.args.get("order_id") == order:
        return True
    return any(_gates(rule, step, earlier) for rule in rules)


def _gates(rule: SkipRule, step: PlanStep, earlier: PlanStep) -> bool:
    """`rule` may skip `step` from what `earlier` observes (`rules.update_plan`'s test)."""
    if rule.after_tool != earlier.tool:
        return False
    if rule.skip_tag is not None and step.tag != rule.skip_tag:
        return False
    if rule.skip_tool is not None and step.tool != rule.skip_tool:
        return False
    order = step.args.get("order_id")
    return order is None or order == earlier.args.get("order_id")


def declared(run: Run) -> bool:
    """Every step says what it depends on (a run planned since steps declare it)."""
    return all(step.depends_on is not None for step in run.steps)


def stopped_by(run: Run, failed: PlanStep) -> list[PlanStep]:
    """The pending steps `failed` stops: those that depend on it, directly or through a
    step it stops, in plan order."""
    stopped_ids = {failed.id}
    stopped: list[PlanStep] = []
    for step in run.steps:
        if step.status is not StepStatus.PENDING or step.depends_on is None:
            continue
        if stopped_ids.intersection(step.depends_on):
            stopped_ids.add(step.id)
            stopped.append(step)
    return stopped
