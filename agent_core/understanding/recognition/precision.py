"""The precision layer: what must never become an action (issue 21).

Every function here can only remove or narrow an action the rule reading found, never add
one. They are pure functions over the text the rule planner reads (`agent_core.understanding.reading`):

- confusable ids: "А1003" with a Cyrillic А is an id-like token that is asked about, never
  mapped to A1003 (the customer may have pasted it from anywhere);
- negation the keyword tables missed: "不取消", "请勿取消", "禁止取消", "千万别取消", and "do
  NOT, under any circumstances, cancel" (a filler between commas cuts no negation);
- questions about an action: "why did you cancel A1003?", "has it been cancelled",
  "A1003 已经取消了吗" are about what happened (status), "should I cancel A1003?" about
  whether to (status and the policy);
- scope: "cancel A1007 not A1003", "instead of A1003" leave A1003 alone;
- retraction: "cancel A1003? no wait, just tell me where it is" drops the earlier action;
- reported speech: "my friend wants to cancel B2001" is not the customer's request.
"""

from __future__ import annotations

import re
from typing import Final

# Latin look-alikes from Cyrillic and Greek (upper and lower case), for spotting ids
# written with them. Used only to *recognise* such a token, never to map it to an order.
CONFUSABLES: Final = str.maketrans(
    "АВЕКМНОРСТХУІЈЅаеорсхуіјѕΑΒΕΖΗΙΚΜΝΟΡΤΥΧαικνορτυχ",
    "ABEKMHOPCTXYIJSaeopcxyijsABEZHIKMNOPTYXaikvoptux",
)
_CONFUSE_DIGITS: Final = str.maketrans({"O": "0", "o": "0", "I": "1", "l": "1", "i": "1"})
# A word with at least one letter and digits: a candidate id whatever its script.
_ID_LIKE: Final = re.compile(r"(?<![\w])[^\W\d_]{1,3}[-\s]?\d[\w]{2,11}(?![\w])")


def confusable_ids(text: str, whole: re.Pattern[str]) -> list[tuple[int, int, str, str]]:
    """Tokens that look like an order id only after folding non-ASCII look-alike letters:
    (start, end, token as written, the id it resembles). Asked about, never used."""
    found = []
    for match in _ID_LIKE.finditer(text):
        token = match.group(0)
        if token.isascii():
            continue
        skeleton = token.translate(CONFUSABLES)
        if not skeleton.isascii():
            continue
        skeleton = re.sub(r"[-\s]", "", skeleton)
        repaired = skeleton[0] + skeleton[1:].translate(_CONFUSE_DIGITS)
        if whole.fullmatch(repaired):
            found.append((match.start(), match.end(), token, repaired.upper()))
    return found


# "do NOT, under any circumstances, cancel": the filler between commas is blanked so the
# negator stays next to its verb. Position-keeping (same length), like the rest of reading.
_FILLER_AFTER_NEGATOR: Final = re.compile(
    r"(?<![a-z])(?:do not|don'?t|dont|never|please do not|please don'?t)\s*"
    r"(?P<filler>[,，]\s*(?:under any circumstances?|under no circumstances?|whatever happens"
    r"|no matter what|for any reason|for now|yet|please|i repeat|again)\s*[,，]?)",
    re.IGNORECASE,
)


def blank_negation_fillers(text: str) -> str:
    out = text
    for match in _FILLER_AFTER_NEGATOR.finditer(text):
        start, end = match.span("filler")
        out = out[:start] + " " * (end - start) + out[end:]
    return out


# Chinese negators that must sit right before the verb (a bare 不 anywhere would read
# "不好意思取消…" as negated), with only polite fillers between.
_ZH_NEGATED_TAIL: Final = re.compile(
    r"(?<!能)(?<!可)(?:不|勿|请勿|禁止|严禁|千万别|千万不要|千万不能|不能|不可以|不许|不准)"  # 能不能: asks
    r"(?:现在|马上|立刻|先|再|就|给我|帮我|替我|请|您|你)*\s*$"
)
_EN_NEGATED_TAIL: Final = re.compile(
    r"(?<![a-z])(?:under no circumstances|in no case|by no means|not to|no)\s+(?:\w+\s+){0,2}$"
)


