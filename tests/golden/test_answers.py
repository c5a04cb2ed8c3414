"""Golden answers: the exact text a customer reads at the end of a run, in zh and en.

Each test runs a real plan (from the rule-based planner) through the executor with scripted
tools, and snapshots `run.answer` for both languages. A wording change shows up as a diff
of the expected text here, reviewed like code (`pytest --inline-snapshot=review`).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from inline_snapshot import snapshot

from agent_core.agent import Agent
from agent_core.answers.compose import compose_answer
from agent_core.models import ClaimResult, ErrorType, RunStatus, StepStatus
from agent_core.understanding.planner import RuleBasedPlanner
from storage.runs.sqlite import SqliteRunStore
from tests.fakes import fail
from tests.golden._support import (
    CANCELLED,
    COMPENSATION,
    CUSTOMER,
    DELIVERED,
    EN,
    NOW,
    SHIPPING,
    ZH,
    executor,
    plan,
    run_of,
    run_to_answer,
    step,
    tools,
)

LANGS = (ZH, EN)


async def both(kind: str, **kwargs: object) -> dict[str, str]:
    """The answer to the same request in each language."""
    out = {}
    for lang in LANGS:
        run = await run_to_answer(kind, lang, **kwargs)  # type: ignore[arg-type]
        out[lang.value] = run.answer or ""
    return out


async def test_complete_status_shipping_with_eta() -> None:
    assert await both("status") == snapshot(
        {
            "zh": "订单 A1001：运输中，预计 2026-12-03 送达。",
            "en": "Order A1001 is on its way, expected 2026-12-03.",
        }
    )


async def test_complete_status_shipping_without_eta() -> None:
    no_eta = {"order_id": "A1001", "status": "shipping", "eta": None}
    assert await both("status", status=[no_eta]) == snapshot(
        {"zh": "订单 A1001：运输中。", "en": "Order A1001 is on its way."}
    )


async def test_complete_status_pending_and_delivered_never_show_an_eta() -> None:
    # A stale eta on a delivered or not-yet-shipped order must not be quoted.
    pending = {"order_id": "A1001", "status": "pending", "eta": "2026-12-09"}
    delivered = {"order_id": "A1001", "status": "delivered", "eta": "2026-11-28"}
    assert {
        "pending": await both("status", status=[pending]),
        "delivered": await both("status", status=[delivered]),
        "delivered_no_eta": await both("status", status=[DELIVERED]),
    } == snapshot(
        {
            "pending": {"zh": "订单 A1001：待发货。", "en": "Order A1001 is not shipped yet."},
            "delivered": {"zh": "订单 A1001：已签收。", "en": "Order A1001 is delivered."},
            "delivered_no_eta": {"zh": "订单 A1001：已签收。", "en": "Order A1001 is delivered."},
        }
    )


async def test_complete_status_unknown_label_is_quoted_as_is() -> None:
    odd = {"order_id": "A1001", "status": "held_at_customs"}
    assert await both("status", status=[odd]) == snapshot(
        {"zh": "订单 A1001：held_at_customs。", "en": "Order A1001 is held_at_customs."}
    )


async def test_complete_status_then_compensation_quotes_the_policy() -> None:
    out = {}
    for lang in LANGS:
        run = await run_to_answer("status_then_compensation", lang, policy=[COMPENSATION[lang]])
        out[lang.value] = run.answer
    assert out == snapshot(
        {
            "zh": """\
订单 A1001：运输中，预计 2026-12-03 送达。
【延迟补偿】晚到 3 天以上补偿优惠券。\
""",
            "en": """\
Order A1001 is on its way, expected 2026-12-03.
Delay compensation: 3 days late: coupon.\
""",
        }
    )


async def test_complete_policy_lookup_quotes_at_most_three_policies() -> None:
    many = [
        {"title": f"P{n}", "text": f"text {n}."} for n in range(1, 5)
    ]  # four found, three quoted
    untitled = [{"title": "", "text": "Only text."}, "a plain string policy"]
    assert {
        "many": await both("policy", policy=[many]),
        "untitled": await both("policy", policy=[{"results": untitled}]),
    } == snapshot(
        {
            "many": {
                "zh": """\
【P1】text 1.
【P2】text 2.
【P3】text 3.\
""",
                "en": """\
P1: text 1.
P2: text 2.
P3: text 3.\
""",
            },
            "untitled": {
                "zh": """\
Only text.
a plain string policy\
""",
                "en": """\
