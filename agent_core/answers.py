"""Customer-facing text, built only from what the plan observed.

What was found, what failed and why, what was retried, degraded or skipped, and what the
customer can do next — in the run's language. Nothing here invents a fact: a policy is
quoted only if `search_policy` returned it, an order status only if the tool saw it.
"""

from __future__ import annotations

from typing import Any

from agent_core import answer_notes
from agent_core.catalog import CANCEL_ORDER, GET_ORDER_STATUS, SEARCH_POLICY
from agent_core.models import ErrorType, Language, PlanStep, Run, RunStatus, StepStatus

ZH, EN = Language.ZH, Language.EN

ORDER_STATUS_LABEL: dict[Language, dict[str, str]] = {
    ZH: {"pending": "待发货", "shipping": "运输中", "delivered": "已签收", "cancelled": "已取消"},
    EN: {
        "pending": "not shipped yet",
        "shipping": "on its way",
        "delivered": "delivered",
        "cancelled": "cancelled",
    },
}

REFUSALS: dict[str, dict[Language, str]] = {
    "empty": {
        ZH: "我没有收到文字内容。可以告诉我订单号和你想做的事，例如“订单 A1001 到哪了”。",
        EN: 'I didn\'t get any text. Tell me your order number and what you need, e.g. "where is order A1001?"',
    },
    "missing_order_id": {
        ZH: "请告诉我订单号（例如 A1001），我就能帮你处理。",
        EN: "Please tell me your order number (for example A1001) and I'll take care of it.",
    },
    "unsupported": {
        ZH: "我可以帮你：查询订单物流（“订单 A1001 到哪了”）、查询售后政策（退货、配送、延迟补偿）、"
        "取消订单（“帮我取消订单 A1001”）。其他问题请联系人工客服。",
        EN: 'I can help you track an order ("where is order A1001?"), look up our policies '
        '(refunds, shipping, delay compensation) or cancel an order ("cancel order A1001"). '
        "For anything else, please contact a human agent.",
    },
}

NEXT_STEP_AFTER_FAILURE: dict[str, dict[Language, str]] = {
    ErrorType.NOT_FOUND: {
        ZH: "请核对订单号后再试。",
        EN: "Please check the order number and try again.",
    },
    ErrorType.PERMISSION_DENIED: {
        ZH: "如果这是你的订单，请用下单时绑定的账号联系我们。",
        EN: "If this is your order, please write from the account you ordered with.",
    },
    ErrorType.TIMEOUT: {
        ZH: "系统暂时繁忙，请稍后再试。",
        EN: "Our systems are busy; please try again in a few minutes.",
    },
    ErrorType.UNAVAILABLE: {
        ZH: "系统暂时繁忙，请稍后再试。",
        EN: "Our systems are busy; please try again in a few minutes.",
    },
    "max_steps": {
        ZH: "请把问题拆成更小的请求，或联系人工客服。",
        EN: "Please split the request into smaller ones, or contact a human agent.",
    },
}
DEFAULT_NEXT_STEP: dict[Language, str] = {
    ZH: "如需帮助，请联系人工客服。",
    EN: "If you need more help, please contact a human agent.",
}


def compose_answer(run: Run) -> str:
    """The final (or, for a paused run, current) answer for the customer."""
    lang = run.language
    asked_back = answer_notes.clarify_answer(run) or answer_notes.handoff_answer(run)
    if asked_back is not None:
        return asked_back
    if run.refusal in ("unknown_tool", "invalid_arguments"):
        return DEFAULT_NEXT_STEP[lang]
    if run.refusal is not None:
        refusal = REFUSALS.get(run.refusal, REFUSALS["unsupported"])[lang]
        return "\n".join([*answer_notes.unsupported_lines(run), refusal])
    lines = [line for step in run.steps if (line := describe_outcome(step, run))]
    if context := answer_notes.context_line(run):
        lines.insert(0, context)
    if not_covered := answer_notes.not_covered_line(run):
        lines.append(not_covered)
    lines.extend(answer_notes.unsupported_lines(run))
    if run.stop_reason == "max_steps":
        lines.append(
            "处理步骤超过上限，我已停下来，剩下的步骤没有执行。"
            if lang is ZH
            else "This took more steps than allowed, so I stopped; the remaining steps were not run."
        )
    if run.status is RunStatus.EXPIRED:
        lines.append(
            "确认已超时，没有执行任何操作。如仍需要，请重新发送请求。"
            if lang is ZH
            else "The confirmation expired, so nothing was changed. Send the request again if you still need it."
        )
    follow_up = next_step_hint(run)
    if follow_up:
        lines.append(follow_up)
    return "\n".join(lines)


