"""A change nobody can say happened reaches staff (issue 20, item 2): the cancel got no
clear answer from a backend that ignores idempotency keys, and reading it back failed too.
The customer is told it is being checked; staff read it in the customer's topic, by name,
with the run's link, so a person checks at the shop. Over real HTTP against the stand-in.
"""

from __future__ import annotations

from pathlib import Path

from agent_core.catalog.builtin import CANCEL_ORDER
from agent_core.execution.tools import Tool, ToolFailure
from agent_core.models import ErrorType, Idempotency
from standin import ShownMessage, StandIn
from tests.fakes import Script
from tests.harness import DEMO, prompt_for, start_bot, until
from tests.test_handoff_e2e import FORUM, in_topic, staff_forum, texts
from tests.test_reconcile import PENDING, Reads

ANSWER_EN = "we are checking"


async def test_an_unclear_cancel_is_told_to_the_customer_and_to_staff_by_name(
    standin: StandIn, tmp_path: Path
) -> None:
    staff_forum(standin)
    lost = ToolFailure(ErrorType.TIMEOUT, "no answer: ReadTimeout", may_have_happened=True)
    cancel = Script([lost])
    reads = Reads(ToolFailure(ErrorType.UNAVAILABLE, "read failed: 503"))
    tools = [
        Tool("get_order_status", "s", CANCEL_ORDER.args_model, Script([PENDING])),
        Tool.of(CANCEL_ORDER, cancel, idempotency=Idempotency.IGNORED, reconcile=reads),
    ]
    h = await start_bot(
        standin,
        tmp_path / "unclear.db",
        tools=tools,
        STEPWISE_STAFF_CHAT_ID=str(FORUM),
        STEPWISE_CONSOLE_URL="https://staff.example",
    )
    try:
        standin.inject_message(DEMO, DEMO, "cancel order A1001", first_name="Ada")
        run_id = await until(
            lambda: (runs := h.query("SELECT id FROM runs WHERE status = 'paused'")) and runs[0][0],
            what="the cancel waiting for Confirm",
        )
        prompt = await until(lambda: prompt_for(standin, DEMO, run_id), what="the prompt")
        data = next(d for d in prompt.callback_data if d.startswith("sw:c:"))
        standin.press_button(DEMO, prompt.message_id, data, DEMO)
        await until(lambda: any(ANSWER_EN in t for t in texts(h, DEMO)), what="the customer told")
        assert len(cancel.calls) == 1  # never sent again blindly
        assert len(reads.calls) >= 1

        def alert() -> ShownMessage | None:
            for topic in standin.topics(FORUM):
                for m in in_topic(standin, int(topic["message_thread_id"])):
                    if "Check at the shop" in (m.text or ""):
                        return m
            return None

        shown = await until(alert, what="the staff alert in the customer's topic")
        text = shown.text or ""
        assert "Customer: Ada" in text and "Cancel order A1001" in text
        assert str(DEMO) not in text  # staff see the name, not the id
        links = [e.get("url") for e in shown.entities if e.get("type") == "text_link"]
        assert links == [f"https://staff.example/runs/{run_id}"]
        assert len(cancel.calls) == 1  # still: the alert re-sent nothing
    finally:
        await h.stop()
