"""Golden progress lines, plan text and the Confirm prompt, in zh and en.

Progress lines are what the bot edits in place as a step moves; the Confirm prompt is the
paused step's line, the answer under it and the two buttons. All are snapshotted whole
through their public functions (`step_progress`, `plan_text`, `compose_answer`,
`bot.texts.say`, `bot.progress.decision_text`).
"""

from __future__ import annotations

from typing import Any

from inline_snapshot import snapshot

from agent_core.answers.compose import decision_labels, plan_text, step_progress
from agent_core.models import ErrorType, Language, PlanStep, RunStatus, StepStatus
from bot.progress import decision_text
from bot.texts import say
from tests.golden._support import EN, ZH, plan, run_of, run_to_answer, step

GOAL = {ZH: "查询订单 A1001 的物流状态", EN: "Check the status of order A1001"}
CANCEL_GOAL = {ZH: "取消订单 A1001", EN: "Cancel order A1001"}


def lines(**states: dict[Language, PlanStep]) -> dict[str, dict[str, str]]:
    """The progress line of each named step state, in each language."""
    return {
        name: {lang.value: step_progress(s, run_of(lang, s)) for lang, s in per_lang.items()}
        for name, per_lang in states.items()
    }


def each_lang(status: StepStatus, **kwargs: Any) -> dict[Language, PlanStep]:
    """The same step state in each language (per-language values given as dicts)."""
    kwargs.setdefault("goal", GOAL)
    return {
        lang: step(status, **{k: v[lang] if isinstance(v, dict) else v for k, v in kwargs.items()})
        for lang in (ZH, EN)
    }


def test_progress_line_of_every_step_status() -> None:
    assert lines(
        pending=each_lang(StepStatus.PENDING),
        running=each_lang(StepStatus.RUNNING),
        retrying=each_lang(StepStatus.PENDING, retry_count=1),
        retrying_running=each_lang(StepStatus.RUNNING, retry_count=2),
        done=each_lang(StepStatus.DONE),
        done_after_1_retry=each_lang(StepStatus.DONE, retry_count=1),
        done_after_2_retries=each_lang(StepStatus.DONE, retry_count=2),
        confirmed_and_done=each_lang(StepStatus.DONE, goal=CANCEL_GOAL, approved=True),
        skipped=each_lang(StepStatus.SKIPPED),
        skipped_with_reason=each_lang(
            StepStatus.SKIPPED,
            skip_reason={ZH: "订单 A1001 已签收。", EN: "Order A1001 is delivered."},
        ),
        fallback=each_lang(StepStatus.FALLBACK),
        paused=each_lang(StepStatus.PAUSED, goal=CANCEL_GOAL),
        cancelled_by_customer=each_lang(StepStatus.CANCELLED, goal=CANCEL_GOAL, approved=False),
        cancelled=each_lang(StepStatus.CANCELLED),
    ) == snapshot(
        {
            "pending": {
                "zh": "🕓 查询订单 A1001 的物流状态 — 等待中",
                "en": "🕓 Check the status of order A1001 — waiting",
            },
            "running": {
                "zh": "⏳ 查询订单 A1001 的物流状态 — 进行中…",
                "en": "⏳ Check the status of order A1001 — working…",
            },
            "retrying": {
                "zh": "🔁 查询订单 A1001 的物流状态 — 重试中（第 2/3 次）",
                "en": "🔁 Check the status of order A1001 — retrying (attempt 2/3)",
            },
            "retrying_running": {
                "zh": "🔁 查询订单 A1001 的物流状态 — 重试中（第 3/3 次）",
                "en": "🔁 Check the status of order A1001 — retrying (attempt 3/3)",
            },
            "done": {
                "zh": "✅ 查询订单 A1001 的物流状态 — 完成",
                "en": "✅ Check the status of order A1001 — done",
            },
            "done_after_1_retry": {
                "zh": "✅ 查询订单 A1001 的物流状态 — 完成（重试 1 次）",
                "en": "✅ Check the status of order A1001 — done after 1 retry",
            },
            "done_after_2_retries": {
                "zh": "✅ 查询订单 A1001 的物流状态 — 完成（重试 2 次）",
                "en": "✅ Check the status of order A1001 — done after 2 retries",
            },
            "confirmed_and_done": {
                "zh": "✅ 取消订单 A1001 — 已确认并完成",
                "en": "✅ Cancel order A1001 — confirmed and done",
            },
            "skipped": {
                "zh": "⏭ 查询订单 A1001 的物流状态 — 已跳过",
                "en": "⏭ Check the status of order A1001 — skipped",
            },
            "skipped_with_reason": {
                "zh": "⏭ 查询订单 A1001 的物流状态 — 订单 A1001 已签收。",
                "en": "⏭ Check the status of order A1001 — Order A1001 is delivered.",
            },
            "fallback": {
                "zh": "⚠️ 查询订单 A1001 的物流状态 — 没有找到结果，已降级回答",
                "en": "⚠️ Check the status of order A1001 — nothing found, answering without it",
            },
            "paused": {
                "zh": "⏸ 取消订单 A1001 — 需要你的确认",
                "en": "⏸ Cancel order A1001 — waiting for your confirmation",
            },
            "cancelled_by_customer": {
                "zh": "🚫 取消订单 A1001 — 你选择了不执行",
                "en": "🚫 Cancel order A1001 — you chose not to do it",
            },
            "cancelled": {
                "zh": "🚫 查询订单 A1001 的物流状态 — 未执行",
                "en": "🚫 Check the status of order A1001 — not done",
            },
        }
    )


