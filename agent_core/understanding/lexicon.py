"""The rule planner's vocabulary: policy topics and the keyword tables it matches.

Data only, kept apart from the matcher (`planner`) so a reviewer reads the words the bot
understands in one place, and so the declared tool catalog (issue 12) can add phrasings for
new tools without touching the matching code. Chinese fragments match anywhere; English
ones match whole words (see `Terms`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from agent_core import lazyre
from agent_core.models import Language


class PolicyTopic(StrEnum):
    """A policy the customer can ask about; each maps to one canonical `search_policy` query."""

    REFUND = "refund"
    SHIPPING = "shipping"
    DELAY_COMPENSATION = "delay_compensation"
    CANCELLATION = "cancellation"
    WARRANTY = "warranty"
    EXCHANGE = "exchange"
    AFTER_SALES = "after_sales"


# The `query` sent to search_policy: one short keyword per topic, in the run's language.
# Step goals are built from the same words ("查询退货政策", "Look up the refund policy").
POLICY_QUERIES: Final[Mapping[PolicyTopic, Mapping[Language, str]]] = {
    PolicyTopic.REFUND: {Language.ZH: "退货", Language.EN: "refund"},
    PolicyTopic.SHIPPING: {Language.ZH: "配送", Language.EN: "shipping"},
    PolicyTopic.DELAY_COMPENSATION: {Language.ZH: "延迟补偿", Language.EN: "delay compensation"},
    PolicyTopic.CANCELLATION: {Language.ZH: "取消", Language.EN: "cancellation"},
    PolicyTopic.WARRANTY: {Language.ZH: "保修", Language.EN: "warranty"},
    PolicyTopic.EXCHANGE: {Language.ZH: "换货", Language.EN: "exchange"},
    PolicyTopic.AFTER_SALES: {Language.ZH: "售后", Language.EN: "after-sales"},
}


_GAP = r"[\s-]+"  # what a space in an English keyword matches


@dataclass(frozen=True)
class Terms:
    """Keywords for one signal, as regex fragments over the canonical (case-folded) text.

    Chinese fragments match anywhere (Chinese has no word boundaries). English fragments
    match whole words only, and a space in them stands for any run of spaces or hyphens,
    so "after sales" also matches "after-sales".
    """

    zh: tuple[str, ...] = ()
    en: tuple[str, ...] = ()

    def compile(self) -> lazyre.LazyPattern:
        en = [rf"(?<![a-z]){e.replace(' ', _GAP)}(?![a-z])" for e in self.en]
        # Longer fragments first, so a match covers the whole phrase ("延迟补偿", not "延迟").
        parts = sorted([*self.zh, *en], key=len, reverse=True)
        return lazyre.compile("|".join(f"(?:{p})" for p in parts) if parts else r"(?!)")


@dataclass(frozen=True)
class TopicTerms:
    """How a policy topic is mentioned.

    `strong` words always mean the customer asks about that policy ("退货", "refund").
    `weak` words are ambiguous ("delivery" may be a status question, "delay" a complaint);
    they count only in a clause that asks about rules or costs, or when the message is
    not about a particular order at all.
    """

    topic: PolicyTopic
    strong: Terms
    weak: Terms = Terms()


# The keyword tables are kept compact, one signal per few lines, for review as data.
# fmt: off

# Priority order: earlier topics claim their words first.
TOPICS: tuple[TopicTerms, ...] = (
    TopicTerms(
        PolicyTopic.DELAY_COMPENSATION,
        strong=Terms(
            zh=("延迟补偿", "延误补偿", "晚到补偿", "迟到补偿", "超时补偿", "补偿", "赔偿", "赔付",
                "理赔", "赔"),
            en=("delay compensation", r"compensat\w*"),
        ),
        weak=Terms(
            zh=("延迟", "延误", "晚到", "迟到", "超时", "太慢", "耽误", "晚了"),
            en=(
                r"late (?:delivery|deliveries|arrival|shipment|shipping|package|parcel|order)",
                r"(?:arrived|arrives|arriving|arrive|came|delivered|is|was|running|being) late",
                r"(?:delivery|shipping|shipment) delays?",
                "delay", "delays", "delayed", "overdue", "too slow",
            ),
        ),
    ),
    TopicTerms(
        PolicyTopic.CANCELLATION,
        strong=Terms(
            zh=(
                r"取消[^，。？！；,.?!;\n]{0,8}?(?:政策|规定|规则|条款|手续费|费用|流程|要求)",
                r"(?:政策|规定|规则|条款)[^，。？！；,.?!;\n]{0,4}取消",
                "退订政策",
                r"取消(?:订单)?(?:是|要|需要|会)?(?:免费|收费|要钱|扣钱|扣费)",
                r"取消[^，。？！；,.?!;\n]{0,6}?(?:收不收|要不要|扣不扣)(?:钱|费)",
            ),
            en=(
                r"cancel\w* (?:\w+ ){0,2}?(?:policy|policies|rules?|terms|fees?|charges?|window)",
                r"(?:policy|policies|rules?|terms) (?:\w+ ){0,2}?cancel\w*",
                r"cancell?ations?",
                # "whether A1003 can still be cancelled" (round 3)
                r"(?:can|could|may) (?:\S+ ){0,3}?be cancell?ed",
                # Round 5: "up to when can an order still be called off?"
                r"(?:can|could|may) (?:\S+ ){0,3}?be called off",
            ),
        ),
        # "How do I cancel an order?" is a question about the rules unless an order is named.
        weak=Terms(
            zh=(r"(?:怎么|怎样|如何|咋)(?:才能)?取消", r"能(?:不能)?取消(?:吗|么)?", "可以取消"),
            en=(r"how (?:do|can|to|would|should) (?:i |we |you )?cancel\w*", "can i cancel"),
        ),
    ),
    TopicTerms(
        PolicyTopic.AFTER_SALES,
        strong=Terms(zh=("售后",), en=("after sales?", "aftersales?", "after sale service")),
    ),
    TopicTerms(
        PolicyTopic.WARRANTY,
        strong=Terms(
            zh=("保修", "质保", "保固", "三包"), en=("warranty", "warranties", "guarantee")
        ),
        weak=Terms(
            zh=("维修", "修理", "坏了", "故障", "质量问题"),
            en=("repair", "repairs", "broken", "defective", "faulty"),
        ),
    ),
    TopicTerms(
        PolicyTopic.REFUND,
        strong=Terms(
            zh=("退换货", "退换", "退货", "退款", "退钱", "七天无理由", "无理由退"),
            en=(r"refund\w*", "return", "returns", "returning", "returned", "money back",
                r"send (?:it |them |this )?back"),
        ),
    ),
    TopicTerms(
        PolicyTopic.EXCHANGE,
        strong=Terms(
            zh=("换货", "调换", "换尺码", "换码", "换颜色", "换个尺码",
                # Round 5: "坏了能换吗", "可以换不" — whether it can be exchanged
                r"(?:能|可以|能不能|可不可以)换(?:吗|么|嘛|不)?(?=\s*$|[，,。?？!！])"),
            en=("exchange", "exchanges", "exchanging"),
        ),
        weak=Terms(
            # Round 5: not a phone number, password, mailbox, address, payment method, card,
            # name or an English word ("把手机号换一下", "email 换一下": an account change)
            zh=tuple(
                rf"(?<![号码箱址式卡名a-z])(?<![号码箱址式卡名a-z]\s){w}(?!\s*(?:手机|电话|密码|邮箱|账号|账户|地址|银行卡|卡|付款|支付))" for w in ("换一个", "换个", "更换", "换一下")
            ),
            en=("swap", "replace", "replacement"),
        ),
    ),
    TopicTerms(
        PolicyTopic.SHIPPING,
        strong=Terms(
            zh=("运费", "邮费", "包邮", "快递费", "配送费", "配送范围", "配送政策", "配送时间",
                "发货时间", "多久发货", "几天发货", "多久能发货", "配送方式"),
            en=(
                r"(?:shipping|delivery) (?:policy|policies|costs?|fees?|rates?|times?|options"
                r"|methods|charges?|areas?|zones?)",
                "free shipping", "postage", "freight", "international shipping",
                # (not "ship A1003 to my office: 4 Bank Road", a new address: U+F8FF marks it)
                "ship internationally", "do you ship", r"ship to(?![^.?!;\n]{0,40}\uf8ff)",
                # Round 5: "do you send orders to Switzerland?"
                r"do you (?:send|deliver|post|mail) (?:\S+ ){0,2}?to",
            ),
        ),
        weak=Terms(
            zh=("配送", "送货", "发货", "运输"),
            en=("shipping", "ship", "delivery", "deliver"),
        ),
    ),
)

# Words that ask about rules or costs; they make weak topic words count in their clause.
POLICY_MARKERS = Terms(
    zh=("政策", "规定", "规则", "条款", "标准", "费用", "多少钱", "多少", "怎么算", "怎么收",
        "收费", "范围", "时效", "流程", "怎么办"),
    en=("policy", "policies", "rule", "rules", "terms", "costs?", "fees?", "charges?",
        "how much", "how long", "price", "rates?", "options", "what should i do",
        "what can i do", "is there", "do i get", "can i get"),
).compile()

# Where one question ends and the next begins ("A1001 到哪了？另外退货政策是什么"; "then"
# like "然后": "… to 5 Main St then cancel A1002" is two requests on two orders).
CLAUSE_BREAK = lazyre.compile(
    r"[，。？！；,.?!;\n]|另外|还有|顺便|然后|以及|再问一?下|还想问|(?<![a-z])(?:also|btw|by the way|plus"
    r"|additionally|then)(?![a-z])"
)

# Status words that name an order question by themselves ("track", "物流", "到哪了").
STATUS_STRONG = Terms(
    zh=("到哪", "在哪", "到了吗", "到了没", "到没到", "到了么", "物流", "进度", "发货了吗",
        "发货没", "发货了没", "发了吗", "发了没", "发出了吗", "发没发", "寄没寄", "寄出", "送达", "签收", "追踪",
        "跟踪", "运单", "什么时候到", "啥时候到", "何时到", "多久到", "多久能到", "几天到",
        "几天能到", "还没到", "没到", "没收到", "收到了吗", "到货", "状态", "派送",
        "一直不动", "没动静", "没有动静", "不更新", "没更新"),
    en=("track", "tracking", "tracked", "order status", "delivery status", "shipping status",
        "package status", "shipped", "arrive", "arrived", "arriving", "arrives", "arrival",
        "eta", "not received", "never received", "haven't received", "have not received",
        "didn't receive", "did not receive", "didn't get", "where is my", "where's my",
        "wheres my", "delivered", "out for delivery", "in transit", "on the way", "on its way",
        # Round 8: "how's my order doing", "what's happening with my parcel"
        r"how(?:'s| is) (?:my|the|our) (?:order|parcel|package|delivery|shipment) (?:doing|going"
        r"|coming along|getting on)",
        r"what(?:'s| is) (?:happening|going on|up) with (?:my|the|our) (?:order|parcel|package"
        r"|delivery|shipment)"),
).compile()
# Status words that only mean "order status" when an order is named ("check A1001").
STATUS_WEAK = Terms(
    zh=("查", "看", "怎么样了", "情况", "呢", "催", "快点", "什么时候", "啥时候", "多久"),
    en=("where", "whereabouts", "status", "check", "update", "updates", "progress", "look up",
        "lookup", "find", "what about", "any news", "how is", "what happened", "ships", "ship",
        # Round 5: "what's going on with it"
        "going on with",
        "when"),
).compile()
CANCEL = Terms(
    zh=("取消", "撤销", "撤单", "不要了", "不想要了", "不买了", "退订", "取销"),
    en=(r"cancel\w*", "call off", "no longer want", r"don'?t want (?:it|this|that|the order)"),
).compile()
CONDITION = Terms(
    zh=("如果", "假如", "要是", "若", "倘若", "万一", "的话", "假设", "否则", "不然", "如未", "如还"),
    en=("if", "unless", "otherwise", "in case", "in the event", "should it"),
).compile()
# "This order", "my order": the customer means an order without naming it.
ORDER_REF = Terms(
    zh=("这个订单", "这一单", "这单", "那个订单", "那单", "该订单", "此订单", "上个订单",
        "刚才的订单", "我的订单", "我的快递", "我的包裹", "我的货", "我买的", "这个包裹"),
    en=("this order", "that order", "my order", "my orders", "the order", "our order",
        "my package", "my parcel", "my delivery", "my shipment", "my item", "my items",
        "my purchase", "my stuff", "this package", "the package"),
).compile()
# Vaguer references; enough to read a conditional request as being about the last order.
WEAK_REF = Terms(zh=("它", "这个", "那个"), en=("it", "its", "this one", "that one")).compile()
ORDER_NOUN = Terms(
    zh=("订单", "单号", "包裹", "快递"),
    en=("order", "orders", "package", "parcel", "shipment"),
).compile()

# Common English misspellings. Longer keywords are also repaired by one edit (see _fix_word).
TYPOS: dict[str, str] = {
    "oder": "order", "ordr": "order", "odrer": "order", "oredr": "order", "ordder": "order",
    "orde": "order", "trak": "track", "trakc": "track", "tarck": "track", "wher": "where",
    "whre": "where", "wehre": "where", "plocy": "policy", "stauts": "status",
    "sttaus": "status", "cancelation": "cancellation", "refnud": "refund", "pls": "please",
    "nvm": "nevermind", "waht": "what", "ad": "add", "wat": "what", "wats": "whats", "wot": "what", "wots": "whats", "sned": "send", "mony": "money", "ordedr": "order", "oreder": "order",
}
# Keywords worth repairing by one edit (insert, delete, substitute, swap neighbours).
FUZZY_VOCABULARY: tuple[str, ...] = (
    "cancel", "status", "refund", "return", "policy", "shipping", "delivery", "delivered",
    "arrived", "received", "compensation", "warranty", "exchange", "package", "parcel",
    "tracking", "delayed", "shipment", "cancellation", "replacement", "guarantee",
    "representative", "human", "agent", "speak", "person", "operator",
    # Round 3: the inflected forms, so a slip inside them is one edit too ("cancdling",
    # "returing")
    "cancelling", "cancelled", "returning", "refunded", "refunding",
    # Round 5: "wich carier is delivering A1001", "do you delivr to france"
    "carrier", "courier", "deliver",
)
# Words customers run together with no space ("cancelorder", "whereismyorder",
# "howlongdoesshippingtake"): a long unknown word made only of these is read as them.
RUN_ON_WORDS: frozenset[str] = frozenset(
    {"a", "i", "is", "it", "my", "me", "to", "of", "do", "does", "the", "for", "and", "can",
     "you", "u", "pls", "please", "plz", "where", "wheres", "what", "whats", "when", "how",
     "long", "much", "has", "have", "been", "will", "did", "order", "orders", "cancel",
     "cancellation", "track", "tracking", "number", "status", "check", "return", "refund",
     "change", "address", "update", "shipping", "shipped", "ship", "delivery", "delivered",
     "deliver", "take", "takes", "arrive", "package", "parcel", "stuff", "money", "back",
     "want", "need", "now", "asap", "help", "policy", "cost", "costs", "fee", "new", "send",
     "talk", "human", "agent", "person", "this", "that", "yet", "still", "not", "no", "info",
     "exchange", "invoice", "warranty", "amount", "get", "give", "again",
     # Round 4: the FAQ and can't-do questions run together ("whatpaymentmethodsdoyouaccept",
     # "deletemyaccount", "talktoarealperson", "howdoiresetmypassword").
     "payment", "methods", "method", "accept", "pay", "with", "account", "delete", "close",
     "password", "reset", "speak", "real", "someone", "receipt", "discount", "code", "email",
     "emails", "unsubscribe", "countries", "which", "courier", "item", "items", "broken",
     "late", "your", "there", "any"}
)

# Real words one edit away from a keyword; never "repair" these.
NOT_TYPOS = frozenset(
    {"cancer", "states", "statue", "police", "shopping", "relayed", "decayed", "parcels",
     "packages", "returns", "refunds", "arrives", "receives", "delivers", "polity"}
)

# Enough traditional characters to read order questions from zh-TW / zh-HK customers.
# Round 5 (Chinese recall): the everyday ones of shopping and chat (軌跡, 顏色, 帳號, 週, 塊,
# 壞, 評價, 親): a zh-TW customer writes every word this way, and a keyword table written in
# simplified characters misses a message by one character left unfolded.
TRADITIONAL = str.maketrans(
    "訂單貨運費換補償遲後關於麼這個還沒達嗎幫詢請規則賠誤銷號遞郵發場問題況讓給買寄從時間務態蹤跡為樣說應"
    "該錢轉裡現體謝煩編區義們講話戶統動著點處機聯繫電碼選擇確認續無須歷記錄顯經過簽臺灣東實際額錯寫雜開張"
    "優價賣裏條閱聽論軌來會對與種見覺長車書幣專業網頁圖據輸櫃倉庫裝壞損質檢驗罰稅帳賬註刪變帶線訊範歸準備"
    "邊離鐘週幾萬億塊圓諮詳細惡爛難絡員評積紀報銀寶貝親愛狀趕緊調舊顏黃綠藍紅貴氣溫薦試壓斷齊兩雙國亞韓蘭"
    "華門樓層園廣橋島陽興龍寧蘇廈漢當辦頭擔負責盡預計約項總結劃紙證營稱貼錶鏈鍵燈鍋壺腦筆襪褲屬鐵殼啟閉贈"
    "獎勵團購搶語視頻鏡讀資護綁鎖凍冊設隱權決麗撥擊舉釋隨盤廳歡淨嚴隊標衛廠產鬧憤惱縮慮維爲係將夠滿減賺贏"
    "輛遠進鄰傳聲響陸擺劑釘歲",
    "订单货运费换补偿迟后关于么这个还没达吗帮询请规则赔误销号递邮发场问题况让给买寄从时间务态踪迹为样说应"
    "该钱转里现体谢烦编区义们讲话户统动着点处机联系电码选择确认续无须历记录显经过签台湾东实际额错写杂开张"
    "优价卖里条阅听论轨来会对与种见觉长车书币专业网页图据输柜仓库装坏损质检验罚税账账注删变带线讯范归准备"
    "边离钟周几万亿块圆咨详细恶烂难络员评积纪报银宝贝亲爱状赶紧调旧颜黄绿蓝红贵气温荐试压断齐两双国亚韩兰"
    "华门楼层园广桥岛阳兴龙宁苏厦汉当办头担负责尽预计约项总结划纸证营称贴表链键灯锅壶脑笔袜裤属铁壳启闭赠"
    "奖励团购抢语视频镜读资护绑锁冻册设隐权决丽拨击举释随盘厅欢净严队标卫厂产闹愤恼缩虑维为系将够满减赚赢"
    "辆远进邻传声响陆摆剂钉岁",
)

# fmt: on

TOPIC_PATTERNS = tuple((t.topic, t.strong.compile(), t.weak.compile()) for t in TOPICS)
# Topics that, said conditionally about an order, become the DELAY_COMPENSATION step.
DELAY_TOPICS = frozenset({PolicyTopic.DELAY_COMPENSATION, PolicyTopic.AFTER_SALES})
