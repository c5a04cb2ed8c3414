"""Customer-facing text, built only from what the plan observed.

What was found, what failed and why, what was retried, degraded or skipped, and what the
customer can do next — in the run's language. Nothing here invents a fact: a policy is
quoted only if `search_policy` returned it, an order status only if the tool saw it.

Every tool's wording comes from its catalog entry (`agent_core.catalog.spec.ToolSpec`): how its
result reads (`render`), what a pause asks and what the buttons say, how a refusal or a bad
argument is explained, what "nothing found" means. No tool name is written here. The
functions take the catalog in use (`ToolRegistry.catalog()`; the built-in one by default).

Two rules keep an answer honest and short:
- each order's state is stated once, as last observed: after a successful cancel of an
  order in transit the answer does not also say it "is on its way" (`_superseded`);
- an answer fits two Telegram messages: no line over `MAX_LINE_UNITS` and no answer over
  `MAX_ANSWER_UNITS` UTF-16 code units (what Telegram counts), clipped with "…" otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal, NamedTuple

from agent_core.answers import notes as answer_notes
from agent_core.answers.render import render_result
from agent_core.catalog.builtin import CATALOG
from agent_core.catalog.spec import (
    GENERIC_APPROVE,
    GENERIC_CONFIRM,
    GENERIC_DECLINE,
    Texts,
    ToolSpec,
    fill,
)
from agent_core.models import ErrorType, Language, PlanStep, Run, RunStatus, StepStatus

ZH, EN = Language.ZH, Language.EN

Catalog = Mapping[str, ToolSpec]

# Telegram's limit is 4096 UTF-16 units per message. A message splitter that packs whole
# lines fills each part to more than 4096 - MAX_LINE_UNITS, so an answer of at most
# MAX_ANSWER_UNITS always fits two messages.
TELEGRAM_MESSAGE_UNITS: Final = 4096
MAX_LINE_UNITS: Final = 2000
MAX_ANSWER_UNITS: Final = 6000

REFUSALS: dict[str, dict[Language, str]] = {
    "empty": {
        ZH: "我没有收到文字内容。可以告诉我订单号和你想做的事，例如“订单 A1001 到哪了”。",
        EN: 'I didn\'t get any text. Tell me your order number and what you need, e.g. "where is order A1001?"',
    },
    "missing_order_id": {
        ZH: "请告诉我订单号（例如 A1001），我就能帮你处理。",
        EN: "Please tell me your order number (for example A1001) and I'll take care of it.",
    },
}


def offer_of(spec: ToolSpec, lang: Language) -> str:
    """What a tool does for the customer, as a phrase: its `offer`, else its description."""
    if spec.offer is not None:
        return spec.offer[lang]
    text = spec.description[lang].rstrip("。. ")
    return text[:1].lower() + text[1:] if lang is EN else text


def can_help(lang: Language, catalog: Catalog = CATALOG) -> str:
    """The "I can't help with that" answer: everything the tools in use can do, from the
    catalog (never a hand-kept list that forgets returns, refunds or addresses)."""
    offers = [offer_of(spec, lang) for spec in catalog.values()]
    if lang is ZH:
        return "我可以帮你：" + "；".join(offers) + "。其他问题请联系人工客服。"
    listed = ", ".join(offers[:-1]) + ", or " + offers[-1] if len(offers) > 1 else "".join(offers)
    return f"I can help you {listed}. For anything else, please contact a human agent."


# A customer-keyed tool's failure when the shop has no customer linked to the Telegram user
# (`agent_core.http.customer`); the tools file's `[customer] link` says it in the shop's words.
NOT_LINKED: Final = "not_linked"
NOT_LINKED_TEXT: Final = Texts(
    zh="我还不知道你在本店的客户账号。请先在我们网站的账户页面把 Telegram 和你的客户账号关联，然后再问我。",
    en="I can't see which customer account is yours yet. Please link your Telegram account to "
    "your customer account on our website (your account page), then ask again.",
)


# "Not found" and "not yours" read the same to a customer, so an answer never tells
# whether somebody else's order exists; staff see the typed error.
NOT_ON_THIS_ACCOUNT: dict[Language, str] = {
    ZH: "请核对订单号，并使用下单时的账号联系我们。",
    EN: "Please check the order number, and write from the account you ordered with.",
}

NEXT_STEP_AFTER_FAILURE: dict[str, dict[Language, str]] = {
    ErrorType.NOT_FOUND: NOT_ON_THIS_ACCOUNT,
    ErrorType.PERMISSION_DENIED: NOT_ON_THIS_ACCOUNT,
    ErrorType.TIMEOUT: {
        ZH: "系统暂时繁忙，请稍后再试。",
        EN: "Our systems are busy; please try again in a few minutes.",
    },
    ErrorType.UNAVAILABLE: {
        ZH: "系统暂时繁忙，请稍后再试。",
        EN: "Our systems are busy; please try again in a few minutes.",
    },
    # The change may have been made: a second request could make it twice.
    ErrorType.UNKNOWN_OUTCOME: {
        ZH: "请不要重复提交，我们的同事核实后会在这里回复你。",
        EN: "Please don't send it again; a colleague will check and reply to you here.",
    },
    # The shop's own system is broken (its key refused, its server failing): not the
    # customer's doing, and a person has been told.
    ErrorType.BACKEND: {
        ZH: "请稍后再试。",
        EN: "Please try again a little later.",
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


class Composed(NamedTuple):
    text: str
    clipped: bool  # the full answer did not fit two Telegram messages


def compose_answer(run: Run, catalog: Catalog = CATALOG, surface: Surface = "buttons") -> str:
    """The final (or, for a paused run, current) answer for the customer; a pause's
    prompt says how to answer it on `surface`."""
    return compose(run, catalog, surface).text


def compose(run: Run, catalog: Catalog = CATALOG, surface: Surface = "buttons") -> Composed:
    """The answer, and whether it had to be clipped to fit two Telegram messages."""
    return fit_answer(_compose(run, catalog, surface))


def _compose(run: Run, catalog: Catalog, surface: Surface = "buttons") -> str:
    lang = run.language
    asked_back = answer_notes.clarify_answer(run) or answer_notes.handoff_answer(run)
    if asked_back is not None:
        return asked_back
    if run.refusal in ("unknown_tool", "invalid_arguments"):
        return DEFAULT_NEXT_STEP[lang]
    if run.refusal is not None:
        known = REFUSALS.get(run.refusal)
        refusal = known[lang] if known is not None else can_help(lang, catalog)
        return "\n".join([*answer_notes.unsupported_lines(run), refusal])
    superseded = _superseded(run, catalog)
    lines = [
        line
        for step in run.steps
        if step.id not in superseded and (line := describe_outcome(step, run, catalog))
    ]
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
    follow_up = next_step_hint(run, catalog, surface)
    if follow_up:
        lines.append(follow_up)
    return "\n".join(lines)


def _superseded(run: Run, catalog: Catalog) -> set[str]:
    """Done steps whose statement of an order's state a later done step replaced."""
    if len(run.steps) < 2:
        return set()
    latest: dict[str, str] = {}
    stated: list[tuple[str, str]] = []
    for step in run.steps:
        spec = catalog.get(step.tool)
        data = step.observation
        if step.status is not StepStatus.DONE or spec is None or spec.state_field is None:
            continue
        if not isinstance(data, dict) or data.get(spec.state_field) is None:
            continue
        order = str(data.get("order_id") or step.args.get("order_id") or "")
        stated.append((step.id, order))
        latest[order] = step.id
    return {step_id for step_id, order in stated if latest[order] != step_id}


