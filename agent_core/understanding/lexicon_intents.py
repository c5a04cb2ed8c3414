"""The rule planner's vocabulary for intents: actions, their negation and question forms,
parcel tracking, kept orders, choosing words, requests for a person, instructions hidden in
a message, and what no tool serves.

Data only, like `agent_core.understanding.lexicon` (policy topics and order-status words); the matcher is
`agent_core.understanding.understand`. Patterns run over the canonical text of one clause (case-folded,
simplified, typo-repaired). Order ids there are private-use placeholder characters
(`ID_CHARS`), an extracted address is `ADDRESS_CHAR`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from agent_core import lazyre
from agent_core.models import Language
from agent_core.understanding.lexicon import Terms

# An order id in canonical text: one private-use character per distinct id (U+E000 + index).
ID_BASE: Final = 0xE000
ID_CHARS: Final = "[\ue000-\uefff]"
ADDRESS_CHAR: Final = "\uf8ff"


class Action(StrEnum):
    """A high-risk request the rule planner recognises, by the tool that serves it."""

    CANCEL = "cancel_order"
    RETURN = "request_return"
    REFUND = "request_refund"
    ADDRESS = "change_address"


TRACK_TOOL: Final = "track_parcel"

# Round 8: a place an order is sent to instead, named but not written out ("my new place",
# "my neighbour's", "the pickup point", 我公司, 爸妈家): an address change whose address is
# still to be asked for. Shared by the address verbs below and by the question rule that
# lets such a place make a request of "can A1005 go to my neighbour's instead?".
_PERSON_EN = (
    r"(?:sister|brother|mum|mom|mother|dad|father|parents|friend|neighbou?r|partner|son"
    r"|daughter|gran|grandma|grandmother|grandparents|aunt|uncle|cousin|boyfriend|girlfriend"
    r"|wife|husband|boss|colleague|in-laws)"
)
PLACE_EN: Final = (
    r"(?:(?:my|our|the|his|her|their) (?:new |other |old |second |holiday |summer |work )?"
    r"(?:place|home|house|flat|apartment|office|work|workplace|job|school|dorm|hotel|cottage"
    r"|studio|shop|store|warehouse|pick ?up point|pick ?up location|collection point"
    r"|parcel locker|locker|post office|depot|parcel shop|campus)"
    rf"|(?:my|our) {_PERSON_EN}(?:'s|s'|s|')?(?: (?:place|house|flat|home|address))?)"
)
PLACE_ZH: Final = (
    r"(?:我家|(?:我|我的)?(?:公司|单位|家里|老家|学校|宿舍|新家|办公室|工作的地方|驿站|菜鸟驿站|快递柜|丰巢|自提点"
    r"|(?:我)?(?:爸妈|父母|爸|妈|姐姐?|哥哥?|弟弟?|妹妹?|朋友|邻居|同事|男朋友|女朋友|老公|老婆)(?:家|那里?|那儿)))"
)
_SENT_TO_A_PLACE_EN = (
    rf"(?:ship|send|deliver|redirect|reroute|re-route|forward|bring|drop off|drop|take)"
    rf" (?:order )?(?:{ID_CHARS}|it) (?:off |over |instead )?to {PLACE_EN}",
    rf"(?:have|get) {ID_CHARS} (?:delivered|sent|shipped|redirected|forwarded) to {PLACE_EN}",
    rf"(?:can|could|should|would) {ID_CHARS} (?:go|be sent|be delivered|be shipped|be redirected)"
    rf" to {PLACE_EN}",
    rf"{ID_CHARS} (?:should|can|could|needs? to|has to|must) (?:really |now )?(?:go|be sent"
    rf"|be delivered|be shipped|be redirected) to {PLACE_EN}",
    rf"(?:redirect|reroute|re-route) (?:order )?{ID_CHARS}",
    # Round 8m: "A1005 needs a different delivery address"
    rf"{ID_CHARS} (?:needs|requires|should have|has to have) (?:a )?(?:different|new|another|other)"
    r" (?:delivery |shipping )?address",
)
_SENT_TO_A_PLACE_ZH = (
    rf"(?:改寄|改送|转寄|改发)(?:到)?(?:{PLACE_ZH})?",
    rf"(?:把|帮我|请|麻烦)[^，,。.;；!?！？]{{0,8}}?(?:寄到|送到|发到){PLACE_ZH}(?!了|过|没)",
    # "A1005 寄到我单位去", "…送到我家吧": a particle that asks (a report ends in 了)
    rf"{ID_CHARS}\s*(?:就|再|都)?(?:寄到|送到|发到){PLACE_ZH}(?:去|吧|就行|就好)",
)
SENT_TO_A_PLACE: Final = Terms(zh=_SENT_TO_A_PLACE_ZH, en=_SENT_TO_A_PLACE_EN).compile()


@dataclass(frozen=True)
class ActionTerms:
    action: Action
    verbs: lazyre.LazyPattern
    # The policy a question about this action is answered by ("can I return …?").
    topic: str


# fmt: off
ACTIONS: tuple[ActionTerms, ...] = (
    ActionTerms(
        Action.ADDRESS,
        Terms(
            zh=(r"改[^，,。.;；!?！？]{0,3}地址", r"地址[^，,。.;；!?！？]{0,6}?(?:改|换|写错|错了)",
                r"(?:修改|更改|更换|改一下)[^，,。.;；!?！？]{0,12}地址", "新地址",
                # Round 5, mixed: "A1003 的 address 要 update 成 …", "地址 change 一下"
                r"(?:地址|address)\s*(?:要|得|需要|帮我|麻烦)\s*(?:update|change|modify)"
                r"|地址\s*(?:update|change|modify)",
                # Round 5: "那个地址我已经不住了" — the address is no longer where they live
                r"地址[^，,。.;；!?！？]{0,6}不住(?:那|那儿|那里|了)",
                *_SENT_TO_A_PLACE_ZH),
            # Round 4 audit: a billing or email address is not where the parcel goes.
            en=(r"(?:change|update|correct|fix|modify|edit)"
                r"(?![^.,;!?]{0,40}\b(?:billing|e-?mail|invoice) address)"
                r"(?: \S+){0,5}? (?:delivery |shipping )?address",
                r"address change", "new address", "wrong address",
                # Round 2: "can the address on A1003 still be changed?", "change where A1005
                # is going"
                r"address(?: \S+){0,5}? (?:be |get |been )?(?:changed|updated|corrected|modified)",
                r"change where (?:\S+ ){0,3}?(?:is going|goes|is being sent|is headed|ships"
                # Round 5: "change where A1007 gets delivered / is sent"
                r"|(?:gets|is|will be) (?:delivered|sent|shipped)|arrives)",
                *_SENT_TO_A_PLACE_EN),
        ).compile(),
        topic="shipping",
    ),
    ActionTerms(
        Action.CANCEL,
        Terms(
            zh=("取消", "撤销", "撤单", r"不要(?=了|啦|喽)", r"不(?:太|怎么)?想要(?=了|啦)", "不买(?=了)",
                r"撤了(?:吧|呗)", "撤掉", "退订", "取销", "退单", "砍了",
                rf"(?:{ID_CHARS}|订单|这单)\s*(?:我)?(?:已经|都|也)?(?:不需要了|别发了|不用发了)",
                # Round 5: "这单就不用发了", "那单也别寄了", "还没发的话就别发了", "这单给我撤了"
                r"(?:这单|那单|这个订单|这笔订单)\s*(?:我)?(?:就|也)?(?:不用|别|不要|不必)(?:再)?(?:发|寄)了",
                r"(?:还没|没)(?:发|发货|寄出)的话\s*(?:就)?(?:别|不用|不要|不必)(?:再)?(?:发|寄)了",
                r"(?:给我|帮我)撤(?:了|掉)(?:吧|呗|啊)?(?=\s*$)",
                # "A1007 用不上了，别寄了": not sent any more is not wanted any more
                r"(?:别|不用|不要)(?:再)?(?:寄|发货)了",
                # Round 5: "现在用不着了，别给我发了" (not mail, ads or the invoice)
                r"(?<!邮件)(?<!短信)(?<!广告)(?<!推送)(?<!消息)(?<!通知)(?<!发票)(?<!票)"
                r"(?:别|不用|不要)(?:再)?给我(?:寄|发)了",
                # Round 3: "A1003 不想买了", "A1003 作废", "把 A1003 撤了", "关闭订单"
                "不想买(?=了)", "作废", "关闭订单", rf"{ID_CHARS}\s*(?:撤(?=了)|撤回)",
                rf"把\s*{ID_CHARS}\s*撤"),
            en=("cancel", "call off", "no longer want", r"don'?t want (?:it|this|that|the order)",
                # "I don't want A1003 anymore", "A1007 won't be necessary after all"
                rf"(?:don'?t|do not|not going to|won'?t|will not) (?:want|need) (?:order )?{ID_CHARS}"
                r" (?:anymore|any more|no more|after all)",
                r"(?:rather|prefer to) not (?:have|get|receive) (?:it|this|that|the order|[\ue000-\uefff])"
                r"(?=\s*(?:$|[,.!;]|at all|any ?more))",
                rf"{ID_CHARS} (?:won'?t|will not) be (?:necessary|needed)(?!\s+(?:to|for)\b)",
                rf"(?:won'?t|will not) be needing (?:order )?{ID_CHARS}",
                # Round 4: "… so I won't be needing it", "I'd rather it didn't get sent"
                r"(?:won'?t|will not) be needing (?:it|this|that|them)(?![a-z])(?! (?:to|for)\b)",
                r"(?:rather|prefer(?: that)?) (?:it|this|that|they) (?:didn'?t|did not|wasn'?t|was not"
                r"|weren'?t|were not) (?:get |be )?(?:sent|shipped|dispatched|delivered)"
                r"(?=\s*(?:$|[,.!;]|at all|any ?more|after all))",
                # Round 3: "void A1003", "withdraw order A1003", "back out of A1003"
                rf"(?:void|withdraw|revoke|undo|get rid of|back out of) (?:the |my |this )?(?:order )?"
                rf"{ID_CHARS}(?!\s*(?:'s|’s)|\s+[a-z]+ (?:address|item|items))",
                r"(?:scrap|ditch|bin|nix|axe) (?:the|my|this|that) (?:order|one|purchase)",
                # Round 8: "stop A1003", "abort A1003", "terminate order A1003", "delete order
                # A1003" (the order itself, said by its id: not "stop A1003 emails", not
                # "delete A1003 from my history")
                rf"(?:stop|halt|abort|terminate|delete) (?:my )?(?:order |purchase )?{ID_CHARS}"
                r"(?!\s*(?:'s|’s|e-?mails?|messages?|notifications?|texts?|updates?|from|in|on|at)(?![a-z]))",
                rf"(?:no longer|don'?t|do not|dont) need (?:my )?(?:order |purchase )?{ID_CHARS}",
                # "A1003 can be called off, we sorted it another way" (said, not asked: with a
                # question mark the clause is asked)
                rf"{ID_CHARS} can be (?:called off|scrapped|binned|dropped)",
                r"(?:don'?t|do not) (?:want|need) (?:one|either|any|both) of (?:them|these|those)",
                rf"^cancell?ing (?:my |the )?(?:order )?{ID_CHARS}",  # "cancelling A1003 pls"
                r"undo (?:my|the|this|that) (?:order|purchase)",
                r"(?:don'?t|do not|no longer) (?:want|need) (?:the (?:thing|stuff|items?) |what )i"
                r" (?:ordered|bought)",
                r"(?:want|need|like|get|have) (?:\S+ ){0,2}?cancell?ed",
                # Issue 21: "I'm cancelling A1003", "requesting cancellation of A1007",
                # "cancellation A1003", "scrap / ditch / bin A1003", "call the whole thing off".
                r"(?:i'?m|i am|we'?re|we are) cancell?ing",
                # Round 8: "forget about cancelling A1003", "stop cancelling it": read so that
                # the withdrawal before it can take it back (WITHDRAWN_BEFORE)
                r"(?:(?<=forget\x20about\x20)|(?<=forget\x20)|(?<=stop\x20)|(?<=quit\x20)|(?<=drop\x20))cancell?ing",
                r"(?:request(?:ing)?|want|would like|need|process)(?: \S+){0,4}? cancell?ation"
                r"(?! (?:rules?|polic|fees?|terms|conditions|charges?))",
                rf"cancell?ation (?:of )?(?:my )?(?:order )?{ID_CHARS}\s*(?:please|pls|plz)",
                rf"{ID_CHARS}\s*cancell?ation\s*(?:please|pls|plz)", rf"^cancell?ation (?:of )?{ID_CHARS}$",
                rf"(?:scrap|ditch|bin|nix|axe|kill|nuke|trash) (?:the |my |this )?(?:order )?{ID_CHARS}",
                r"call (?:the whole thing|the whole order|it all) off",
                # Round 2: "A1003 isn't needed anymore", "please stop it before it ships"
                r"(?:isn'?t|is not|aren'?t|are not|no longer) (?:needed|necessary|required)(?!\s+(?:to|for)\b)",
                rf"stop (?:it|this|that|the order|my order|{ID_CHARS}) (?:before|from)",
                # Round 4: "please make A1003 go away", "A1003 can go, I found it cheaper"
                rf"make (?:order )?{ID_CHARS} go away", rf"{ID_CHARS} can go(?=\s*(?:$|[,.!;]))",
                # Round 5: "I really dont need it anymore", "please stop the order", "it
                # doesn't need to be sent", "there's no point in A1003 coming"
                r"(?:don'?t|do not) need (?:it|this|that|them|the order)"
                r" (?:anymore|any more|no more|after all)",
                r"stop (?:the|my|this|that) order(?=\s*(?:$|[,.!;]|please|pls|plz|now|asap|right now))",
                r"(?:doesn'?t|does not|don'?t|do not) need to be (?:sent|shipped|delivered|dispatched)"
                r"(?=\s*(?:$|[,.!;]|any ?more|after all|at all))",
                rf"no point (?:in )?(?:it|this|that|them|the order|the parcel|the package|{ID_CHARS})"
                r" (?:coming|arriving|being (?:sent|shipped|delivered)|getting (?:sent|shipped|delivered))",
                rf"no point (?:in )?(?:sending|shipping|delivering) (?:it|this|that|them|the order|{ID_CHARS})",
                # "A1003 get rid of it", "A1007 not needed any more", "… so please stop it"
                # (each at the end of its clause)
                # "I no longer have any use for A1003", "there's no reason to send it", "I'd
                # rather A1007 never left the warehouse"
                rf"no longer have (?:any )?(?:use|need) for (?:it|this|that|them|the order|{ID_CHARS})",
                rf"no reason to (?:send|ship|deliver|dispatch) (?:it|this|that|them|the order|{ID_CHARS})"
                r"(?=\s*(?:$|[,.!;]|any ?more|at all|now))",
                # Round 6: "I'd appreciate it if A1003 could be cancelled" (a polite request, not
                # a condition), "we won't need it after all", "I'll pass on A1007", "no need for
                # A1003" (at the end of its clause)
                rf"(?:appreciate(?: it)?|grateful|great|nice|love it|helpful|happy) if (?:order )?(?:it|this|that"
                rf"|{ID_CHARS}) (?:could|can|would) be (?:cancell?ed|called off)",
                r"(?:won'?t|will not|wont) (?:really |actually )?need (?:it|this|that|them)"
                r"(?=\s*(?:$|[,.!;]|any ?more|after all|now))",
                rf"(?:i'?ll|i will|we'?ll|we will|i'?m going to|gonna|i'?d rather|i think i'?ll) pass on (?:order )?"
                rf"{ID_CHARS}",
                rf"no need for (?:order )?{ID_CHARS}(?=\s*(?:$|[,.!;]|any ?more|after all|now))",
                # Round 6: "I'd rather you didn't send it"
                rf"rather you (?:didn'?t|did not|wouldn'?t|would not) (?:send|ship|dispatch|deliver)"
                rf" (?:it|this|that|them|the order|{ID_CHARS})(?=\s*(?:$|[,.!;]|at all|any ?more|after all))",
                rf"rather (?:it|this|that|{ID_CHARS}) (?:never|didn'?t|did not) (?:left|leave|ship|shipped"
                r"|got sent|get sent)",
                # "A1003 should be cancelled", "A1007 needs cancelling"
                rf"{ID_CHARS} (?:should|must|needs? to|has to|have to) be cancell?ed"
                r"(?=\s*(?:$|[,.!;]|please|pls|plz|asap|now|today|immediately))",
                rf"{ID_CHARS} needs? cancell?ing(?=\s*(?:$|[,.!;]|please|pls|plz|asap|now|today))",
                r"(?:get rid of|scrap|ditch|bin|nix|axe|kill) (?:it|this one|that one)"
                r"(?=\s*(?:$|[,.!;]|please|pls|plz))",
                rf"{ID_CHARS} (?:is )?not (?:needed|necessary)(?!\s+(?:to|for)\b)",
                r"(?:please|pls|plz) stop (?:it|this|that)(?=\s*(?:$|[,.!;]))",
                # Round 6: "… so can you stop it", "forget it, dont send it" ("undo it" may be
                # an address change undone: not here)
                rf"(?:can|could|would) (?:you|u) (?:please |pls |just )?stop (?:it|this|that|{ID_CHARS})"
                r"(?=\s*(?:$|[,.!;?]|please|pls|plz))",
                rf"(?:don'?t|do not|dont) (?:send|ship|dispatch|deliver) (?:it|this|that|them|{ID_CHARS})"
                r"(?=\s*(?:$|[,.!;]|any ?more|at all|after all))"),
        ).compile(),
        topic="cancellation",
    ),
    ActionTerms(
        Action.RETURN,
        Terms(
            zh=("退货", "退回", "寄回", "退掉", "退了退了", r"不(?:想|打算|准备)?留(?:着|了|下)(?!言)", r"(?:我要|我想|就要|我得)退(?![款钱费])",
                r"(?<=能)退(?![款钱费])",  # "还能退吗", "能退不" (round 2)
                r"(?<=可以)退(?![款钱费])",  # "可以退吗" (round 3)
                # "退 A1006", "别退 A1002" (round 2)
                rf"(?:(?<![\u4e00-\u9fff])|(?<=别)|(?<=不要)|(?<=先别))退\s*(?={ID_CHARS})",
                r"退了(?![吗么没嘛]|\s*[?？])"),
            en=(r"return(?! (?:policy|policies|window|label|rules?|process|period|shipping|fees?"
                r"|conditions))",
                r"(?:send|ship|post|mail) (?:\S+ )?back(?!\s+(?:the |my |our )?(?:[$€£¥]|\d|money|cash))"
                r"(?!\s+to (?:me|us)\b)",
                r"(?:sending|taking|take) (?:it|this|them|these) back",
                # Round 6: "I want to send the whole thing back"
                r"(?:send|ship|post|mail|sending|shipping|posting|mailing) (?:the |this |that |these |those )"
                r"(?:whole |entire )?(?:thing|lot|order|package|parcel|item|items|stuff) back"
                r"(?! to (?:me|us)\b)",
                r"(?:it'?s|it is|they'?re|they are) going back", rf"{ID_CHARS} (?:is|'s) going back(?! and forth| to (?:the )?(?:depot|warehouse|hub|sender))", "not keeping", "returning",
                # Round 5: "I'd prefer to hand A1006 back", "… so back it goes"
                rf"hand (?:it|this|them|these|{ID_CHARS}) back(?! to (?:me|us)\b)",
                r"back (?:it|they|this) goes?(?![a-z])",
                # Round 5: "I'm posting A1002 back tomorrow" (said of oneself: "is posting A1002
                # back free?" asks), "I'm sending it your way"
                r"(?:i'?m|i am|we'?re|we are|i'?ll|i will|we'?ll|we will) (?:be )?(?:sending|posting|mailing"
                rf"|shipping|send|post|mail|ship) (?:it|this|them|these|{ID_CHARS}) back",
                rf"(?:send|sending|post|posting|mail|mailing|ship|shipping) (?:it|this|them|these|{ID_CHARS})"
                r" (?:back )?your way",
                # Round 5: "it's coming back to you", "A1006 is going straight back", "can I bring
                # stuff back"
                r"(?:it'?s|it is|they'?re|they are) (?:coming|going) (?:straight |right )?back to you",
                rf"{ID_CHARS} (?:is|'s) (?:going|coming) (?:straight|right) back(?! and forth| to (?:the )?"
                r"(?:depot|warehouse|hub|sender))",
                r"bring (?:\S+ )?back(?! to (?:me|us|life)\b)(?!\s+(?:the |my |our )?(?:[$€£¥]|\d|money|cash))",
                # Round 5: "it'll have to go back", "A1006 can go back where it came from"
                rf"(?:it|this|they|these|{ID_CHARS})(?:'ll| will)? (?:has|have|needs?) to go back"
                r"(?! and forth| to (?:the )?(?:depot|warehouse|hub|sender))",
                rf"{ID_CHARS} can go back(?! and forth| to (?:the )?(?:depot|warehouse|hub|sender))",
                # Round 6: "A1002 should be returned, it's faulty", "I'd be grateful if A1002
                # could be taken back"
                rf"{ID_CHARS} (?:should|must|needs? to|has to|have to) be (?:returned|taken back|sent back)"
                r"(?=\s*(?:$|[,.!;]|please|pls|plz|asap|now|thanks|thx|ty)(?![a-z]))",
                rf"(?:appreciate(?: it)?|grateful|great|nice|love it|helpful|happy) if (?:order )?(?:it|this|that"
                rf"|{ID_CHARS}) (?:could|can|would) be (?:returned|taken back|sent back)",
                r"(?:want|need|like|get|have) (?!(?:my |the |our |your |that |this |those |all (?:of )?(?:my |the )?)?"
                r"(?:money|cash|funds?|payment)\b)(?:\S+ ){0,2}?returned",
                # Round 5: "I'd like to give it back", "take A1006 back"
                # (the customer gives it: "give it back" said to the shop asks for the money)
                rf"(?:to|i'?ll|i will|i'?m going to|gonna) give (?:it|this|them|these|{ID_CHARS}) back"
                r"(?! to (?:me|us)\b)",
                rf"take (?:{ID_CHARS}|it|this|them|these) back(?! to (?:me|us)\b)",
                # Round 8: "A1002 going back", "give back A1002", an RMA (the trade's word for
                # a return authorisation: "RMA for A1002", "start RMA A1002", "an RMA number")
                rf"{ID_CHARS} going back(?! and forth| to (?:the )?(?:depot|warehouse|hub|sender))",
                rf"give back (?:order )?{ID_CHARS}", r"rma(?: number| no| code| request)?",
                # Round 8: "any charge for sending A1002 back?" (asked by the frame before it)
                rf"(?:sending|posting|mailing|shipping) (?:{ID_CHARS}|it|this|them|these) back"
                r"(?! to (?:me|us)\b)"),
        ).compile(),
        topic="refund",
    ),
    ActionTerms(
        Action.REFUND,
        Terms(
            zh=("退款", "退钱", "退费", "退给我", "钱还给我", "还我钱", r"钱退(?:一下|回来|给我)",
                r"钱(?:给我|帮我)?退(?:一下|回来|给我|我)?",
                r"(?:全部|全额|钱)(?:我想|我要|想)?(?:要|拿)回来",
                # Round 5: "把钱给我打回来", "钱转回我卡里", "钱返给我"
                r"钱\s*(?:给我|帮我)?(?:打|转|汇|返)(?:回来|回|给我)",
                r"退(?:我|给我)?\s*\d+(?:\.\d{1,2})?\s*(?:元|块|rmb)",
                # Round 5: "退我 35 吧" (the amount with no unit, said to the bot)
                r"退(?:我|给我)\s*\d+(?:\.\d{1,2})?(?=\s*(?:吧|呗|啊|就行|就好|$))",
                # Round 4: "这 45 得还我", "那 30 块还给我" (an amount owed back)
                r"(?<![a-z0-9-])\d+(?:\.\d{1,2})?\s*(?:元|块|rmb)?\s*(?:得|要|该|请)?(?:还|退)(?:给)?我"),
            en=(r"refund(?! (?:policy|policies|rules?|process|times?|window|status))",
                # Round 5: "can I get 15 bucks back on A1006"
                r"(?:get|want|need|like|have) (?:the |my )?[$€£¥]?\d+(?:\.\d{1,2})?"
                r"(?: (?:dollars?|euros?|pounds?|bucks|usd|eur|gbp))? back(?![a-z])",
                "money back", "cash back", r"(?:want|need|like|get|have) (?:\S+ ){0,2}?refunded",
                # "I'd like the money for it back", "gimme my cash back"
                r"(?:want|like|need) (?:the |my |our )?(?:money|cash)(?: \S+){1,3}? back",
                r"money (?:returned|repaid)",
                r"(?:send|give|pay) (?:me |us )?back (?:the |my |our )?(?:[$€£¥]?\d|money|cash)",
                r"reimburs\w*",
                # from a number's first digit only (from every digit: n² steps on "1" × 4,096)
                r"(?<![0-9])\d+(?:\.\d{1,2})? refunded",
                # Round 2: "I'd like all of it back", "I want the 59.00 I paid back"
                r"(?:want|like|need) (?:all of (?:it|that)|it all|everything) back",
                r"(?:want|like|need|demand|expect) (?:the|my|those|these|that|our) [$€£¥]?\d+(?:\.\d{1,2})?"
                r"(?: \S+){0,5}? back",
                # Round 4: "gimme my $20 back", "send me the 35 back"
                r"(?:gimme|give me|send me|pay me) (?:the |my |our )?[$€£¥]?\d+(?:\.\d{1,2})?(?: \S+){0,2}? back",
                # Round 6: "that 59 should come back to me", "I'd like the 12.50 I paid
                # returned to my card" (an amount owed back in other words)
                r"(?:the|my|those|these|that|our) [$€£¥]?\d+(?:\.\d{1,2})?(?: (?:dollars?|euros?|pounds?|bucks))?"
                r" (?:should|must|needs? to|has to|have to|ought to) come back",
                # (a sum, not a count: "I want the 2 shirts returned" is a return)
                r"(?:want|like|need|demand|expect) (?:the|my|those|these|that|our) (?:[$€£¥]\d+(?:\.\d{1,2})?"
                r"|\d+\.\d{1,2}|\d+ (?:dollars?|euros?|pounds?|bucks)|\d+(?:\.\d{1,2})? (?:i|we) (?:paid|spent))"
                r"(?: \S+){0,5}? (?:returned|repaid|refunded)",
                # Round 8: "credit my card for A1002", "you owe me 59 for A1002", "A1002: 59
                # back please" (a sum, then "back": not "59 back in May")
                r"credit (?:it |that |the money |\S+ )?(?:back )?(?:to )?(?:my|our|the) (?:card|account|paypal"
                r"|bank(?: account)?)",
                r"(?:you|u|you guys|y'?all) owe (?:me|us)(?= [$€£¥]?\d)",
                r"(?<![0-9.,])[$€£¥]?\d{1,7}(?:\.\d{1,2})?(?: (?:dollars?|euros?|pounds?|bucks|usd|eur|gbp))?"
                r" back(?=\s*(?:$|[,.!;]|please|pls|plz|thanks|asap))",
                # Round 8g: money asked back in a return's or a transfer's words: "return my
                # money for A1002", "send the 59 back", "send me the money for A1002", "wire
                # back the money", "i need my funds back", "give me back what I paid"
                r"return (?:me )?(?:my|the|our|all (?:of )?(?:my|the)) (?:money|payment|funds?|cash)",
                r"(?:send|give|transfer|wire|pay|put) (?:me |us )?(?:back )?(?:the|my|our|that)"
                r" (?:money|payment|funds?|cash|[$€£¥]?\d+(?:\.\d{1,2})?)(?: \S+){0,4}? back",
                r"(?:send|transfer|wire|pay) (?:me|us) (?:the|my|our) (?:money|funds?|cash)",
                r"(?:wire|transfer|send|pay) back (?:the|my|our) (?:money|payment|funds?|cash)",
                r"(?:need|want|like) (?:my|the|our) (?:funds?|payment) back",
                r"pay (?:me|us) back", r"give (?:me|us) back what (?:i|we) paid"),
        ).compile(),
        topic="refund",
    ),
)

# Recognition (issue 21 round 3) plans an action only on a word that names it: one its
# examples share with the action's policy topic ("cancel", "取消", "退货"), or one of these
# words that say the same thing.
ACTION_NAMING_WORDS: Mapping[str, tuple[str, ...]] = {
    "cancel_order": ("kill", "scrap", "ditch", "bin", "stop", "terminate", "abort", "call off"),
    "request_return": ("send back",),
    "request_refund": ("reimburse", "money back"),
}

# A cancel said only as "not wanted" ("不想要了", "I don't want it anymore"): beside a return
# or refund of the same order it is the reason for that, not a second request.
NOT_WANTED = lazyre.compile(
    r"^(?:不(?:太|怎么)?想要了|不要了|不买了|(?:don'?t|do not) (?:want|need)|no longer (?:want|need))"
)

# Words just before an action that negate it ("don't cancel", "不要取消"). They count when
# they end at most a few words (en) or characters (zh) before the verb, in the same clause.
NEGATORS_EN = lazyre.compile(
    r"(?<![a-z])(?:don'?t|dont|do not|does not|doesn't|not|never|never mind|no need to|"
    r"without|stop|"
    # Round 6: "forget the return for A1002, where is A1005" (a wrong action before)
    r"forget(?: about)?|skip)(?![a-z])"
)
NEGATORS_ZH = lazyre.compile(r"不要|别|先别|不用|没说要|先不|不需要|无需|不必|没有要|不是要|不想|甭|未|懒得")
NEGATION_WORDS_EN = 3  # words allowed between the negator and the verb ("do not want to cancel")
NEGATION_CHARS_ZH = 3  # characters allowed between them ("不用给我退款")
# A longer gap still negates when it is only these ("不要现在给我取消"): when, for whom,
# please. Anything else in it ("不是要退货而是取消", "别担心帮我取消") keeps the verb asked for.
NEGATION_FILLERS_ZH = lazyre.compile(
    r"(?:现在|马上|立刻|立即|急着|先|再|就|都|给我|帮我|替我|为我|请|您|你|给|把|将|对|这个|这单|订单"
    rf"|{ID_CHARS}|\s)+"
)

# Before a verb, these make it a question about the policy, not a request ("can I return").
QUESTION_EN = lazyre.compile(
    r"(?<![a-z])(?:can|could|may|might) i|how (?:do|can|would|should|could|does) (?:i|we|one|you)"
    r"|how to|is it possible|am i able|(?:can|could) (?:it|this|they|these|that) (?:still )?be"
    r"|(?:is|would|will) it (?:still |even |at all )?(?:be )?possible(?! for (?:you|u) to)|what (?:would|will|does|did)"
    r" it cost|how much (?:would|will|does|is)"
    r"|is there|are there|what if|how long|how much|do you|when (?:will|do|can) i(?![a-z])"
    r"|what(?:'s| is| are) (?:your|the)|what (?:does|would|will|do)(?![a-z])"
    r"|(?:^|\W)(?:is|are) (?:\S+ )?(?:eligible|entitled)"  # "is A1006 eligible for a refund?"
    # Round 3: "is it too late to cancel A1003?", "tell me if I can still cancel"
    r"|(?:is it|am i|are we|is this) (?:too late|still (?:ok|okay|fine|possible|time)) to"
    r"|(?:if|whether) (?:i|we) (?:can|could|may|might|should)(?![a-z])"
)
# In a Chinese clause, any of these makes it a question ("A1002 能退货吗", "退货流程").
QUESTION_ZH = lazyre.compile(
    # "能帮我取消吗" asks the bot to do it (as "can you cancel it"), not whether one may.
    r"(?:能|可以|可不可以|能不能|能否|是否)(?!帮我|给我|替我|帮忙)[^，,。.;；!?！？]{0,8}(?:吗|么|嘛|\?|？)"
    r"|能不能(?!帮我|给我|替我|帮忙)|可不可以(?!帮我|给我|替我|帮忙)"
    r"|怎么|怎样|如何|流程|多久|规则|条件|政策|规定|手续|免费|收费|费用|多少钱|运费|邮费"
    r"|什么时候到账|几天到账|哪天到账"
    r"|(?:能|可以)[^，,。.;；!?！？]{1,6}不(?:能|行)?\s*$"  # "地址现在还能改不" (round 3)
    r"|(收|要|扣|送|寄|发|是|有|付|用)不\1"  # A-not-A: "取消订单收不收钱", "是不是到了"  # "A1002 的退款什么时候到账": when, not a request
)

# "where exactly", carrier events, scans: parcel-level detail (`track_parcel`).
TRACK = Terms(
    zh=("物流轨迹", "轨迹", "详细物流", "物流详情", "物流记录", "详细的物流", "具体到哪", "具体在哪",
        "哪个城市", "派送记录", "配送记录", "哪家快递", "扫描", "快递详细", "详细信息",
        "快递单号", "运单号", "物流单号", "每一站", "怎么显示", "追踪记录", "跟踪记录",
        # Round 5: "得有个单号", "单号发我" — a number to track by; not the order's own
        # number ("订单号是 A1001")
        r"(?<!订)(?<!订\s)单号(?!\s*(?:是|为|:|：)?\s*[\ue000-\uefff])",
        # Round 3: which carrier, which depot
        "哪个快递", "什么快递", "快递公司", "物流公司", "中转", "网点", "分拣", "转运中心",
        "哪个站", "哪一站", "追踪", "跟踪", "哪家物流", "什么物流", "哪个物流", "运单编号",
        "快递编号", "派件员", "快递员是谁",
        # Round 5: "快递员电话多少" — who carries it, to reach them
        r"(?:快递员|快递小哥|派送员|配送员|送货员)(?:的)?(?:电话|手机|联系方式)",
        r"(?:快递小哥|派送员|配送员|送货员)(?:是谁|是哪位)",
        # "走的啥物流啊" asks which; "走的什么破快递这么慢" complains (a status read)
        r"(?:走的)?(?:啥|什么|哪家|哪个)(?:物流|快递)(?=[啊呀呢吗嘛?？]*\s*$)", r"物流[^，,。.;；!?！？]{0,4}详细",
        "顺丰", "中通", "圆通", "韵达", "申通", "京东物流", "邮政"),
    en=("where exactly", "exactly where", "carrier", "carriers", "courier", "scan", "scans",
        "scanned", "tracking history", "tracking events", "tracking details", "which city",
        "what city", "full tracking", "detailed tracking", "tracking scan", "parcel events",
        "carrier events",
        # Issue 21: "track A1001", "tracking for A1005", "the tracking number" ask for the
        # parcel's tracking, not only its status.
        "track", "tracking", "tracking number", "tracking no", "tracking info", "tracking deets",
        "delivery events", "which town", "what town", "physically", "every stop",
        # Round 6: "the full trail of A1001 from the warehouse"
        r"(?:full|whole|complete|entire) trail",
        # Round 3: who carries it and where it was seen last
        "delivery company", "shipping company", "courier company", "logistics company",
        "waybill", "consignment number", "tracking code", "tracking id", "tracking link",
        "which hub", "what hub", "which depot", "sorting centre", "sorting center",
        "last seen", "handed over to", "trace", "tracing", r"who(?:'s| is) delivering",
        # Round 8: "who's actually carrying A1005?", "follow the van on a map"
        r"who(?:'s| is)(?: actually| really)? (?:carrying|bringing|handling|transporting)",
        r"on (?:a|the) map",
        "checkpoint", "checkpoints",
        # Round 5: "follow A1005's journey", "the route A1001 has taken", "every place it has
        # been", "last location", "trk no"
        "journey", r"(?:the|its|which) route", "every place", r"everywhere (?:it|they)(?:'s| has| have)",
        "last location", "last known location", "current location", "trk", "trk no",
        # Round 5: "has A1001 reached the local depot", "which van is A1005 on"
        "which van", "what van", "which truck", "what truck",
        "depot", "distribution centre", "distribution center", "sorting facility",
        # carriers by name: "is A1001 with DHL?", "A1005 走的顺丰吗" ask which courier
        "dhl", "ups", "fedex", "usps", "royal mail", "dpd", "hermes", "evri", "gls", "ems"),
).compile()

# The tracking only cited, not asked for ("the tracking page for A1002 says delivered",
# "stuck for days according to the courier"): blanked before TRACK looks.
TRACK_CITED = lazyre.compile(
    r"according to (?:the )?(?:courier|carrier|tracking)\w*"
    r"|(?:the )?tracking (?:page|app|site|website|info|information) (?:for \S+ )?"
    r"(?:says|said|shows|showed|states)"
    # "the courier told me to cancel A1003", "I'm still talking to the courier": the courier
    # is who speaks, not what is asked for.
    # Round 5: "tracking hasn't moved since", "tracking still shows nothing": a complaint
    r"|tracking (?:still )?(?:hasn'?t|hasnt|has not|isn'?t|isnt|is not|didn'?t|doesn'?t|won'?t)"
    r" (?:moved|updated|changed|worked|working|shown|showing|show)"
    r"|tracking (?:still )?(?:says|shows|showed|said)"
    r"|(?:the |your |a |my )?(?:courier|carrier|driver)(?: \w+){0,3} (?:told|tells|said|says|asked"
    r"|wants|suggested|recommended|reckons|thinks)(?![a-z])"
    r"|(?:talking|spoke|speaking|talked|chatting|dealing) (?:to|with) (?:the |a |my )?(?:courier"
    r"|carrier|driver)"
)

# Orders the customer says to leave alone ("keep A1001", "A1005 不用动").
KEEP = Terms(
    zh=("保留", "不用动", "别动", r"(?<!一直)(?<!还是)(?<!怎么)(?<!都)不动", "先留着",
        r"(?<!不想)留着(?!\s*(?:也|都)?(?:没|没啥|没什么)用)", "不用管", "没问题"),
    en=("keep", "leave", "is fine", "is ok", "is okay", "stays", "can stay", "stay as",
        "as it is", "no change", "don't touch", "is good",
        # Round 4: "the return is for A1006. A1002 was perfect"
        "was perfect", "is perfect", "is all good", "was all good",
        # Round 6: "cancel the order I placed by accident, A1003 is the good one"
        "is the good one", "is the right one", "is the correct one", "is the one i want",
        "is the one i need", "the keeper"),
).compile()

# "one of them", "A or B", "取消一个": the customer has not chosen an order yet.
CHOOSE = Terms(
    zh=("一个", "其中", "哪个", "或者", "之一", "随便", "一单", "便宜的那", "贵的那"),
    en=("or", "whichever", "one of", "either", "any of",
        # Round 3: "cancel the cheaper one", "the second one: A1003, A1007", "just one"
        r"the (?:cheaper|cheapest|more expensive|pricier|bigger|biggest|smaller|smallest|older"
        r"|oldest|newer|newest|first|second|third|last|earlier|later|latest)"
        r" one", "just one", "only one", r"(?:cancel|scrap|ditch|bin|drop|return|refund) one",
        # Round 4: "the cheaper of A1003 and A1007"
        r"the (?:cheaper|cheapest|more expensive|older|newer|bigger|smaller|first|second|last"
        r"|earlier|later) of"),
).compile()

# A request for a person, in any wording.
HANDOFF = Terms(
    zh=("转人工", "人工客服", r"人工(?!智能)", "真人", "找个客服", "找客服", "客服跟我说", "接人工",
        "找个人", "真正的客服", "客服人员", "经理", "主管", "叫个人来", "找你们领导",
        # Round 3: "请让客服给我回个电话", "联系售后人员", "来个活人"
        r"(?:给我|跟我|和我)回(?:个)?电话", "售后人员", "活人", r"找[^，,。.;；!?！？]{0,4}工作人员",
        r"找(?:你们|一下)?(?:的)?(?:老板|负责人|领导)",
        # Round 5: "有没有客服小姐姐在", "有客服在吗", "客服妹子呢"
        r"客服(?:小姐姐|小哥哥|妹子|美女|帅哥|mm)", r"有(?:没有)?(?:客服|真人)在",
        # "让个人来回我", "叫你们领导出来"
        r"(?:让|叫|派|换)(?:个|一个)(?:人|真人|客服)(?:来|过来|跟我|和我|回)",
        r"(?:叫|让|请)你们(?:的)?(?:领导|负责人|老板|主管|经理)",
        # "我要跟人说话不要机器人", "听不懂人话，换人"
        r"(?:跟|和)(?:个)?(?:真)?人(?:说话|聊|沟通|对话)", r"不(?:要|想跟|想和)机器人",
        r"换(?:个)?(?:真)?人(?:来|吧|啊)?(?=\s*$|[，,。!！?？])",
        r"(?:叫|让|找|派)(?:个|一个)(?:懂行|懂的|管事|负责|能做主|说了算)的(?:人)?"),
    en=("real person", "real human", "a human", "human please", "human agent", "live agent",
        "live person", "live chat", "agent please", r"(?:speak|talk|chat) (?:to|with) (?:a |an |"
        r"your |some )?(?:person|human|agent|someone|somebody|representative|operator|staff"
        r"|customer service|support)",
        "a person", "human being", "representative", "operator", "connect me to",
        "transfer me", "humans", "human",
        # Issue 21: "customer service" alone is often a complaint about it ("your customer
        # service is the worst"); asking to reach it, a manager or a colleague is a handoff.
        r"(?:to|with|reach|contact|call|get) (?:your |the )?customer service",
        "customer service please", "manager", "supervisor", "escalate", "escalation",
        # Round 5: "I'd like a callback", "I want this escalated", "someone on the phone"
        "callback", "call me back", "escalated",
        # Round 8m: "hand me over to one of your people"
        r"hand me (?:over )?to", r"(?:to|with) (?:one of )?your (?:people|humans|staff|team members)",
        # Round 8: a number to call is a way to reach a person ("is there a phone number I can
        # call", "what number can I call"; not "my phone number has changed")
        r"(?:phone )?number (?:i|we) can (?:call|ring|phone)", r"(?:a |your |the )?(?:phone )?number to (?:call|ring)",
        r"what number (?:can|do|should) (?:i|we) (?:call|ring|phone)",
        r"(?:someone|somebody|a person|a human|an agent) on the (?:phone|line)",
        r"member of (?:your |the )?(?:staff|team)", r"connect me (?:with|to)",
        # "a colleague of mine wants to cancel A1003" is the customer's colleague (reported)
        r"(?:a |your )colleague(?! of (?:mine|ours))", "somebody from your team", "someone from your team",
        # Round 6: "put me through to someone from support", "one of your colleagues rather
        # than a bot"
        r"put me (?:through|over) to", r"(?:someone|somebody|anyone|anybody) from (?:your |the )?"
        r"(?:support|staff|team|customer service|service desk|help ?desk)",
        r"(?:a |your |one of your )colleagues", r"rather than (?:a |the |this )?(?:bot|robot|machine)"),
).compile()

# Text that addresses the assistant as its operator: instructions, fake system messages.
INJECTION = lazyre.compile(
    r"ignore (?:all |any )?(?:the |my |your )?(?:previous|prior|above|earlier|former|all)"
    r"(?: \w+)? (?:instructions?|rules|prompts?|messages?|directions)"
    r"|(?<![a-z])system ?:|系统\s*[:：]|\[(?:developer|dev|root|operator)\]|override (?:the )?safety"
    r"|without (?:any )?checks|authori[sz]ed admin|admin request|\"tool\"\s*:|\"order_id\"\s*:"
    r"|#+\s*new instructions|new instructions\s*:|授权你|跳过确认|我是(?:店长|管理员|老板)"
    r"|<\s*/?\s*(?:system|user|assistant|admin)\s*>|\[(?:system|admin)\]"
    r"|admin mode|developer mode|dev mode|god mode|you are now|(?:assistant|ai|bot) note"
    r"|note (?:to|for) (?:the )?(?:ai|assistant|bot)|skip (?:the )?confirmation"
    r"|don'?t ask the (?:user|customer)|without asking(?! me\b)|jailbreak"
    r"|忽略(?:之前|以上|前面|上面|先前|此前)的?(?:所有|全部)?(?:指令|指示|规则|提示|设定|要求)"
    r"|系统(?:消息|提示|指令|通知)|管理员(?:指令|已批准|模式|命令)|开发者模式|备注给\s*(?:ai|机器人|助手)"
    r"|不(?:需要|用)(?:确认|问用户|问顾客)|自动批准|以下是管理员"
    # Issue 21 round 2: bracketed labels, developer notes and "the user agreed" framing, in
    # both languages ("【系统】", "开发者指令：", "助手请注意：", "developer note:").
    r"|[【\[]\s*(?:系统|管理员|开发者|后台|平台)[^】\]]{0,6}[】\]]"
    r"|开发者?(?:指令|消息|命令|备注|通知)|开发人员(?:指令|消息)|后台指令|内部指令|平台指令"
    r"|(?:助手|机器人|客服机器人|ai|智能客服)\s*(?:请注意|注意|须知|你好)\s*[:：]"
    r"|(?:用户|顾客|客户)(?:已经?|已)(?:同意|授权|确认)|不要(?:询问|问|确认)(?:用户|顾客|客户)"
    r"|developer (?:note|instructions?|message|override)|(?:attention|note),? (?:assistant|ai|bot)"
    r"|(?:assistant|ai|bot),? (?:please )?(?:note|take note)\s*:"
    r"|the (?:user|customer) (?:has )?(?:already )?(?:agreed|consented|authori[sz]ed|approved)"
)
# Words in injected text that demand an action or an override.
INJECTION_DEMANDS = Terms(
    zh=("批准", "确认", "执行", "不用问", "不需要", "所有订单", "退款", "取消", "退货", "改"),
    en=("approve", "approved", "confirm", "confirmed", "execute", "call", "skip", "override",
        "refund", "cancel", "cancelling", "return", "change", "grant", "admin"),
).compile()

# A fake transcript line ("Assistant: I have cancelled A1005"): ignored entirely. A line
# labelled as the customer's keeps its text without the label.
# Round 7 (fuzzer): the label may be bracketed ("[agent]: I will cancel A1003").
TRANSCRIPT_OTHER = lazyre.compile(
    r"^\s*[\[(<【]?\s*(?:assistant|bot|ai|agent|客服|机器人|助手)\s*[\])>】]?\s*[:：]",
    re.M | re.IGNORECASE,
)
TRANSCRIPT_SELF = lazyre.compile(
    r"^\s*[\[(<【]?\s*(?:user|customer|me|用户|顾客)\s*[\])>】]?\s*[:：]", re.M | re.IGNORECASE
)


@dataclass(frozen=True)
class Unsupported:
    """Something customers ask that no tool serves, and how the answer names it."""

    key: str
    terms: lazyre.LazyPattern
    zh: str
    en: str


UNSUPPORTED: tuple[Unsupported, ...] = (
    Unsupported(
        "payment",
        Terms(zh=("付款方式", "支付方式", r"用[^，,。.;；!?！？]{0,6}(?:付款|支付|付钱)", "比特币",
                  "支付宝", "微信支付", "信用卡",
                  # Round 5: switching an order to cash on delivery ("帮我改成货到付款")
                  r"(?:改成|换成|改为|换为|改用)货到付款"),
              en=(r"pay (?:\S+ ){0,5}?with", "payment method", "payment methods", "payment option",
                  "pay by", "bitcoin", "crypto", "paypal", "credit card",
                  r"(?:change|switch|swap) (?:the |my )?card", r"split (?:\S+ ){0,2}?payment",
                  # Round 5: "pay for A1007 by bank transfer", "change payment A1003"
                  r"pay (?:for )?(?:\S+ ){0,3}?(?:by|via|using) (?:bank transfer|card|credit|debit|cash"
                  r"|cheque|check|wire|transfer|apple pay|google pay|klarna)", "bank transfer",
                  r"(?:change|switch|swap|update) (?:\S+ ){0,2}?to (?:the |my |a )?(?:new|other|different"
                  r"|another) card",
                  # Round 6: "A1003 needs to be charged to the new one"
                  r"charged to (?:my|a|the) (?:new|other|different|second) (?:one|card)(?![a-z])",
                  r"charge (?:\S+ ){0,3}?to (?:my|a|the|another|my other) (?:\S+ )?(?:card|visa|amex"
                  r"|mastercard|paypal)(?![a-z])",
                  r"(?:change|switch|update) (?:the |my )?payment(?! (?:methods?|options?) (?:do|are|can)\b)")
              ).compile(),
        zh="更改付款方式", en="changing how an order is paid"),
    Unsupported(
        "invoice",
        # "没有发票能退货吗": without one is a condition of another question (round 5)
        Terms(zh=(r"(?<!没有)(?<!没)发票", "开票", "收据"), en=("invoice", "invoices", "vat", "receipt", "fapiao")
              ).compile(),
        zh="开发票", en="invoices"),
    Unsupported(
        "discount",
        Terms(zh=("优惠码", "优惠券", "折扣码", "折扣", "优惠", "给我打折", "帮我打折", "打个折", "打点折", "礼品卡"),
              en=("discount code", "discount", "coupon", "promo code", "promo", "voucher",
                  "gift card", "gift voucher")
              ).compile(),
        zh="优惠码和折扣", en="discount codes"),
    Unsupported(
        "add_items",
        Terms(zh=("加购", "加一件", "再加", "添加商品", "加一个", "多加",
                  # Round 3: taking an item out or swapping one inside an order
                  r"(?:里的|里面的|中的)[^，,。.;；!?！？]{0,10}(?:拿掉|去掉|删掉|换成)",
                  r"(?:拿掉|去掉|删掉)(?:一个|一件|一份|一双|一条)", r"数量(?:改|换|调)", "改数量"),
              en=(rf"add (?:\S+ ){{0,5}}?to (?:my |the |this |that |order )*(?:order|{ID_CHARS})",
                  "add an item", "add items",
                  # Round 3: "take the socks out of A1003", "swap the blue mug in A1007 for
                  # the red one", "one more of the cups in A1007", "put another mug in A1007"
                  rf"(?:remove|take|drop) (?:\S+ ){{0,5}}?(?:out of|off|from) (?:my |the |this "
                  rf"|that |order )*(?:order|{ID_CHARS})",
                  rf"swap (?:\S+ ){{0,6}}?(?:in|on|from) (?:my |the |this |order )*(?:order|{ID_CHARS})",
                  rf"(?:one|two|three|\d+|another|an extra) more (?:\S+ ){{0,4}}?(?:in|to|into|on)"
                  rf" (?:my |the |this |order )*(?:order|{ID_CHARS})",
                  rf"(?:put|throw|add) (?:another|an extra|a second) (?:\S+ ){{0,3}}?(?:in|into|to|on)"
                  rf" (?:my |the |this |order )*(?:order|{ID_CHARS})",
                  rf"(?:put|add|include) (?:\S+ ){{0,4}}?(?:in|into|to) (?:my |the |this |order )*"
                  rf"(?:order|{ID_CHARS}) instead of",
                  # "change the quantity on A1003 to 3", "the large size instead of medium"
                  rf"(?:quantity|qty|number of items)(?: \S+){{0,3}}? (?:on|in|of|for) (?:my |the "
                  rf"|order )*(?:order|{ID_CHARS})",
                  r"(?:size|colou?r) instead of (?:the )?\S+",
                  r"(?:large|small|medium|bigger|smaller) (?:size |one )?instead of",
                  # Round 5: "change the size of the shirt in A1003 to L", "can you change the
                  # colour before it ships" (asked of the bot, not "can I …": the exchange FAQ)
                  rf"change (?:the )?(?:size|colou?r|quantity) (?:of )?(?:\S+ ){{0,4}}?(?:in|on|of) (?:my "
                  rf"|the |this |order )*(?:order|{ID_CHARS})",
                  r"(?:can|could|would) you (?:please |pls )?(?:change|switch|swap) (?:the )?(?:colou?r|size)"
                  r"(?![a-z])",
                  # "bung another mug in A1007", "chuck a charger in with A1003"
                  r"(?:bung|chuck|stick|pop|throw|put) (?:a |an |another |one more |an extra )(?:\S+ ){0,2}?"
                  rf"in(?:to| with)? (?:my |the |this |order )*(?:order|{ID_CHARS})",
                  # keywords: "remove item A1007", "change size A1003"
                  r"(?:remove|add|change|swap) (?:an? |the )?(?:item|items|size|colou?r|quantity|qty)"
                  rf"(?: (?:on|in|from|of|for|to))? (?:order )?{ID_CHARS}",
                  # "switch the mug in A1007 to the blue one" (an item inside the order)
                  r"(?:switch|change) (?!(?:the |my |a )?(?:delivery |shipping |billing )?(?:address|payment"
                  rf"|card))(?:the |my |a )?(?:\S+ ){{1,3}}?(?:in|from) (?:my |the |this |order )*(?:order|{ID_CHARS}) (?:to|for)"
                  r"(?![a-z])",
                  # Round 5: "I picked medium in A1003 but I really need the large"
                  r"(?:picked|ordered|chose|selected|bought|got) (?:the |a )?(?:size )?(?:small|medium"
                  r"|large|xs|xl|xxl)(?: \S+){0,4}? but (?:i )?(?:really |actually )?(?:need|want|wanted"
                  r"|meant) (?:the |a )?(?:size )?(?:small|medium|large|xs|xl|xxl|bigger|smaller)",
                  # … and its second half on its own ("but" ends a clause)
                  # Round 6: "please switch A1003 to the large size"
                  rf"(?:switch|change|swap) (?:order )?{ID_CHARS} to (?:the |a |an )?(?:size )?(?:small"
                  r"|medium|large|xs|xl|xxl|bigger|smaller|larger)(?: size| one)?(?![a-z])",
                  r"(?:really|actually) (?:need|want|wanted|meant) (?:the |a )(?:size )?(?:small|medium"
                  r"|large|xs|xl|xxl|bigger|smaller)(?: one| size)?(?![a-z])")).compile(),
        zh="往订单里加商品", en="adding items to an order"),
    Unsupported(
        "phone",
        Terms(zh=(r"(?<!快递员)(?<!快递员的)(?<!小哥)(?<!小哥的)(?<!派送员)(?<!配送员)(?<!送货员)电话(?!多少)",
                  "手机号",
                  # Round 5: "帮我把账号的 email 改一下", "邮箱换一下"
                  r"(?:邮箱|e-?mail)(?:地址)?[^，,。.;；!?！？]{0,3}(?:改|换|更新)"), en=("phone number",
                                        # Round 6: "the lady on the phone said …" is how they
                                        # spoke, not a phone number to change
                                        r"(?<!on\x20the\x20)(?<!over\x20the\x20)(?<!by\x20)(?<!on\x20)phone", "mobile number",
                                        # Round 4: "change my email to sam@…"
                                        r"(?:change|update|switch) (?:\S+ ){0,2}?e-?mail(?: address)?"
                                        r" to [a-z0-9._+-]+(?=@)",
                                        # Round 5: "kill my account" (a question about deleting
                                        # it is the account FAQ's, by recognition)
                                        r"(?:kill|wipe|erase) (?:my |the )?(?:account|profile)(?![a-z])",
                                        # Round 6: "please cancel my account"
                                        r"(?:cancel|terminate) (?:my |the |this )?(?:whole |entire )?"
                                        r"(?:account|profile|membership)(?![a-z])",
                                        # Round 5: "change my name on the account"
                                        r"(?:change|update|correct|edit) (?:my |the )?(?:user ?name"
                                        r"|account name|name) (?:on|in|of|for) (?:my |the )?account",
                                        r"(?:change|update|correct|edit) my (?:user ?name|account name)"
                                        r"(?![a-z])")).compile(),
        zh="修改电话号码", en="changing a phone number"),
    Unsupported(
        "weather", Terms(zh=("天气",), en=("weather",)).compile(), zh="天气", en="the weather"),
    # Round 2: "… and leave a bad review", "我还要写差评"
    Unsupported(
        "review",
        Terms(zh=("差评", "好评", "写评价", "写评论", "删评价", "改评价"),
              en=(r"(?:leave|write|post|give|edit|delete|remove) (?:\S+ ){0,2}?(?:review|rating)",
                  # Round 5: "where can I rate the stuff I bought?", "review my purchase"
                  r"(?:rate|review) (?:the |my |what i |your )?(?:stuff|items?|products?|purchases?"
                  r"|things?|orders?|goods)(?![a-z])")
              ).compile(),
        zh="评价", en="reviews"),
    Unsupported(
        "recommend", Terms(zh=("推荐",), en=(r"recommend\w*",)).compile(),
        zh="商品推荐", en="product recommendations"),
    # Round 3: a complaint is answered with the offer of a person, not with a policy its
    # words happen to name ("complain about the delivery guy" is not the shipping policy).
    Unsupported(
        "complaint",
        Terms(zh=("投诉",), en=("complain", "complaint", "complaints", "complaining",
                               # Round 4: "the guy who delivered was really rude to me"
                               r"(?:was|were|is|are|got) (?:\S+ ){0,2}?rude (?:to|with) (?:me|us|my)",
                               # Round 5: "worst customer service I've ever had", "terrible
                               # service", "shocking experience": a verdict, not a request
                               r"(?:worst|terrible|awful|horrible|appalling|shocking|pathetic"
                               r"|disgraceful|dreadful|lousy|abysmal) (?:\S+ ){0,2}?(?:service|experience"
                               r"|shop|store|company)",
                               # Round 6: "your service is a joke", "this shop is a total scam"
                               r"(?:your|this|the) (?:customer )?(?:service|shop|store|company|website"
                               r"|site|support) (?:is|was|has been) (?:\S+ ){0,3}?(?:joke|disgrace|scam"
                               r"|shambles|nightmare|rubbish|garbage|useless|hopeless|disgraceful|rip-?off)(?![a-z])")
              ).compile(),
        zh="投诉", en="complaints"),
)

# An amount of money in a refund request ("退款 59 元", "refund 59.00", "$59").
# Only an amount written plainly counts: "1e9", "1,000", "59,00" or "5 9" is asked about
# (a refund of 1.00 read from "1,000" would be a wrong action), never read in part.
_AMOUNT_START = r"(?<![\w.,\-−])(?<!\d\s)(?<!or )(?<!或)(?<!或 )(?<!或者)(?<!或者 )(?<!到)(?<!~)"
_AMOUNT_END = (
    r"(?![\d.]|[,，_]\d|[xX][0-9a-fA-F]|[eE][+-]?\d|\s+\d"
    r"|\s*(?:or|或者?|到|至|~|-|/)\s*[$€£¥￥]?\d)"
)
AMOUNT = lazyre.compile(
    rf"{_AMOUNT_START}(?P<a>\d{{1,7}}(?:\.\d{{1,2}})?){_AMOUNT_END}\s*(?:元|块|rmb|cny|usd|eur|gbp"
    r"|dollars?|euros?|pounds?|bucks)(?![a-z])"
    rf"|[$€£¥￥]\s*(?P<b>\d{{1,7}}(?:\.\d{{1,2}})?){_AMOUNT_END}"
    rf"|(?:refund|reimburs\w*|退款|退给我|退我|退|(?<![a-z])amount:?)\s*(?:of\s*|the\s*|{ID_CHARS}\s*"
    # Round 5: "refund me 20 for A1002" (an amount right before "for", "on", "back" or the
    # end; "refund me 2 of the cups" is a count)
    r"|(?:me|us)\s+(?=\d+(?:\.\d{1,2})?\s*(?:$|[,.!;]|(?:for|on|back)(?![a-z]))))?"
    rf"(?P<c>\d{{1,7}}(?:\.\d{{1,2}})?){_AMOUNT_END}"
    rf"|{_AMOUNT_START}(?P<d>\d{{1,7}}(?:\.\d{{1,2}})?){_AMOUNT_END}\s*(?:refunded|back)(?![a-z])"
    # "I paid 59 for A1002", "the 59.00 I paid", "付了 59": what was paid, written plainly
    rf"|(?:paid|付了|花了)\s*(?P<e>\d{{1,7}}(?:\.\d{{1,2}})?){_AMOUNT_END}"
    rf"|(?<![a-z])the (?P<f>\d{{1,7}}(?:\.\d{{1,2}})?){_AMOUNT_END} (?:i|we) paid(?![a-z])"
    # Round 8: "59 refund A1002", "you owe me 59 for A1002"
    rf"|{_AMOUNT_START}(?P<g>\d{{1,7}}(?:\.\d{{1,2}})?){_AMOUNT_END}\s*(?:refund|reimbursement)(?![a-z])"
    rf"|(?<![a-z])owe[sd]? (?:me|us) (?P<h>\d{{1,7}}(?:\.\d{{1,2}})?){_AMOUNT_END}"
)

# Round 8g: what is returned is money ("return my money", "return the payment for A1002"):
# a refund asked for, never the parcel's return.
MONEY_OBJECT = lazyre.compile(
    r"\s*(?:me |us )?(?:back )?(?:my |the |our |your |that |this |all (?:of )?(?:my |the )?)?(?:money|payment"
    r"|funds?|cash)(?![a-z])"
)

# Greetings and thanks are not unsupported requests.
SMALL_TALK = lazyre.compile(
    r"^\W*(?:hi|hello|hey|thanks|thank you|thx|ok|okay|你好|您好|谢谢|好的|嗨|哈喽)\W*$"
)

# "It", "this order", "这单": a reference to an order the chat already talked about. Not
# "my order" or "my package", which may be any of the customer's orders.
POINTER = Terms(
    zh=("它", "这个", "那个", "这单", "那单", "该订单", "此订单", "这一单", "刚才的订单", "上个订单"),
    en=("it", "its", "it's", "this one", "that one", "this order", "that order", "the order",
        "the parcel", "the package", "this package", "the shipment", "them", "they"),
).compile()

# Chinese input-method slips, each the same length as its repair (positions stay aligned).
ZH_TYPOS: Mapping[str, str] = {
    "定单": "订单", "到那了": "到哪了", "推款": "退款", "物留": "物流", "该成": "改成",
    "在那里": "在哪里", "到那里": "到哪里", "退欵": "退款", "鬼迹": "轨迹", "退活": "退货", "腿货": "退货", "退宽": "退款",
    "地止": "地址",
    # Round 3: more input-method slips (same length as the repair)
    "取笑订单": "取消订单", "取晓": "取消", "去消": "取消", "推货": "退货", "包油": "包邮", "快递单好": "快递单号",
    "发获": "发货", "订但": "订单", "地扯": "地址", "地址该": "地址改", "该地址": "改地址",
    # Round 5: homophone slips of 快递 (kuaidi) and 发票 (fapiao)
    "快第": "快递", "快滴": "快递", "发漂": "发票", "发飘": "发票",
    "轨记": "轨迹", "单浩": "单号", "运废": "运费", "申情": "申请", "保休": "保修", "详请": "详情",
    # Northern dialect: 俺 is 我 ("俺要退", "俺不要了")
    "俺": "我",
}

# Fallback step goals for tools the catalog does not describe (a catalog goal wins).
GOALS: Mapping[str, Mapping[Language, str]] = {
    "track_parcel": {Language.ZH: "查询订单 {order_id} 的包裹轨迹",
                     Language.EN: "Track the parcel of order {order_id}"},
    "request_return": {Language.ZH: "为订单 {order_id} 申请退货",
                       Language.EN: "Request a return for order {order_id}"},
    "request_refund": {Language.ZH: "为订单 {order_id} 申请退款",
                       Language.EN: "Request a refund for order {order_id}"},
    "change_address": {Language.ZH: "修改订单 {order_id} 的收货地址",
                       Language.EN: "Change the delivery address of order {order_id}"},
}

# What a clarifying option asks for, as if the customer had written it.
OPTION_TEXTS: Mapping[str, Mapping[Language, str]] = {
    "get_order_status": {Language.ZH: "订单 {order_id} 到哪了", Language.EN: "where is order {order_id}"},
    "track_parcel": {Language.ZH: "订单 {order_id} 的物流轨迹",
                     Language.EN: "where exactly is order {order_id}"},
    "cancel_order": {Language.ZH: "取消订单 {order_id}", Language.EN: "cancel order {order_id}"},
    "request_return": {Language.ZH: "订单 {order_id} 申请退货", Language.EN: "return order {order_id}"},
    "request_refund": {Language.ZH: "订单 {order_id} 退款 {amount} 元",
                       Language.EN: "refund {amount} for order {order_id}"},
    "request_refund_any": {Language.ZH: "订单 {order_id} 申请退款",
                           Language.EN: "refund order {order_id}"},
    "change_address": {Language.ZH: "把订单 {order_id} 的地址改成 {address}",
                       Language.EN: "change the address of order {order_id} to {address}"},
}
# fmt: on
