"""Text from a shop's API as customers read it: plain, short, whole sentences. Pure.

WordPress and most shop APIs answer some fields as HTML (a page's `excerpt.rendered` is
`<p>Returns are accepted&hellip;</p>`). A chat answer is plain text, escaped for Telegram,
so tags would be shown as written. Every string a response mapping picks
(`ResponseMapping.fields`) goes through `plain_text`:

- a value that looks like HTML (a known tag or an entity) is converted with inscriptis, a
  layout-aware HTML-to-text converter: paragraphs stay separate lines, list items become
  "• item" lines, tags, scripts and styles are gone, entities decoded; WordPress's
  "[…]" excerpt trailer becomes "…";
- a value longer than `TEXT_LIMIT` characters is cut at the end of its last whole
  sentence that fits (then a word), marked with "…".

A value that is not HTML and short enough is returned unchanged (an order number, a
status, an address with "<" in it).
"""

from __future__ import annotations

import re
from typing import Final

# Longest mapped text (characters) before it is cut at a sentence: a policy excerpt, not a page.
TEXT_LIMIT: Final = 600

_HTML = re.compile(
    r"<\s*/?\s*(p|br|div|span|ul|ol|li|a|strong|em|b|i|u|h[1-6]|table|tr|td|th|img|"
    r"blockquote|code|pre|hr|section|article|small|sup|sub|figure|script|style)\b[^>]*>"
    r"|&(#\d{1,7}|#x[0-9a-f]{1,6}|[a-z]{2,8});",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.!?。！？](?=\s|$)|[。！？]")
_BULLET = re.compile(r"^\s*\*\s+", re.MULTILINE)


def looks_like_html(text: str) -> bool:
    return _HTML.search(text) is not None


def html_to_text(html: str) -> str:
    """Readable plain text of an HTML fragment: one line per paragraph or list item."""
    # Imported here: inscriptis brings lxml (~60 ms at every start), and only a shop whose
    # API answers in HTML needs it.
    from inscriptis import get_text

    text = get_text(html).replace("\xa0", " ")
    text = _BULLET.sub("• ", text)
    text = text.replace("[…]", "…").replace("[...]", "…")
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return "\n".join(line for line in lines if line)


def clip_at_sentence(text: str, limit: int = TEXT_LIMIT) -> str:
    """`text`, or its longest start of whole sentences within `limit` characters and "…"
    (a whole word when no sentence ends in the second half of the limit)."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    ends = [m.end() for m in _SENTENCE_END.finditer(head) if m.end() >= limit // 2]
    if ends:
        return head[: ends[-1]].rstrip() + "…"
    space = head.rfind(" ")
    return (head[:space] if space >= limit // 2 else head).rstrip() + "…"


def plain_text(text: str, limit: int = TEXT_LIMIT) -> str:
    """A mapped string as customers read it (see the module docstring)."""
    if looks_like_html(text):
        text = html_to_text(text)
    return clip_at_sentence(text, limit)