Only text.
a plain string policy\
""",
            },
        }
    )


async def test_skipped_compensation_after_delivered_or_cancelled() -> None:
    out = {}
    for name, status in (("delivered", DELIVERED), ("cancelled", CANCELLED)):
        for lang in LANGS:
            run = await run_to_answer(
                "status_then_compensation", lang, status=[status], policy=[COMPENSATION[lang]]
            )
            assert run.steps[1].status is StepStatus.SKIPPED
            out[f"{name}_{lang.value}"] = run.answer
    assert out == snapshot(
        {
            "delivered_zh": """\
订单 A1001：已签收。
订单 A1001 已签收，不需要再查延迟补偿。\
""",
            "delivered_en": """\
Order A1001 is delivered.
Order A1001 has been delivered, so delay compensation does not apply.\
""",
            "cancelled_zh": """\
订单 A1001：已取消。
订单 A1001 已取消，不涉及延迟补偿。\
""",
            "cancelled_en": """\
Order A1001 is cancelled.
Order A1001 is cancelled, so delay compensation does not apply.\
""",
        }
    )


async def test_skipped_cancel_after_delivered_or_already_cancelled() -> None:
    out = {}
    for name, status in (("delivered", DELIVERED), ("cancelled", CANCELLED)):
        for lang in LANGS:
            run = await run_to_answer("cancel", lang, status=[status])
            assert run.status is RunStatus.COMPLETED
            out[f"{name}_{lang.value}"] = run.answer
    assert out == snapshot(
        {
            "delivered_zh": """\
订单 A1001：已签收。
订单 A1001 已签收，无法取消；如需退货，可以问我“退货政策是什么”。\
""",
            "delivered_en": """\
Order A1001 is delivered.
Order A1001 has already been delivered, so it can't be cancelled; to send it back, ask me "what is your return policy".\
""",
            "cancelled_zh": """\
订单 A1001：已取消。
订单 A1001 已经是取消状态，无需再次取消。\
""",
            "cancelled_en": """\
Order A1001 is cancelled.
Order A1001 is already cancelled; nothing more to do.\
""",
        }
    )


async def test_retried_once_and_twice() -> None:
    timeout = fail(ErrorType.TIMEOUT, "upstream timed out")
    assert {
        "once": await both("status", status=[timeout, SHIPPING]),
        "twice": await both("status", status=[timeout, timeout, SHIPPING]),
    } == snapshot(
        {
            "once": {
                "zh": "订单 A1001：运输中，预计 2026-12-03 送达。（重试 1 次后成功）",
                "en": "Order A1001 is on its way, expected 2026-12-03. (succeeded after 1 retry)",
            },
            "twice": {
                "zh": "订单 A1001：运输中，预计 2026-12-03 送达。（重试 2 次后成功）",
                "en": "Order A1001 is on its way, expected 2026-12-03. (succeeded after 2 retries)",
            },
        }
    )


async def test_fallback_policy_not_found_and_status_empty() -> None:
    empty = fail(ErrorType.EMPTY_RESULT, "no match")
    assert {
        "policy": await both("policy", policy=[empty]),
        "status": await both("status", status=[empty]),
    } == snapshot(
        {
            "policy": {
                "zh": """\
没有找到关于“退货”的明确政策，所以我无法确认，不会替你猜测。
如需帮助，请联系人工客服。\
""",
                "en": """\
I found no clear policy about "refund", so I can't confirm it and won't guess.
If you need more help, please contact a human agent.\
""",
            },
            "status": {
                "zh": """\
查询订单 A1001 的物流状态：没有找到结果，以下回答不包含这部分信息。
如需帮助，请联系人工客服。\
""",
                "en": """\
Check the status of order A1001: nothing was found, so this answer leaves that part out.
If you need more help, please contact a human agent.\
""",
            },
        }
    )


async def test_paused_waiting_for_confirmation() -> None:
    assert await both("cancel_and_refund") == snapshot(
        {
            "zh": """\
订单 A1001：运输中，预计 2026-12-03 送达。
取消订单 A1001：这一步会修改你的订单，需要你确认后才会执行。
请点击下方的“确认取消”或“不取消”。\
""",
            "en": """\
Order A1001 is on its way, expected 2026-12-03.
Cancel order A1001: this changes your order, so I need your confirmation first.
Please press "Yes, cancel A1001" or "No, keep it" below.\
""",
        }
    )