def test_progress_line_of_every_failure() -> None:
    assert lines(
        **{error.value: each_lang(StepStatus.FAILED, error=error) for error in ErrorType},
        failed_without_error=each_lang(StepStatus.FAILED),
    ) == snapshot(
        {
            "invalid_arguments": {
                "zh": "❌ 查询订单 A1001 的物流状态 — 失败：无法执行",
                "en": "❌ Check the status of order A1001 — failed: could not be done",
            },
            "unknown_tool": {
                "zh": "❌ 查询订单 A1001 的物流状态 — 失败：出错了",
                "en": "❌ Check the status of order A1001 — failed: failed",
            },
            "not_found": {
                "zh": "❌ 查询订单 A1001 的物流状态 — 失败：未找到",
                "en": "❌ Check the status of order A1001 — failed: not found",
            },
            "timeout": {
                "zh": "❌ 查询订单 A1001 的物流状态 — 失败：多次超时",
                "en": "❌ Check the status of order A1001 — failed: timed out",
            },
            "permission_denied": {
                "zh": "❌ 查询订单 A1001 的物流状态 — 失败：未找到",
                "en": "❌ Check the status of order A1001 — failed: not found",
            },
            "confirmation_required": {
                "zh": "❌ 查询订单 A1001 的物流状态 — 失败：出错了",
                "en": "❌ Check the status of order A1001 — failed: failed",
            },
            "empty_result": {
                "zh": "❌ 查询订单 A1001 的物流状态 — 失败：出错了",
                "en": "❌ Check the status of order A1001 — failed: failed",
            },
            "unavailable": {
                "zh": "❌ 查询订单 A1001 的物流状态 — 失败：服务暂不可用",
                "en": "❌ Check the status of order A1001 — failed: service unavailable",
            },
            "internal": {
                "zh": "❌ 查询订单 A1001 的物流状态 — 失败：出错了",
                "en": "❌ Check the status of order A1001 — failed: failed",
            },
            "unknown_outcome": {
                "zh": "❌ 查询订单 A1001 的物流状态 — 结果待核实，请勿重复提交",
                "en": "❌ Check the status of order A1001 — may have been done; being checked",
            },
            "backend": {
                "zh": "❌ 查询订单 A1001 的物流状态 — 失败：订单系统故障",
                "en": "❌ Check the status of order A1001 — failed: order system problem",
            },
            "failed_without_error": {
                "zh": "❌ 查询订单 A1001 的物流状态 — 失败：出错了",
                "en": "❌ Check the status of order A1001 — failed: failed",
            },
        }
    )


def test_plan_text() -> None:
    assert {
        kind: {lang.value: plan_text(plan(kind, lang)) for lang in (ZH, EN)}
        for kind in ("status", "status_then_compensation", "cancel_and_refund")
    } == snapshot(
        {
            "status": {
                "zh": """\
我的计划：
1. 查询订单 A1001 的物流状态\
""",
                "en": """\
Here is my plan:
1. Check the status of order A1001\
""",
            },
            "status_then_compensation": {
                "zh": """\
我的计划：
1. 查询订单 A1001 的物流状态
2. 查询延迟补偿政策\
""",
                "en": """\
Here is my plan:
1. Check the status of order A1001
2. Look up the delay compensation policy\
""",
            },
            "cancel_and_refund": {
                "zh": """\
我的计划：
1. 查询订单 A1001 的物流状态
2. 取消订单 A1001
3. 查询退货政策\
""",
                "en": """\
Here is my plan:
1. Check the status of order A1001
2. Cancel order A1001
3. Look up the refund policy\
""",
            },
        }
    )