def next_step_hint(run: Run) -> str | None:
    lang = run.language
    if run.status is RunStatus.PAUSED:
        return (
            "请点击下方的“确认”或“取消”。"
            if lang is ZH
            else "Please press Confirm or Cancel below."
        )
    if run.status is RunStatus.FAILED:
        return NEXT_STEP_AFTER_FAILURE.get(run.stop_reason or "", DEFAULT_NEXT_STEP)[lang]
    if any(step.status is StepStatus.FALLBACK for step in run.steps):
        return DEFAULT_NEXT_STEP[lang]
    return None


def describe_outcome(step: PlanStep, run: Run) -> str | None:
    """One line saying what this step found, or why it has nothing to show."""
    lang = run.language
    order_id = step.args.get("order_id") or run.order_id or ""
    status = step.status
    if status is StepStatus.DONE:
        text = _describe_observation(step, lang)
        if step.retry_count:
            text += (
                f"（重试 {step.retry_count} 次后成功）"
                if lang is ZH
                else f" (succeeded after {step.retry_count} {_plural('retry', step.retry_count)})"
            )
        return text
    if status is StepStatus.SKIPPED:
        return step.skip_reason or (
            f"{step.goal}：已跳过。" if lang is ZH else f"{step.goal}: skipped."
        )
    if status is StepStatus.FALLBACK:
        return _describe_fallback(step, lang)
    if status is StepStatus.FAILED:
        return _describe_failure(step, lang, order_id)
    if status is StepStatus.PAUSED:
        return (
            f"{step.goal}：这一步会修改你的订单，需要你确认后才会执行。"
            if lang is ZH
            else f"{step.goal}: this changes your order, so I need your confirmation first."
        )
    if status is StepStatus.CANCELLED:
        if step.approval is not None and not step.approval.approved:
            return (
                f"好的，已按你的选择放弃「{step.goal}」，订单没有任何改动。"
                if lang is ZH
                else f'OK, I did not "{step.goal.lower()}". Nothing was changed.'
            )
        return f"{step.goal}：未执行。" if lang is ZH else f"{step.goal}: not done."
    if status in (StepStatus.PENDING, StepStatus.RUNNING) and run.is_terminal:
        return (
            f"{step.goal}：因前面的步骤没有完成，未执行。"
            if lang is ZH
            else f"{step.goal}: not done, because an earlier step did not complete."
        )
    return None


def _describe_observation(step: PlanStep, lang: Language) -> str:
    data: Any = step.observation
    if step.tool == GET_ORDER_STATUS.name and isinstance(data, dict) and "status" in data:
        order = data.get("order_id") or step.args.get("order_id", "")
        label = ORDER_STATUS_LABEL[lang].get(str(data["status"]), str(data["status"]))
        eta = data.get("eta")
        if lang is ZH:
            text = f"订单 {order}：{label}"
            return text + (f"，预计 {eta} 送达。" if eta and data["status"] == "shipping" else "。")
        text = f"Order {order} is {label}"
        return text + (f", expected {eta}." if eta and data["status"] == "shipping" else ".")
    if step.tool == SEARCH_POLICY.name:
        policies = data.get("results") if isinstance(data, dict) else data
        if isinstance(policies, list) and policies:
            return "\n".join(_quote_policy(p, lang) for p in policies[:3])
    if (
        step.tool == CANCEL_ORDER.name
        and isinstance(data, dict)
        and data.get("status") == "cancelled"
    ):
        order = data.get("order_id") or step.args.get("order_id", "")
        return f"订单 {order} 已取消。" if lang is ZH else f"Order {order} has been cancelled."
    return f"{step.goal}：已完成。" if lang is ZH else f"{step.goal}: done."


def _quote_policy(policy: Any, lang: Language) -> str:
    if isinstance(policy, dict):
        title, text = str(policy.get("title", "")).strip(), str(policy.get("text", "")).strip()
        if title and text:
            return f"【{title}】{text}" if lang is ZH else f"{title}: {text}"
        return title or text
    return str(policy)


def _describe_fallback(step: PlanStep, lang: Language) -> str:
    if step.tool == SEARCH_POLICY.name:
        query = step.args.get("query", "")
        return (
            f"没有找到关于“{query}”的明确政策，所以我无法确认，不会替你猜测。"
            if lang is ZH
            else f"I found no clear policy about \"{query}\", so I can't confirm it and won't guess."
        )
    return (
        f"{step.goal}：没有找到结果，以下回答不包含这部分信息。"
        if lang is ZH
        else f"{step.goal}: nothing was found, so this answer leaves that part out."
    )