async def test_confirmed_cancel() -> None:
    assert await both("cancel_and_refund", decision=True) == snapshot(
        {
            "zh": """\
订单 A1001 已取消。
【退货政策】签收后 7 天内可无理由退货。\
""",
            "en": """\
Order A1001 has been cancelled.
Refund policy: Return within 7 days of delivery.\
""",
        }
    )


async def test_declined_cancel_keeps_the_status_and_drops_the_rest() -> None:
    assert await both("cancel_and_refund", decision=False) == snapshot(
        {
            "zh": """\
订单 A1001：运输中，预计 2026-12-03 送达。
好的，已按你的选择放弃「取消订单 A1001」，订单没有任何改动。
查询退货政策：未执行。\
""",
            "en": """\
Order A1001 is on its way, expected 2026-12-03.
OK, I did not "cancel order A1001". Nothing was changed.
Look up the refund policy: not done.\
""",
        }
    )


async def test_expired_confirmation(tmp_path: Path) -> None:
    out = {}
    for lang in LANGS:
        store = await SqliteRunStore.open(tmp_path / f"{lang.value}.db")
        try:
            registry, scripts = tools(lang)
            agent = Agent(
                RuleBasedPlanner(),
                executor(registry, journal=store),
                store,
                approval_ttl=timedelta(hours=1),
                clock=lambda: NOW + timedelta(days=1),
            )
            paused = await agent.executor.start(plan("cancel_and_refund", lang))
            outcome = await agent.decide(paused.id, user_id=CUSTOMER, approved=True)
            assert outcome.result is ClaimResult.EXPIRED and outcome.run is not None
            assert scripts["cancel_order"].calls == []
            out[lang.value] = outcome.run.answer
        finally:
            await store.close()
    assert out == snapshot(
        {
            "zh": """\
订单 A1001：运输中，预计 2026-12-03 送达。
取消订单 A1001：未执行。
查询退货政策：因前面的步骤没有完成，未执行。
确认已超时，没有执行任何操作。如仍需要，请重新发送请求。\
""",
            "en": """\
Order A1001 is on its way, expected 2026-12-03.
Cancel order A1001: not done.
Look up the refund policy: not done, because an earlier step did not complete.
The confirmation expired, so nothing was changed. Send the request again if you still need it.\
""",
        }
    )


@pytest.mark.parametrize(
    "error",
    [
        ErrorType.NOT_FOUND,
        ErrorType.PERMISSION_DENIED,
        ErrorType.INVALID_ARGUMENTS,
        ErrorType.UNKNOWN_TOOL,
        ErrorType.INTERNAL,
    ],
)
async def test_stop_on_a_status_lookup(error: ErrorType) -> None:
    answers = await both("status_then_compensation", status=[fail(error, "scripted")])
    assert answers == STOP_ON_STATUS[error]


STOP_ON_STATUS = {
    ErrorType.NOT_FOUND: snapshot(
        {
            "zh": """\
当前账号下没有找到订单 A1001。
查询延迟补偿政策：因前面的步骤没有完成，未执行。
请核对订单号，并使用下单时的账号联系我们。\
""",
            "en": """\
I couldn't find order A1001 on this account.
Look up the delay compensation policy: not done, because an earlier step did not complete.
Please check the order number, and write from the account you ordered with.\
""",
        }
    ),
    ErrorType.PERMISSION_DENIED: snapshot(
        {
            "zh": """\
当前账号下没有找到订单 A1001。
查询延迟补偿政策：因前面的步骤没有完成，未执行。
请核对订单号，并使用下单时的账号联系我们。\
""",
            "en": """\
I couldn't find order A1001 on this account.
Look up the delay compensation policy: not done, because an earlier step did not complete.
Please check the order number, and write from the account you ordered with.\
""",
        }
    ),
    ErrorType.INVALID_ARGUMENTS: snapshot(
        {
            "zh": """\
查询订单 A1001 的物流状态：请求的信息有误，没有执行。
查询延迟补偿政策：因前面的步骤没有完成，未执行。
如需帮助，请联系人工客服。\
""",
            "en": """\
Check the status of order A1001: the request details were not valid, so it was not done.
Look up the delay compensation policy: not done, because an earlier step did not complete.
If you need more help, please contact a human agent.\
""",
        }
    ),
    ErrorType.UNKNOWN_TOOL: snapshot(
        {
            "zh": """\
查询订单 A1001 的物流状态：系统内部出了问题，没有完成。
查询延迟补偿政策：因前面的步骤没有完成，未执行。
如需帮助，请联系人工客服。\
""",
            "en": """\
Check the status of order A1001: something went wrong on our side, so this was not done.
Look up the delay compensation policy: not done, because an earlier step did not complete.
If you need more help, please contact a human agent.\
""",
        }
    ),
    ErrorType.INTERNAL: snapshot(
        {
            "zh": """\
查询订单 A1001 的物流状态：系统内部出了问题，没有完成。
查询延迟补偿政策：因前面的步骤没有完成，未执行。
如需帮助，请联系人工客服。\
""",
            "en": """\
Check the status of order A1001: something went wrong on our side, so this was not done.
Look up the delay compensation policy: not done, because an earlier step did not complete.
If you need more help, please contact a human agent.\
""",
        }
    ),
}