def utf16_units(text: str) -> int:
    """Length as Telegram counts it (UTF-16 code units: an emoji is two)."""
    return len(text.encode("utf-16-le", errors="surrogatepass")) // 2


def _clip_units(text: str, limit: int) -> str:
    if utf16_units(text) <= limit:
        return text
    out, used = [], 0
    for ch in text:
        size = 2 if ord(ch) > 0xFFFF else 1
        if used + size > limit - 1:
            break
        out.append(ch)
        used += size
    return "".join(out) + "…"


def fit_answer(text: str) -> Composed:
    """`text` cut to fit two Telegram messages: long lines, then the whole, end in "…"."""
    if 2 * len(text) <= MAX_LINE_UNITS:  # a character is at most two units: it fits
        return Composed(text, False)
    lines = [_clip_units(line, MAX_LINE_UNITS) for line in text.split("\n")]
    fitted = _clip_units("\n".join(lines), MAX_ANSWER_UNITS)
    return Composed(fitted, fitted != text)


def decision_labels(run: Run, catalog: Catalog = CATALOG) -> tuple[str, str] | None:
    """The words on the paused step's two buttons (approve, decline), by outcome
    ("Yes, cancel A1003" / "No, keep it"); None when the run is not paused.

    The one source of these words: the bot's buttons and every sentence that names them
    (`next_step_hint`) are built from it, so a prompt never names a button that isn't there.
    """
    if run.pause is None:
        return None
    step = run.step(run.pause.step_id)
    spec = catalog.get(step.tool)
    approve_label = spec.approve_label if spec is not None else GENERIC_APPROVE
    decline_label = spec.decline_label if spec is not None else GENERIC_DECLINE
    goal = step.goal
    if run.language is EN and goal:
        goal = goal[0].lower() + goal[1:]
    values = {**_args(step, spec), "goal": goal}
    approve = fill(approve_label[run.language], values, missing="") or ""
    decline = fill(decline_label[run.language], values, missing="") or ""
    return approve, decline


