"""Golden zh/en texts of human handoff and staff approval (issue 14): the button, the
command menu entry, what the customer is told when a person takes over (or cannot), closes
and reopens, waits for our team and hears its decision (with a reject's reason), and the
toasts. A change to any of them shows here as a diff to review."""

from __future__ import annotations

from inline_snapshot import snapshot

from agent_core.models import Language
from bot.texts import say

ZH, EN = Language.ZH, Language.EN

KEYS = (
    "talk_to_person",
    "command_human",
    "handoff_opened",
    "handoff_already",
    "handoff_unstaffed",
    "handoff_cli",
    "handoff_closed",
    "handoff_reopened",
    "staff_edited",
    "toast_person",
    "toast_staff_only",
    "toast_closed",
    "waiting_for_team",
    "team_approved",
    "reject_reason_l",
    "reject_reason_d",
    "reject_reason_p",
    "toast_pick_reason",
)


def test_handoff_texts() -> None:
    texts = {key: {lang.value: say(key, lang) for lang in (ZH, EN)} for key in KEYS}
    assert texts == snapshot(
        {
            "talk_to_person": {"zh": "转人工客服", "en": "Talk to a person"},
            "command_human": {"zh": "联系人工客服", "en": "Talk to a person"},
            "handoff_opened": {
                "zh": "好的，已为你转接人工客服。我们的同事会在这里回复你；在此期间我先不自动回答。",
                "en": "OK, I've passed you to our team. A person will reply to you here; until then I'll stay quiet.",
            },
            "handoff_already": {
                "zh": "你已经在和人工客服沟通了，直接在这里留言即可，我们的同事会回复你。",
                "en": "You're already connected to our team. Just write here and a person will reply.",
            },
            "handoff_unstaffed": {
                "zh": "已记录你想联系人工客服。不过这个聊天目前还没有接通人工客服，无法保证有人在这里回复你。你可以继续问我订单和售后问题。",
                "en": "I've noted that you'd like to talk to a person, but no one from our team is connected to this chat yet, so I can't promise a reply here. I can still help with orders and our policies.",
            },
            "handoff_cli": {
                "zh": "已记录你想联系人工客服，我们的同事会在 Telegram 上回复你。",
                "en": "I've noted that you'd like to talk to a person; someone from our team will reply to you in Telegram.",
            },
            "handoff_closed": {
                "zh": "人工客服已结束本次对话。如果还有问题，直接问我就好。",
                "en": "Our team has closed this conversation. If you need anything else, just ask me.",
            },
            "handoff_reopened": {
                "zh": "我们的同事重新接手了你的对话，会在这里回复你。",
                "en": "Our team has picked up your conversation again and will reply to you here.",
            },
            "staff_edited": {"zh": "（已修改）", "en": "(edited) "},
            "toast_person": {"zh": "正在为你转接人工客服。", "en": "Connecting you to a person."},
            "toast_staff_only": {"zh": "只有员工可以操作。", "en": "Only staff can do this."},
            "toast_closed": {"zh": "已结束。", "en": "Closed."},
            "waiting_for_team": {
                "zh": "这一步需要我们的同事审核，请稍候，审核结果会在这里通知你。",
                "en": "This needs approval from our team. Please wait; I'll tell you here what they decide.",
            },
            "team_approved": {
                "zh": "我们的同事已批准，正在处理。",
                "en": "Our team approved it; working on it now.",
            },
            "reject_reason_l": {
                "zh": "原因：金额超出了我们可以批准的范围。",
                "en": "Reason: the amount is more than we can approve.",
            },
            "reject_reason_d": {
                "zh": "原因：我们需要更多材料（例如照片或凭证）才能处理。",
                "en": "Reason: we need more documents (for example photos or a receipt) to process it.",
            },
            "reject_reason_p": {
                "zh": "原因：根据我们的售后政策无法办理。",
                "en": "Reason: our after-sales policy does not allow it.",
            },
            "toast_pick_reason": {
                "zh": "请选择拒绝原因。",
                "en": "Pick a reason for the customer.",
            },
        }
    )


def test_staff_binding_texts() -> None:
    """Issue 20, item 4: a staff member pressing Approve/Reject on their own order."""
    texts = {lang.value: say("toast_own_order", lang) for lang in (ZH, EN)}
    assert texts == snapshot(
        {
            "zh": "这是你自己的订单，请让其他同事审批。",
            "en": "This is your own order; another team member must decide.",
        }
    )


def test_relay_and_private_handoff_texts() -> None:
    """Issue 20 #5: a relay refused for good, a handoff asked for in a group (sent to the
    private chat), and an unknown "/word" (rendered as the bot renders it)."""
    keys = ("relay_failed", "handoff_private_only", "handoff_private_button")
    texts = {key: {lang.value: say(key, lang) for lang in (ZH, EN)} for key in keys}
    texts["unknown_command"] = {
        lang.value: say("unknown_command", lang).format(
            command="/settings", commands="/help, /human"
        )
        for lang in (ZH, EN)
    }
    assert texts == snapshot(
        {
            "relay_failed": {
                "zh": "抱歉，你刚才的消息没能转给我们的同事，请再发一次。",
                "en": "Sorry, your last message didn't reach our team. Please send it again.",
            },
            "handoff_private_only": {
                "zh": "为了保护你的订单信息，人工客服只在私聊中接待。点下面的按钮，在私聊里继续吧。",
                "en": "To keep your order details private, our team talks to you in a private chat. Tap the button below to continue there.",
            },
            "handoff_private_button": {
                "zh": "私聊联系人工客服",
                "en": "Talk to a person privately",
            },
            "unknown_command": {
                "zh": "我不认识 /settings 这个命令。可用的命令：/help, /human。也可以直接告诉我你需要什么，比如“订单 A1001 到哪了？”",
                "en": "I don't know the command /settings. Commands I know: /help, /human. Or just tell me what you need, like “where is my order A1001?”",
            },
        }
    )