async def test_stop_after_the_retries_run_out() -> None:
    assert {
        "timeout": await both("status", status=[fail(ErrorType.TIMEOUT, "slow")]),
        "unavailable": await both("status", status=[fail(ErrorType.UNAVAILABLE, "503")]),
    } == snapshot(
        {
            "timeout": {
                "zh": """\
查询订单 A1001 的物流状态：系统多次没有响应（已重试 2 次），这次没有完成。
系统暂时繁忙，请稍后再试。\
""",
                "en": """\
Check the status of order A1001: the system did not respond (retried 2 times), so this was not done.
Our systems are busy; please try again in a few minutes.\
""",
            },
            "unavailable": {
                "zh": """\
查询订单 A1001 的物流状态：系统多次没有响应（已重试 2 次），这次没有完成。
系统暂时繁忙，请稍后再试。\
""",
                "en": """\
Check the status of order A1001: the system did not respond (retried 2 times), so this was not done.
Our systems are busy; please try again in a few minutes.\
""",
            },
        }
    )


async def test_stop_on_an_approved_cancel() -> None:
    assert {
        "invalid_arguments": await both(
            "cancel", decision=True, cancel=[fail(ErrorType.INVALID_ARGUMENTS, "shipped")]
        ),
        "internal": await both("cancel", decision=True, cancel=[fail(ErrorType.INTERNAL, "bug")]),
        "confirmation_required_again": await both(
            "cancel",
            decision=True,
            cancel=[fail(ErrorType.CONFIRMATION_REQUIRED, "confirm again")],
        ),
    } == snapshot(
        {
            "invalid_arguments": {
                "zh": """\
订单 A1001：运输中，预计 2026-12-03 送达。
订单 A1001 当前的状态已经不能取消。
如需帮助，请联系人工客服。\
""",
                "en": """\
Order A1001 is on its way, expected 2026-12-03.
Order A1001 can no longer be cancelled in its current state.
If you need more help, please contact a human agent.\
""",
            },
            "internal": {
                "zh": """\
订单 A1001：运输中，预计 2026-12-03 送达。
取消订单 A1001：系统内部出了问题，没有完成。
如需帮助，请联系人工客服。\
""",
                "en": """\
Order A1001 is on its way, expected 2026-12-03.
Cancel order A1001: something went wrong on our side, so this was not done.
If you need more help, please contact a human agent.\
""",
            },
            "confirmation_required_again": {
                "zh": """\
订单 A1001：运输中，预计 2026-12-03 送达。
取消订单 A1001：系统内部出了问题，没有完成。
如需帮助，请联系人工客服。\
""",
                "en": """\
Order A1001 is on its way, expected 2026-12-03.
Cancel order A1001: something went wrong on our side, so this was not done.
If you need more help, please contact a human agent.\
""",
            },
        }
    )


def test_stop_on_an_empty_result_a_tool_does_not_degrade() -> None:
    # A tool may override the table so that an empty result stops the run.
    out = {}
    for lang in LANGS:
        goal = "查询订单 A1001 的物流状态" if lang is ZH else "Check the status of order A1001"
        failed = step(StepStatus.FAILED, goal=goal, error=ErrorType.EMPTY_RESULT)
        run = run_of(lang, failed, status=RunStatus.FAILED)
        run.stop_reason = ErrorType.EMPTY_RESULT.value
        out[lang.value] = compose_answer(run)
    assert out == snapshot(
        {
            "zh": """\
查询订单 A1001 的物流状态：没有找到结果。
如需帮助，请联系人工客服。\
""",
            "en": """\
Check the status of order A1001: nothing was found.
If you need more help, please contact a human agent.\
""",
        }
    )