# Where the customer answers a Confirm prompt: buttons (Telegram, the demo), a typed y/n
# (`stepwise chat`) or a command (`stepwise ask`, then `stepwise confirm`/`reject`).
Surface = Literal["buttons", "reply", "command"]

_DECIDE_HINTS: dict[str, dict[Language, str]] = {
    "buttons": {
        ZH: "请点击下方的“{approve}”或“{decline}”。",
        EN: 'Please press "{approve}" or "{decline}" below.',
    },
    "reply": {
        ZH: "回答 y 表示“{approve}”，回答 n 表示“{decline}”。",
        EN: 'Answer y for "{approve}" or n for "{decline}".',
    },
    # Not "below": `ask --json` has no commands printed under it (the text output does).
    "command": {
        ZH: "用 stepwise confirm 命令表示“{approve}”，用 stepwise reject 命令表示“{decline}”。",
        EN: 'Run "stepwise confirm" for "{approve}", or "stepwise reject" for "{decline}".',
    },
}


STAFF_DECIDES: dict[Language, str] = {
    ZH: "这一步需要我们的同事审核，审核结果会在这里通知你。",
    EN: "This needs approval from our team; I'll tell you here what they decide.",
}


def next_step_hint(
    run: Run, catalog: Catalog = CATALOG, surface: Surface = "buttons"
) -> str | None:
    lang = run.language
    if run.status is RunStatus.PAUSED:
        if run.pause is not None and run.pause.approver == "staff":
            return STAFF_DECIDES[lang]  # the customer has nothing to press or answer
        approve, decline = decision_labels(run, catalog) or ("", "")
        return _DECIDE_HINTS[surface][lang].format(approve=approve, decline=decline)
    if run.status is RunStatus.FAILED:
        if any(s.error is not None and s.error.code == NOT_LINKED for s in run.steps):
            return None  # the failure itself said how to link, once
        return NEXT_STEP_AFTER_FAILURE.get(run.stop_reason or "", DEFAULT_NEXT_STEP)[lang]
    if any(step.status is StepStatus.FALLBACK for step in run.steps):
        return DEFAULT_NEXT_STEP[lang]
    return None