def negated_strictly(before: str) -> bool:
    """Negators the keyword table does not list, checked on the text just before a verb."""
    return bool(_ZH_NEGATED_TAIL.search(before) or _EN_NEGATED_TAIL.search(before))


# A question about what happened: status, never the action (and no policy lookup).
_PAST_EN: Final = re.compile(
    r"(?<![a-z])(?:why|did (?:you|they|we|i|someone|somebody)|have you|has (?:it|this|that|my"
    r"|the|a|[\ue000-\uefff])|was (?:it|this|that|my|the|a|an)|were|who)(?![a-z])"
)
_PAST_ZH_BEFORE: Final = re.compile(
    r"(?:已经|为什么|为啥|怎么就|是不是已经|是否已经?|有没有|谁|本来|原本|是不是)[^，,。.;；!?！？]{0,6}$"
    r"|被[^，,。.;；!?！？]{0,3}$|^是[^，,。.;；!?！？]{0,8}$"
)
_PAST_ZH_AFTER: Final = re.compile(
    r"^[^，,。.;；!?！？]{0,8}?(?:了吗|了么|了没|了嘛|没有[?？]?$|了\s*[?？]|过吗|过么|过没|过了吗)"
)
# "should I cancel …?": whether to; the policy answers it.
_WHETHER_EN: Final = re.compile(
    r"(?<![a-z])(?:should|shall|must|do) (?:i|we)(?![a-z])|what do you (?:think|suggest|recommend)"
)
_WHETHER_ZH: Final = re.compile(r"要不要|该不该|应不应该|需不需要|我应该|你觉得|你看")


def past_question(text: str, start: int, end: int) -> bool:
    """Whether the verb at text[start:end] is asked about as something that happened."""
    before, after = text[:start], text[end:]
    if _PAST_EN.search(before):
        return True
    return bool(_PAST_ZH_BEFORE.search(before) or _PAST_ZH_AFTER.search(after))


def whether_question(text: str, start: int) -> bool:
    before = text[:start]
    return bool(_WHETHER_EN.search(before) or _WHETHER_ZH.search(before))


# "cancel A1007 not A1003", "… instead of A1003", "取消 A1007 而不是 A1003".
_EXCLUDED: Final = re.compile(
    r"(?:(?<![a-z])(?:not(?: for)?|instead of|rather than|except|other than|but not|and not|apart from"
    r")|而不是|不是|而非|除了)\s*(?:(?:the |my )?(?:order|订单)\s*)?(?P<id>[\ue000-\uefff])"
)


def excluded_ids(canonical: str) -> list[str]:
    """Id placeholders the clause says are NOT meant (ids are private-use characters)."""
    return [m.group("id") for m in _EXCLUDED.finditer(canonical)]


# "no wait", "just kidding", "算了不用了": the customer takes back what came before.
RETRACTION: Final = re.compile(
    r"(?<![a-z])(?:no,? wait|wait,? no|actually,? no|just kidding|jk|j/k|kidding|scratch that"
    r"|forget (?:it|that|about it)|ignore that|changed my mind|change of plans?"
    r"|on second thought|nevermind|never mind|hold on|hang on|wait a (?:sec|second|minute))(?![a-z])"
    r"|^(?:hmm+,? )?(?:no|nope|nah|wait|oh no)$"
    r"|开玩笑|说着玩|改主意|当我没说|不用了|算了|先不用了|我再想想|等等|等一下|不对|还是不"
)
# "cancel A1003, sorry, I mean A1007", "取消 A1003，哦不对，是 A1007": the order is corrected.
CORRECTION: Final = re.compile(
    r"(?<![a-z])(?:i mean|i meant|i mean to say|sorry,? i mean|correction:?|make that|not that one,?)"
    r"\s*(?:order\s*)?(?P<id>[\ue000-\uefff])"
    r"|(?:不对|我是说|我说的是|说错了)[^\ue000-\uefff，,。]{0,4}(?P<zid>[\ue000-\uefff])"
    r"|^(?:是|应该是)\s*(?P<sid>[\ue000-\uefff])\s*$"
)


