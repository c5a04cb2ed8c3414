"""What the bot itself says (help, refusals, button toasts), in Chinese and English.

Answers about orders come from `agent_core.answers.compose`; this module only holds the bot's own
chrome around them.
"""

from __future__ import annotations

from agent_core.models import Language
from agent_core.understanding.planner import detect_language

ZH, EN = Language.ZH, Language.EN

TEXTS: dict[str, dict[Language, str]] = {
    "help": {
        ZH: (
            "你好！我是客服助手，会先列出计划，再一步步执行给你看。\n\n"
            "你可以这样问我：\n"
            "• 订单 A1001 到哪了？\n"
            "• 帮我查一下订单 A1001 的物流，如果还没送达，再看一下售后政策\n"
            "• 帮我取消订单 A1003（我会先请你确认）\n"
            "• 退货政策是什么？"
        ),
        EN: (
            "Hi! I'm the customer-service assistant. I show you my plan first, then do it "
            "one step at a time.\n\n"
            "Try:\n"
            "• Where is my order A1001?\n"
            "• Check order A1001 and if it hasn't arrived, what's the delay compensation policy?\n"
            "• Cancel order A1003 (I'll ask you to confirm first)\n"
            "• What is your refund policy?"
        ),
    },
    # The command menu (setMyCommands): customers see only /help, in their language.
    "command_help": {ZH: "我能做什么", EN: "What I can do"},
    "text_only": {
        ZH: "抱歉，我只能看懂文字消息。请用文字告诉我订单号和你的问题。",
        EN: "Sorry, I can only read text messages. Please type your order number and question.",
    },
    # An edited message is never a new request (editing "where is A1001" into "cancel
    # A1003" must not cancel anything): the customer is asked to send it anew.
    "edited": {
        ZH: "我只处理新消息，这次修改没有执行任何操作。如有需要，请把它作为一条新消息发送。",
        EN: "I only act on new messages, so nothing was done for this edit. If you need it, please send it as a new message.",
    },
    "too_long": {
        ZH: "这条消息太长了（超过 4096 个字符），请简短描述你的问题。",
        EN: "That message is too long (over 4096 characters). Please describe it more briefly.",
    },
    "empty": {
        ZH: "我没有收到文字内容，请告诉我你的问题。",
        EN: "I didn't get any text. Please tell me what you need.",
    },
    # A lone surrogate (a broken emoji from a buggy client) cannot be stored or read: asking
    # again as it is could never succeed, so "busy, try again" would be wrong.
    "unreadable": {
        ZH: "这条消息里有无法识别的字符，请重新输入后再发送。",
        EN: "Part of that message couldn't be read. Please type it again and resend it.",
    },
    # A chat over its queue cap (`bot.inbox`): said once; every message is kept and
    # answered in order.
    "slow_down": {
        ZH: "消息有点多，我会按顺序逐条回复，请稍等，不用重发。",
        EN: "That's a lot of messages at once. I'll answer them in order, so there's no need to resend anything.",
    },
    "busy": {
        ZH: "抱歉，系统暂时无法处理你的请求，没有做任何改动。请稍后再试。",
        EN: "Sorry, I can't proceed right now and nothing was changed. Please try again in a minute.",
    },
    # After a confirmation: the change may already have happened, so never "nothing changed".
    "busy_resume": {
        ZH: "抱歉，系统出了点问题，这一步暂时没能完成。你的确认已经记录，无需重复点击，请过几分钟再来查看。",
        EN: (
            "Sorry, I couldn't finish this right now because of a problem on our side. Your "
            "confirmation is saved, so there is no need to press again; please check back in "
            "a few minutes."
        ),
    },
    # Staff views list other customers' ids and requests: never in a group's view.
    "staff_private_only": {
        ZH: "员工命令只能在和我的私聊中使用。",
        EN: "Staff commands work only in a private chat with me.",
    },
    "not_authorised": {
        ZH: "抱歉，你没有权限使用这个命令。",
        EN: "Sorry, you are not authorised to use this command.",
    },
    "toast_confirmed": {ZH: "已确认，正在执行。", EN: "Confirmed, working on it."},
    "toast_chosen": {ZH: "好的，正在处理。", EN: "Got it, working on it."},
    "toast_cancelled": {ZH: "已取消，不做任何改动。", EN: "Cancelled, nothing will change."},
    "toast_not_yours": {ZH: "这个按钮不是给你的。", EN: "This button isn't for you."},
    "toast_handled": {ZH: "这个请求已经处理过了。", EN: "This request was already handled."},
    "toast_invalid": {ZH: "这个按钮已失效。", EN: "This button is no longer valid."},
    "toast_expired": {
        ZH: "确认已过期，没有执行任何操作。",
        EN: "This confirmation expired; nothing was done.",
    },
    "toast_busy": {ZH: "系统繁忙，请稍后再按。", EN: "Busy right now, please press again shortly."},
    # The paused step's message once decided. Not yet done: no tick until the step has
    # run (its message is edited again then); a "no" reads as a choice not to do it.
    "you_confirmed": {ZH: "你已确认，正在执行", EN: "you confirmed; working on it"},
    "you_cancelled": {ZH: "你选择了不执行", EN: "you chose not to do it"},
    "team_approved_step": {
        ZH: "我们的同事已批准，正在执行",
        EN: "our team approved; working on it",
    },
    "team_declined_step": {
        ZH: "我们的同事没有批准，未执行",
        EN: "our team did not approve; not done",
    },
    "expired": {ZH: "确认已过期", EN: "confirmation expired"},
    # A person takes over (issue 14). The button under answers that stopped, fell back,
    # left part of the request unserved or asked back twice; /human says the same.
    "talk_to_person": {ZH: "转人工客服", EN: "Talk to a person"},
    "command_human": {ZH: "联系人工客服", EN: "Talk to a person"},
    "handoff_opened": {
        ZH: "好的，已为你转接人工客服。我们的同事会在这里回复你；在此期间我先不自动回答。",
        EN: "OK, I've passed you to our team. A person will reply to you here; until then I'll stay quiet.",
    },
    "handoff_already": {
        ZH: "你已经在和人工客服沟通了，直接在这里留言即可，我们的同事会回复你。",
        EN: "You're already connected to our team. Just write here and a person will reply.",
    },
    # No staff group is set up: recorded, but no promise that anyone will answer here.
    "handoff_unstaffed": {
        ZH: "已记录你想联系人工客服。不过这个聊天目前还没有接通人工客服，无法保证有人在这里回复你。"
        "你可以继续问我订单和售后问题。",
        EN: "I've noted that you'd like to talk to a person, but no one from our team is "
        "connected to this chat yet, so I can't promise a reply here. I can still help with "
        "orders and our policies.",
    },
    # The terminal chat and `stepwise ask`: the handoff is recorded for the Telegram bot.
    "handoff_cli": {
        ZH: "已记录你想联系人工客服，我们的同事会在 Telegram 上回复你。",
        EN: "I've noted that you'd like to talk to a person; someone from our team will reply "
        "to you in Telegram.",
    },
    "handoff_closed": {
        ZH: "人工客服已结束本次对话。如果还有问题，直接问我就好。",
        EN: "Our team has closed this conversation. If you need anything else, just ask me.",
    },
    "handoff_reopened": {
        ZH: "我们的同事重新接手了你的对话，会在这里回复你。",
        EN: "Our team has picked up your conversation again and will reply to you here.",
    },
    "staff_edited": {ZH: "（已修改）", EN: "(edited) "},
    # Issue 20 #5. Telegram refused for good to copy a customer's message to our team.
    "relay_failed": {
        ZH: "抱歉，你刚才的消息没能转给我们的同事，请再发一次。",
        EN: "Sorry, your last message didn't reach our team. Please send it again.",
    },
    # A handoff asked for in a group happens in the asker's private chat with the bot
    # (`bot.handoff.handoff_is_private`); the button opens it.
    "handoff_private_only": {
        ZH: "为了保护你的订单信息，人工客服只在私聊中接待。点下面的按钮，在私聊里继续吧。",
        EN: "To keep your order details private, our team talks to you in a private chat. "
        "Tap the button below to continue there.",
    },
    "handoff_private_button": {ZH: "私聊联系人工客服", EN: "Talk to a person privately"},
    # "/word" that is no command of ours and says nothing more ({commands}: the real ones).
    "unknown_command": {
        ZH: "我不认识 {command} 这个命令。可用的命令：{commands}。也可以直接告诉我你需要什么，"
        "比如“订单 A1001 到哪了？”",
        EN: "I don't know the command {command}. Commands I know: {commands}. Or just tell "
        "me what you need, like “where is my order A1001?”",
    },
    # `/start <token>`: the shop's "Link Telegram" deep link handed over (`bot.link`).
    "linked": {
        ZH: "你的 Telegram 已关联到你在本店的账号。现在可以问我你的订单了。",
        EN: "Your Telegram is now linked to your shop account. Ask me about your orders.",
    },
    "link_refused": {
        ZH: "这个链接已过期或已被使用。请在你的账号页面重新生成一个。",
        EN: "That link has expired or was already used. Make a new one on your account page.",
    },
    "link_unavailable": {
        ZH: "我暂时联系不上商店，请过一分钟再点一次链接。",
        EN: "I couldn't reach the shop just now; please press the link again in a minute.",
    },
    # Replayed after a crash: the stored update has no token any more (never on disk).
    "link_interrupted": {
        ZH: "关联没有完成，请在你的账号页面再点一次链接。",
        EN: "Linking didn't finish; please press the link on your account page again.",
    },
    "toast_person": {ZH: "正在为你转接人工客服。", EN: "Connecting you to a person."},
    "toast_staff_only": {ZH: "只有员工可以操作。", EN: "Only staff can do this."},
    "toast_closed": {ZH: "已结束。", EN: "Closed."},
    # Staff approval (issue 14 item 6): the customer waits for a staff member's decision.
    "waiting_for_team": {
        ZH: "这一步需要我们的同事审核，请稍候，审核结果会在这里通知你。",
        EN: "This needs approval from our team. Please wait; I'll tell you here what they decide.",
    },
    "team_approved": {
        ZH: "我们的同事已批准，正在处理。",
        EN: "Our team approved it; working on it now.",
    },
    # Why staff rejected (preset reasons, `bot.callbacks.REJECT_REASONS`).
    "reject_reason_l": {
        ZH: "原因：金额超出了我们可以批准的范围。",
        EN: "Reason: the amount is more than we can approve.",
    },
    "reject_reason_d": {
        ZH: "原因：我们需要更多材料（例如照片或凭证）才能处理。",
        EN: "Reason: we need more documents (for example photos or a receipt) to process it.",
    },
    "reject_reason_p": {
        ZH: "原因：根据我们的售后政策无法办理。",
        EN: "Reason: our after-sales policy does not allow it.",
    },
    "toast_pick_reason": {ZH: "请选择拒绝原因。", EN: "Pick a reason for the customer."},
    # A staff member pressed a staff button on their own order (issue 20): never theirs.
    "toast_own_order": {
        ZH: "这是你自己的订单，请让其他同事审批。",
        EN: "This is your own order; another team member must decide.",
    },
}


def say(key: str, language: Language) -> str:
    return TEXTS[key][language]


def language_of(text: str | None, language_code: str | None) -> Language:
    """The customer's language: from what they wrote, with Telegram's setting as a hint."""
    return detect_language(text or "", language_code)