def describe_outcome(step: PlanStep, run: Run, catalog: Catalog = CATALOG) -> str | None:
    """One line saying what this step found, or why it has nothing to show."""
    lang = run.language
    order_id = step.args.get("order_id") or run.order_id or ""
    status = step.status
    spec = catalog.get(step.tool)
    if status is StepStatus.DONE:
        text = _describe_observation(step, lang, spec)
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
        return _describe_fallback(step, lang, spec)
    if status is StepStatus.FAILED:
        return _describe_failure(step, lang, order_id, spec)
    if status is StepStatus.PAUSED:
        confirm = spec.confirm if spec is not None else GENERIC_CONFIRM
        values = {**_args(step, spec), "goal": step.goal}
        return fill(confirm[lang], values, missing="")
    if status is StepStatus.CANCELLED:
        if step.approval is not None and not step.approval.approved:
            if step.approval.by_user_id != run.user_id:  # a staff member decided
                return (
                    f"我们的同事没有批准「{step.goal}」，订单没有任何改动。"
                    if lang is ZH
                    else f'Our team did not approve "{step.goal[:1].lower()}{step.goal[1:]}", '
                    "so nothing was changed."
                )
            return (
                f"好的，已按你的选择放弃「{step.goal}」，订单没有任何改动。"
                if lang is ZH
                else f'OK, I did not "{step.goal[:1].lower()}{step.goal[1:]}". Nothing was changed.'
            )
        return f"{step.goal}：未执行。" if lang is ZH else f"{step.goal}: not done."
    if status in (StepStatus.PENDING, StepStatus.RUNNING) and run.stop_reason == "max_steps":
        # Cut by the step limit, not by an earlier step: every step before it completed
        # or was retried until the run's attempts ran out.
        return (
            f"{step.goal}：处理步骤已达上限，未执行。"
            if lang is ZH
            else f"{step.goal}: not done, because I reached the step limit."
        )
    if status in (StepStatus.PENDING, StepStatus.RUNNING) and run.is_terminal:
        return (
            f"{step.goal}：因前面的步骤没有完成，未执行。"
            if lang is ZH
            else f"{step.goal}: not done, because an earlier step did not complete."
        )
    return None


def _args(step: PlanStep, spec: ToolSpec | None) -> dict[str, str]:
    """The step's arguments as a customer reads them (`59` → `59.00`)."""
    if spec is not None:
        return spec.display_args(step.args)
    return {k: str(v) for k, v in step.args.items() if v is not None}


def _describe_observation(step: PlanStep, lang: Language, spec: ToolSpec | None) -> str:
    if spec is not None:
        text = render_result(spec, step.observation, step.args, lang)
        if text:
            return text
    return f"{step.goal}：已完成。" if lang is ZH else f"{step.goal}: done."


def _describe_fallback(step: PlanStep, lang: Language, spec: ToolSpec | None) -> str:
    if spec is not None and spec.empty is not None:
        return fill(spec.empty[lang], _args(step, spec), missing="") or ""
    return (
        f"{step.goal}：没有找到结果，以下回答不包含这部分信息。"
        if lang is ZH
        else f"{step.goal}: nothing was found, so this answer leaves that part out."
    )


def _describe_failure(step: PlanStep, lang: Language, order_id: str, spec: ToolSpec | None) -> str:
    error = step.error.type if step.error else ErrorType.INTERNAL
    if step.error is not None and step.error.code == NOT_LINKED:
        # The shop does not know this Telegram user yet: how to link, never "which order?".
        told = spec.refusals.get(NOT_LINKED) if spec is not None else None
        return (told or NOT_LINKED_TEXT)[lang]
    if error in (ErrorType.NOT_FOUND, ErrorType.PERMISSION_DENIED):
        return (
            f"当前账号下没有找到订单 {order_id}。"
            if lang is ZH
            else f"I couldn't find order {order_id} on this account."
        )
    if error in (ErrorType.TIMEOUT, ErrorType.UNAVAILABLE):
        return (
            f"{step.goal}：系统多次没有响应（已重试 {step.retry_count} 次），这次没有完成。"
            if lang is ZH
            else f"{step.goal}: the system did not respond "
            f"(retried {step.retry_count} {_plural('time', step.retry_count)}), so this was not done."
        )
    if error is ErrorType.INVALID_ARGUMENTS:
        explained = _explain_invalid(step, lang, spec)
        if explained is not None:
            return explained
        return (
            f"{step.goal}：请求的信息有误，没有执行。"
            if lang is ZH
            else f"{step.goal}: the request details were not valid, so it was not done."
        )
    if error is ErrorType.EMPTY_RESULT:
        return f"{step.goal}：没有找到结果。" if lang is ZH else f"{step.goal}: nothing was found."
    if error is ErrorType.BACKEND:
        return (
            f"{step.goal}：我们的订单系统出了问题，这次没有完成；已通知工作人员。"
            if lang is ZH
            else f"{step.goal}: our order system has a problem, so this was not done; "
            "a person has been told."
        )
    if error is ErrorType.UNKNOWN_OUTCOME:
        # Honest both ways: it may have been made, and it must not be asked for again.
        return (
            f"{step.goal}：系统没有及时答复，这项操作可能已经完成，我们正在核实。"
            if lang is ZH
            else f"{step.goal}: the system did not answer in time, so it may already have "
            "been done; we are checking."
        )
    return (
        f"{step.goal}：系统内部出了问题，没有完成。"
        if lang is ZH
        else f"{step.goal}: something went wrong on our side, so this was not done."
    )


