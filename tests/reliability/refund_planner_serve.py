"""`stepwise serve` whose planner also plans "refund <amount> for order <id>" (for the crash
suite's refund flows).

The rule planner of this branch has no words for refunds yet (issue 13 gives it them);
this wraps it with the smallest planner that has: the order's status, then the refund.
Everything else is the production `stepwise serve`.
"""

from __future__ import annotations

import re
import sys

import stepwise.runtime
from agent_core.catalog.builtin import GET_ORDER_STATUS, REQUEST_REFUND
from agent_core.models import StepTag
from agent_core.understanding.planner import PlanDraft, PlanRequest, RuleBasedPlanner, StepDraft
from stepwise.cli import main

REFUND = re.compile(r"refund (\d+(?:\.\d+)?) for order ([A-Z]\d+)")


class RefundPlanner(RuleBasedPlanner):
    async def plan(self, request: PlanRequest) -> PlanDraft:
        draft = super().draft(request)
        found = REFUND.search(request.text)
        if found is None:
            return draft
        amount, order_id = found.groups()
        status = GET_ORDER_STATUS.goal_for(draft.language, order_id=order_id)
        refund = REQUEST_REFUND.goal_for(draft.language, order_id=order_id, amount=amount)
        return PlanDraft(
            language=draft.language,
            steps=[
                StepDraft(
                    goal=status,
                    tool=GET_ORDER_STATUS.name,
                    args={"order_id": order_id},
                    tag=StepTag.ORDER_STATUS,
                ),
                StepDraft(
                    goal=refund,
                    tool=REQUEST_REFUND.name,
                    args={"order_id": order_id, "amount": amount},
                    tag=StepTag.ACTION,
                ),
            ],
        )


if __name__ == "__main__":
    stepwise.runtime.RuleBasedPlanner = RefundPlanner  # type: ignore[misc]
    sys.exit(main(sys.argv[1:]))