def corrected_id(canonical: str) -> str | None:
    """The id placeholder a clause corrects the order to, if it is a correction."""
    match = CORRECTION.search(canonical)
    if match is None:
        return None
    return match.group("id") or match.group("zid") or match.group("sid")


def retracts(canonical: str) -> bool:
    return RETRACTION.search(canonical) is not None


# "my friend wants to cancel B2001": somebody else's wish, not a request to the bot.
_REPORTED: Final = re.compile(
    r"(?<![a-z])(?:my|our|a|his|her|their) (?:friend|wife|husband|mom|mum|mother|dad|father"
    r"|brother|sister|colleague|coworker|co-worker|boss|son|daughter|partner|roommate|flatmate"
    r"|neighbou?r|kid|kids|child|customer|client|girlfriend|boyfriend|cousin|family)s?"
    r"(?: \w+){0,2} (?:wants?|wanted|asked|asks|asking|said|says|saying|told|tells|telling"
    r"|would like|needs?|plans?|is going|was going|thinks?|suggested|suggests|keeps)(?![a-z])"
    r"|(?<![a-z])(?:the|your) (?:courier|driver|delivery (?:guy|man|person)|seller|agent|support"
    r"|staff|bank|forum|post office)(?: \w+){0,3} (?:told|tells|said|says|asked|wants|suggested"
    r"|wrote)(?![a-z])"
    r"|(?<![a-z])(?:someone|somebody|they|he|she) (?:\w+ ){0,3}(?:wants?|asked|said|told|would like"
    r"|wrote|posted)(?![a-z])"
    r"|[\"“][^\"”]*$"
    r"|(?:朋友|老婆|老公|妻子|丈夫|我妈|我爸|妈妈|爸爸|同事|家人|别人|有人|他|她|他们|客户|室友|快递员"
    r"|快递小哥|卖家|客服|我哥|我姐|我弟|我妹|哥哥|姐姐|弟弟|妹妹|邻居|领导|老板|上司|男朋友|女朋友"
    r"|对象|儿子|女儿|孩子|亲戚|表哥|表姐|舍友|媳妇|爱人)(?:也|一直|非)?(?:说|想|要|让|打算|叫|觉得|认为"
    r"|建议|非要|坚持)"
)


def reported(before: str) -> bool:
    """Whether the text before a verb makes it somebody else's wish."""
    return _REPORTED.search(before) is not None


# "A1007 的围巾不要了": an item of the order is not wanted, not the order (changing items).
_ITEM_BEFORE: Final = re.compile(
    r"[\ue000-\uefff]?\s*的(?!订单|单|包裹|快递|话)[\u4e00-\u9fff]{1,6}\s*$"  # 的话: "if"
)


# "退货不要了", "退款不想要了": the action named before is not wanted, not the order.
_ACTION_NOUN_BEFORE: Final = re.compile(
    r"(?:退货|退款|退钱|换货|改地址|地址|取消)\s*(?:就|也|都)?\s*$"
)


def about_an_item(before: str) -> bool:
    return _ITEM_BEFORE.search(before) is not None


# "退货不需要了", "取消就不用了", "refund? nah": Chinese often negates after the verb.
_NEGATED_AFTER: Final = re.compile(
    r"^\s*(?:就|也|都|还是|先)?\s*(?:不需要了|不用了|不要了|免了|算了|不必了|不办了|不做了)"
)


def negated_after(after: str, before: str = "") -> bool:
    """The verb is taken back right after it ("退货不需要了"), or is itself the "not wanted"
    of an action named just before ("退款不要了")."""
    return _NEGATED_AFTER.search(after) is not None or bool(_ACTION_NOUN_BEFORE.search(before))