async def test_confirm_prompt_and_what_the_buttons_leave_behind() -> None:
    out = {}
    for lang in (ZH, EN):
        run = await run_to_answer("cancel_and_refund", lang)
        assert run.status is RunStatus.PAUSED and run.pause is not None
        paused = run.step(run.pause.step_id)
        out[lang.value] = {
            # The message with the buttons: the step's line, then the answer so far.
            "prompt": step_progress(paused, run) + "\n\n" + (run.answer or ""),
            "buttons": list(decision_labels(run) or ()),
            "after_confirm": decision_text(run, paused.id, "you_confirmed"),
            "after_cancel": decision_text(run, paused.id, "you_cancelled"),
            "after_expiry": decision_text(run, paused.id, "expired"),
            "toasts": {
                key: say(key, lang)
                for key in (
                    "toast_confirmed",
                    "toast_cancelled",
                    "toast_not_yours",
                    "toast_handled",
                    "toast_invalid",
                    "toast_expired",
                    "toast_busy",
                    "busy_resume",
                )
            },
        }
    assert out == snapshot(
        {
            "zh": {
                "prompt": """\
⏸ 取消订单 A1001 — 需要你的确认

订单 A1001：运输中，预计 2026-12-03 送达。
取消订单 A1001：这一步会修改你的订单，需要你确认后才会执行。
请点击下方的“确认取消”或“不取消”。\
""",
                "buttons": ["确认取消", "不取消"],
                "after_confirm": "⏳ 取消订单 A1001 — 你已确认，正在执行",
                "after_cancel": "🚫 取消订单 A1001 — 你选择了不执行",
                "after_expiry": "🚫 取消订单 A1001 — 确认已过期",
                "toasts": {
                    "toast_confirmed": "已确认，正在执行。",
                    "toast_cancelled": "已取消，不做任何改动。",
                    "toast_not_yours": "这个按钮不是给你的。",
                    "toast_handled": "这个请求已经处理过了。",
                    "toast_invalid": "这个按钮已失效。",
                    "toast_expired": "确认已过期，没有执行任何操作。",
                    "toast_busy": "系统繁忙，请稍后再按。",
                    "busy_resume": "抱歉，系统出了点问题，这一步暂时没能完成。你的确认已经记录，无需重复点击，请过几分钟再来查看。",
                },
            },
            "en": {
                "prompt": """\
⏸ Cancel order A1001 — waiting for your confirmation

Order A1001 is on its way, expected 2026-12-03.
Cancel order A1001: this changes your order, so I need your confirmation first.
Please press "Yes, cancel A1001" or "No, keep it" below.\
""",
                "buttons": ["Yes, cancel A1001", "No, keep it"],
                "after_confirm": "⏳ Cancel order A1001 — you confirmed; working on it",
                "after_cancel": "🚫 Cancel order A1001 — you chose not to do it",
                "after_expiry": "🚫 Cancel order A1001 — confirmation expired",
                "toasts": {
                    "toast_confirmed": "Confirmed, working on it.",
                    "toast_cancelled": "Cancelled, nothing will change.",
                    "toast_not_yours": "This button isn't for you.",
                    "toast_handled": "This request was already handled.",
                    "toast_invalid": "This button is no longer valid.",
                    "toast_expired": "This confirmation expired; nothing was done.",
                    "toast_busy": "Busy right now, please press again shortly.",
                    "busy_resume": "Sorry, I couldn't finish this right now because of a problem on our side. Your confirmation is saved, so there is no need to press again; please check back in a few minutes.",
                },
            },
        }
    )


def test_the_bots_own_texts() -> None:
    keys = (
        "help",
        "text_only",
        "too_long",
        "empty",
        "busy",
        "not_authorised",
        "staff_private_only",
    )
    assert {key: {lang.value: say(key, lang) for lang in (ZH, EN)} for key in keys} == snapshot(
        {
            "help": {
                "zh": """\
你好！我是客服助手，会先列出计划，再一步步执行给你看。

你可以这样问我：
• 订单 A1001 到哪了？
• 帮我查一下订单 A1001 的物流，如果还没送达，再看一下售后政策
• 帮我取消订单 A1003（我会先请你确认）
• 退货政策是什么？\
""",
                "en": """\
Hi! I'm the customer-service assistant. I show you my plan first, then do it one step at a time.

Try:
• Where is my order A1001?
• Check order A1001 and if it hasn't arrived, what's the delay compensation policy?
• Cancel order A1003 (I'll ask you to confirm first)
• What is your refund policy?\
""",
            },
            "text_only": {
                "zh": "抱歉，我只能看懂文字消息。请用文字告诉我订单号和你的问题。",
                "en": "Sorry, I can only read text messages. Please type your order number and question.",
            },
            "too_long": {
                "zh": "这条消息太长了（超过 4096 个字符），请简短描述你的问题。",
                "en": "That message is too long (over 4096 characters). Please describe it more briefly.",
            },
            "empty": {
                "zh": "我没有收到文字内容，请告诉我你的问题。",
                "en": "I didn't get any text. Please tell me what you need.",
            },
            "busy": {
                "zh": "抱歉，系统暂时无法处理你的请求，没有做任何改动。请稍后再试。",
                "en": "Sorry, I can't proceed right now and nothing was changed. Please try again in a minute.",
            },
            "not_authorised": {
                "zh": "抱歉，你没有权限使用这个命令。",
                "en": "Sorry, you are not authorised to use this command.",
            },
            "staff_private_only": {
                "zh": "员工命令只能在和我的私聊中使用。",
                "en": "Staff commands work only in a private chat with me.",
            },
        }
    )