def _describe_failure(step: PlanStep, lang: Language, order_id: str) -> str:
    error = step.error.type if step.error else ErrorType.INTERNAL
    if error is ErrorType.NOT_FOUND:
        return f"没有找到订单 {order_id}。" if lang is ZH else f"I couldn't find order {order_id}."
    if error is ErrorType.PERMISSION_DENIED:
        return (
            f"订单 {order_id} 不属于当前账号，我不能查看或修改它。"
            if lang is ZH
            else f"Order {order_id} doesn't belong to this account, so I can't look at or change it."
        )
    if error in (ErrorType.TIMEOUT, ErrorType.UNAVAILABLE):
        return (
            f"{step.goal}：系统多次没有响应（已重试 {step.retry_count} 次），这次没有完成。"
            if lang is ZH
            else f"{step.goal}: the system did not respond "
            f"(retried {step.retry_count} {_plural('time', step.retry_count)}), so this was not done."
        )
    if error is ErrorType.INVALID_ARGUMENTS and step.tool == CANCEL_ORDER.name:
        return (
            f"订单 {order_id} 当前的状态已经不能取消。"
            if lang is ZH
            else f"Order {order_id} can no longer be cancelled in its current state."
        )
    if error is ErrorType.INVALID_ARGUMENTS:
        return (
            f"{step.goal}：请求的信息有误，没有执行。"
            if lang is ZH
            else f"{step.goal}: the request details were not valid, so it was not done."
        )
    if error is ErrorType.EMPTY_RESULT:
        return f"{step.goal}：没有找到结果。" if lang is ZH else f"{step.goal}: nothing was found."
    return (
        f"{step.goal}：系统内部出了问题，没有完成。"
        if lang is ZH
        else f"{step.goal}: something went wrong on our side, so this was not done."
    )


def _plural(word: str, n: int) -> str:
    if n == 1:
        return word
    return "retries" if word == "retry" else word + "s"


def plan_text(run: Run) -> str:
    """The plan as the customer first sees it: the goal of every step, in order."""
    head = "我的计划：" if run.language is ZH else "Here is my plan:"
    return "\n".join([head, *(f"{n}. {s.goal}" for n, s in enumerate(run.steps, start=1))])


_ICONS = {
    StepStatus.PENDING: "🕓",
    StepStatus.RUNNING: "⏳",
    StepStatus.DONE: "✅",
    StepStatus.SKIPPED: "⏭",
    StepStatus.FALLBACK: "⚠️",
    StepStatus.FAILED: "❌",
    StepStatus.PAUSED: "⏸",
    StepStatus.CANCELLED: "🚫",
}


def step_progress(step: PlanStep, run: Run) -> str:
    """One short line for a step's progress message, edited in place as the step moves on."""
    zh = run.language is ZH
    icon = _ICONS[step.status]
    attempts = f"{step.retry_count + 1}/{step.max_retries + 1}"
    if step.status in (StepStatus.RUNNING, StepStatus.PENDING) and step.retry_count:
        detail = f"重试中（第 {attempts} 次）" if zh else f"retrying (attempt {attempts})"
        return f"🔁 {step.goal} — {detail}"
    details = {
        StepStatus.RUNNING: "进行中…" if zh else "working…",
        StepStatus.DONE: (
            (
                f"完成（重试 {step.retry_count} 次）"
                if zh
                else f"done after {step.retry_count} {_plural('retry', step.retry_count)}"
            )
            if step.retry_count
            else ("完成" if zh else "done")
        ),
        StepStatus.SKIPPED: step.skip_reason or ("已跳过" if zh else "skipped"),
        StepStatus.FALLBACK: "没有找到结果，已降级回答"
        if zh
        else "nothing found, answering without it",
        StepStatus.FAILED: _failure_label(step, zh),
        StepStatus.PAUSED: "需要你的确认" if zh else "waiting for your confirmation",
        StepStatus.CANCELLED: (
            ("你选择了取消，未执行" if zh else "you cancelled it; not done")
            if step.approval is not None and not step.approval.approved
            else ("未执行" if zh else "not done")
        ),
        StepStatus.PENDING: "等待中" if zh else "waiting",
    }
    if step.status is StepStatus.DONE and step.approval is not None and step.approval.approved:
        details[StepStatus.DONE] = "已确认并完成" if zh else "confirmed and done"
    return f"{icon} {step.goal} — {details[step.status]}"


def _failure_label(step: PlanStep, zh: bool) -> str:
    error = step.error.type if step.error else ErrorType.INTERNAL
    labels = {
        ErrorType.NOT_FOUND: ("未找到", "not found"),
        ErrorType.PERMISSION_DENIED: ("无权访问", "not allowed"),
        ErrorType.TIMEOUT: ("多次超时", "timed out"),
        ErrorType.UNAVAILABLE: ("服务暂不可用", "service unavailable"),
        ErrorType.INVALID_ARGUMENTS: ("无法执行", "could not be done"),
    }
    zh_label, en_label = labels.get(error, ("出错了", "failed"))
    return f"失败：{zh_label}" if zh else f"failed: {en_label}"