async def test_refusals() -> None:
    assert {
        kind: await both(kind) for kind in ("empty", "missing_order_id", "unsupported")
    } == snapshot(
        {
            "empty": {
                "zh": "我没有收到文字内容。可以告诉我订单号和你想做的事，例如“订单 A1001 到哪了”。",
                "en": 'I didn\'t get any text. Tell me your order number and what you need, e.g. "where is order A1001?"',
            },
            "missing_order_id": {
                "zh": "请告诉我订单号（例如 A1001），我就能帮你处理。",
                "en": "Please tell me your order number (for example A1001) and I'll take care of it.",
            },
            "unsupported": {
                "zh": "我可以帮你：查询订单状态（“订单 A1001 到哪了”）；查询售后政策（退货、配送、延迟补偿）；取消订单（“帮我取消订单 A1001”）；申请退货（“订单 A1002 我要退货”）；申请退款（“订单 A1002 退款 59 元”）；修改收货地址（发货前）；查看包裹轨迹（“订单 A1001 的物流轨迹”）。其他问题请联系人工客服。",
                "en": 'I can help you track an order ("where is order A1001?"), look up our policies (refunds, shipping, delay compensation), cancel an order ("cancel order A1001"), request a return ("return order A1002"), request a refund ("refund 59 for order A1002"), change a delivery address (before it ships), or follow a parcel\'s tracking ("track the parcel of A1001"). For anything else, please contact a human agent.',
            },
        }
    )


def test_an_unknown_refusal_falls_back_to_the_help_text() -> None:
    out = {}
    for lang in LANGS:
        run = run_of(lang, status=RunStatus.COMPLETED)
        run.refusal = "something_new"
        out[lang.value] = compose_answer(run)
    assert out == snapshot(
        {
            "zh": "我可以帮你：查询订单状态（“订单 A1001 到哪了”）；查询售后政策（退货、配送、延迟补偿）；取消订单（“帮我取消订单 A1001”）；申请退货（“订单 A1002 我要退货”）；申请退款（“订单 A1002 退款 59 元”）；修改收货地址（发货前）；查看包裹轨迹（“订单 A1001 的物流轨迹”）。其他问题请联系人工客服。",
            "en": 'I can help you track an order ("where is order A1001?"), look up our policies (refunds, shipping, delay compensation), cancel an order ("cancel order A1001"), request a return ("return order A1002"), request a refund ("refund 59 for order A1002"), change a delivery address (before it ships), or follow a parcel\'s tracking ("track the parcel of A1001"). For anything else, please contact a human agent.',
        }
    )


async def test_max_steps() -> None:
    timeout = fail(ErrorType.TIMEOUT, "slow")
    assert await both(
        "status_then_compensation", status=[timeout, SHIPPING], max_attempts=2
    ) == snapshot(
        {
            "zh": """\
订单 A1001：运输中，预计 2026-12-03 送达。（重试 1 次后成功）
查询延迟补偿政策：处理步骤已达上限，未执行。
处理步骤超过上限，我已停下来，剩下的步骤没有执行。
请把问题拆成更小的请求，或联系人工客服。\
""",
            "en": """\
Order A1001 is on its way, expected 2026-12-03. (succeeded after 1 retry)
Look up the delay compensation policy: not done, because I reached the step limit.
This took more steps than allowed, so I stopped; the remaining steps were not run.
Please split the request into smaller ones, or contact a human agent.\
""",
        }
    )


async def test_declined_answer_keeps_the_order_number_as_written() -> None:
    run = await run_to_answer("cancel", EN, decision=False)
    assert 'OK, I did not "cancel order A1001". Nothing was changed.' in (run.answer or "")


async def test_max_steps_does_not_blame_an_earlier_step_that_completed() -> None:
    # The first step completed (after a retry); the second was cut by the step limit, and
    # the answer says so instead of blaming the step that completed.
    timeout = fail(ErrorType.TIMEOUT, "slow")
    lines = {}
    for lang in LANGS:
        run = await run_to_answer(
            "status_then_compensation", lang, status=[timeout, SHIPPING], max_attempts=2
        )
        assert run.steps[0].status is StepStatus.DONE
        assert run.steps[1].status is StepStatus.PENDING
        lines[lang.value] = (run.answer or "").split("\n")[1]
    assert lines == snapshot(
        {
            "zh": "查询延迟补偿政策：处理步骤已达上限，未执行。",
            "en": "Look up the delay compensation policy: not done, because I reached the step limit.",
        }
    )