def _explain_invalid(step: PlanStep, lang: Language, spec: ToolSpec | None) -> str | None:
    """A bad argument by its hint ("the amount must be ..."), a refusal by its reason."""
    if spec is None:
        return None
    code = step.error.code if step.error else None
    if code is not None and code.startswith("argument:"):
        hint = spec.arg_hints.get(code.removeprefix("argument:"))
        if hint is None:
            return None
        return f"{step.goal}：{hint[lang]}。" if lang is ZH else f"{step.goal}: {hint[lang]}."
    refusal = spec.refusals.get(code or "") or spec.refusals.get("")
    if refusal is None:
        return None
    return fill(refusal[lang], _args(step, spec), missing="")


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
        StepStatus.SKIPPED: _without_goal(step.skip_reason, step.goal)
        or ("已跳过" if zh else "skipped"),
        StepStatus.FALLBACK: "没有找到结果，已降级回答"
        if zh
        else "nothing found, answering without it",
        StepStatus.FAILED: _failure_label(step, zh),
        StepStatus.PAUSED: (
            ("等待我们的同事审核" if zh else "waiting for our team")
            if run.pause is not None and run.pause.approver == "staff"
            else ("需要你的确认" if zh else "waiting for your confirmation")
        ),
        StepStatus.CANCELLED: (
            ("你选择了不执行" if zh else "you chose not to do it")
            if step.approval is not None and not step.approval.approved
            else ("未执行" if zh else "not done")
        ),
        StepStatus.PENDING: "等待中" if zh else "waiting",
    }
    approval = step.approval
    # Who decided: the customer, or (a staff pause) our team, never "you" for staff.
    by_team = approval is not None and approval.by_user_id != run.user_id
    if step.status is StepStatus.DONE and approval is not None and approval.approved:
        if by_team:
            details[StepStatus.DONE] = (
                "已由我们的同事批准并完成" if zh else "approved by our team and done"
            )
        else:
            details[StepStatus.DONE] = "已确认并完成" if zh else "confirmed and done"
    if step.status is StepStatus.CANCELLED and by_team and approval and not approval.approved:
        details[StepStatus.CANCELLED] = (
            "我们的同事没有批准，未执行" if zh else "our team did not approve; not done"
        )
    return f"{icon} {step.goal} — {details[step.status]}"


def _without_goal(reason: str | None, goal: str) -> str | None:
    """A skip reason that starts with its step's goal (one stopped by a failed step it
    needs: "Cancel order B2001: not done, because …"), without it: the step's line already
    names the goal."""
    for colon in (": ", "："):
        if reason is not None and reason.startswith(goal + colon):
            return reason[len(goal) + len(colon) :]
    return reason


def _failure_label(step: PlanStep, zh: bool) -> str:
    error = step.error.type if step.error else ErrorType.INTERNAL
    labels = {
        ErrorType.NOT_FOUND: ("未找到", "not found"),
        ErrorType.PERMISSION_DENIED: ("未找到", "not found"),
        ErrorType.TIMEOUT: ("多次超时", "timed out"),
        ErrorType.UNAVAILABLE: ("服务暂不可用", "service unavailable"),
        ErrorType.INVALID_ARGUMENTS: ("无法执行", "could not be done"),
        ErrorType.BACKEND: ("订单系统故障", "order system problem"),
    }
    if error is ErrorType.UNKNOWN_OUTCOME:
        # Not a failure the customer may retry: it may have been done.
        return "结果待核实，请勿重复提交" if zh else "may have been done; being checked"
    zh_label, en_label = labels.get(error, ("出错了", "failed"))
    return f"失败：{zh_label}" if zh else f"failed: {en_label}"
