"""Telegram's text formatting rules, so length limits and markup errors match the real API.

Telegram measures a message *after* its markup is parsed (4096 UTF-16 code units of
visible text), reports markup errors with byte offsets into the UTF-8 source, and
accepts only a few HTML tags and entities. Bots that pass with a lenient fake and then
fail in production trip over exactly these rules, so the HTML parser below follows
tdlib's (`td/telegram/MessageEntity.cpp`: `parse_html`) step by step rather than leaning
on a general-purpose HTML library.

Only `parse_mode=HTML` (or none) is modelled: it is all the bot and the demo send.
MarkdownV2 and legacy Markdown are refused with a clear error (`UnsupportedParseMode`)
instead of being parsed approximately, so a client that starts using them finds out at
once rather than passing against rules Telegram does not apply.

One idea, slightly over 400 lines: tdlib's HTML rules are a single state machine (tags,
attributes, references, entity nesting) whose pieces make sense only together; the
small helpers beside it (UTF-16 length, URL check, command entities) are the same
rules as Telegram applies them to incoming text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

JSON = dict[str, Any]

MAX_TEXT_LENGTH = 4096
_SPACES = " \t\r\n\v\f"
_HTML_TAGS = frozenset(
    {
        "a",
        "b",
        "strong",
        "i",
        "em",
        "s",
        "strike",
        "del",
        "u",
        "ins",
        "tg-spoiler",
        "tg-emoji",
        "span",
        "pre",
        "code",
        "blockquote",
    }
)
_HTML_ENTITY_TYPES = {
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "u": "underline",
    "ins": "underline",
    "tg-spoiler": "spoiler",
    "span": "spoiler",
}
_NAMED_REFERENCES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
# tdlib's MessageEntity::get_type_priority: orders entities that cover the same span.
_TYPE_PRIORITY = {
    "blockquote": 0,
    "expandable_blockquote": 0,
    "pre": 11,
    "code": 20,
    "text_link": 49,
    "bold": 90,
    "italic": 91,
    "underline": 92,
    "strikethrough": 93,
    "spoiler": 94,
    "custom_emoji": 99,
}
_LINK_SCHEMES = frozenset({"http", "https", "ftp", "tg", "ton", "tonsite"})
# Parse modes Telegram accepts that the stand-in deliberately does not model.
TELEGRAM_ONLY_PARSE_MODES = frozenset({"markdownv2", "markdown"})


class ParseError(Exception):
    """A markup error, worded as tdlib words it (the API adds "can't parse entities: ")."""


class UnsupportedParseMode(ValueError):
    """A parse_mode this stand-in does not model; `known` says whether Telegram has it."""

    def __init__(self, parse_mode: str | None) -> None:
        super().__init__(parse_mode)
        self.known = (parse_mode or "").lower() in TELEGRAM_ONLY_PARSE_MODES


@dataclass(frozen=True)
class FormattedText:
    """Visible text plus Bot API entity dicts (offsets and lengths in UTF-16 code units)."""

    text: str
    entities: tuple[JSON, ...] = ()

    @property
    def length(self) -> int:
        """Length the way Telegram limits it: UTF-16 code units of the visible text."""
        return utf16_len(self.text)


def utf16_len(text: str) -> int:
    """UTF-16 length; Telegram counts offsets and limits in these units, not code points."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def byte_offset(text: str, index: int) -> int:
    """UTF-8 byte offset of `text[index]`, the unit tdlib's error messages use."""
    return len(text[:index].encode("utf-8", "surrogatepass"))


def parse(text: str, parse_mode: str | None) -> FormattedText:
    """Parse `text` under a Bot API `parse_mode` (case-insensitive; None means plain).

    Raises ParseError for bad markup and UnsupportedParseMode for any mode but HTML.
    """
    mode = (parse_mode or "").lower()
    if mode == "":
        return FormattedText(text)
    if mode == "html":
        return _HtmlParser(text).parse()
    raise UnsupportedParseMode(parse_mode)


def command_entities(text: str) -> tuple[JSON, ...]:
    """bot_command entities Telegram attaches to "/command" words in incoming messages.

    python-telegram-bot's CommandHandler matches on these entities, not on the raw text,
    so injected messages must carry them exactly as Telegram would.
    """
    found: list[JSON] = []
    index = 0
    while index < len(text):
        start = text.find("/", index)
        if start < 0:
            break
        end = start + 1
        while end < len(text) and (text[end].isalnum() or text[end] in "_@"):
            end += 1
        at_word_start = start == 0 or text[start - 1] in _SPACES
        if at_word_start and end - start > 1 and text[start + 1] != "@":
            offset = utf16_len(text[:start])
            found.append(
                {"type": "bot_command", "offset": offset, "length": utf16_len(text[start:end])}
            )
        index = end
    return tuple(found)


def check_url(url: str) -> str | None:
    """Normalise a link target like tdlib's check_url, or None if Telegram would drop it."""
    if not url or any(ch in url for ch in _SPACES):
        return None
    if url.lower().startswith("tg:"):
        return url
    candidate = url if "://" in url else f"http://{url}"
    try:
        parts = urlsplit(candidate)
    except ValueError:
        return None
    host = parts.hostname or ""
    if parts.scheme.lower() not in _LINK_SCHEMES or "." not in host.strip("."):
        return None
    return urlunsplit((parts.scheme.lower(), parts.netloc, parts.path or "/", *parts[3:]))


def sorted_entities(entities: list[JSON]) -> tuple[JSON, ...]:
    """tdlib's order: by offset, longer (outer) entity first, then tdlib's type priority."""
    return tuple(
        sorted(
            entities,
            key=lambda e: (e["offset"], -e["length"], _TYPE_PRIORITY.get(e["type"], 50)),
        )
    )


def _check_surrogates(text: str) -> None:
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        raise ParseError(
            "Text contains invalid Unicode characters after decoding HTML entities, check "
            "for unmatched surrogate code units"
        )


def decode_html_reference(text: str, pos: int) -> tuple[str, int] | None:
    """Decode the character reference at `text[pos] == "&"`, as tdlib does.

    Only &lt; &gt; &amp; &quot; and numeric references are understood; the semicolon is
    optional; anything else (&nbsp;, &laquo;) stays literal text. Returns the character
    and the index after the reference, or None when it is left alone.
    """
    end = pos + 1
    if end < len(text) and text[end] == "#":
        return _decode_numeric_reference(text, pos, end + 1)
    while end < len(text) and text[end].isascii() and text[end].isalpha():
        end += 1
    char = _NAMED_REFERENCES.get(text[pos + 1 : end])
    if char is None:
        return None
    return char, _skip_semicolon(text, end)


def _decode_numeric_reference(text: str, pos: int, end: int) -> tuple[str, int] | None:
    code = 0
    if end < len(text) and text[end] == "x":
        end += 1
        while end < len(text) and text[end] in "0123456789abcdefABCDEF":
            code = code * 16 + int(text[end], 16)
            end += 1
    else:
        while end < len(text) and text[end] in "0123456789":
            code = code * 10 + int(text[end])
            end += 1
    if code == 0 or code >= 0x10FFFF or end - pos >= 10:
        return None
    return chr(code), _skip_semicolon(text, end)


def _skip_semicolon(text: str, end: int) -> int:
    return end + 1 if end < len(text) and text[end] == ";" else end


class _Output:
    """Visible text being built, with its running UTF-16 length for entity offsets."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.utf16 = 0

    def add(self, chunk: str) -> None:
        self.parts.append(chunk)
        self.utf16 += utf16_len(chunk)

    def since(self, index: int) -> str:
        return "".join(self.parts[index:])

    def text(self) -> str:
        return "".join(self.parts)


@dataclass
class _OpenTag:
    name: str
    argument: str
    offset: int
    out_index: int


@dataclass
class _HtmlParser:
    """tdlib's parse_html: a small, strict tag scanner, not an HTML5 parser."""

    source: str
    i: int = 0
    out: _Output = field(default_factory=_Output)
    stack: list[_OpenTag] = field(default_factory=list)
    entities: list[JSON] = field(default_factory=list)

    def parse(self) -> FormattedText:
        text = self.source
        while self.i < len(text):
            char = text[self.i]
            if char == "&" and self._reference():
                continue
            if char != "<":
                self.out.add(char)
                self.i += 1
            elif self.i + 1 < len(text) and text[self.i + 1] == "/":
                self._close_tag()
            else:
                self._open_tag()
        if self.stack:
            name = self.stack[-1].name
            raise ParseError(f'Can\'t find end tag corresponding to start tag "{name}"')
        result = self.out.text()
        _check_surrogates(result)
        for entity in self.entities:  # a language survives only on `pre`, as in tdlib
            if entity["type"] == "code":
                entity.pop("language", None)
        return FormattedText(result, sorted_entities(self.entities))

    def _error(self, message: str, index: int) -> ParseError:
        return ParseError(message.replace("{at}", str(byte_offset(self.source, index))))

    def _reference(self) -> bool:
        decoded = decode_html_reference(self.source, self.i)
        if decoded is None:
            return False
        self.out.add(decoded[0])
        self.i = decoded[1]
        return True

    def _skip_spaces(self) -> None:
        while self.i < len(self.source) and self.source[self.i] in _SPACES:
            self.i += 1

    def _scan_name(self, stop: str) -> str:
        start = self.i
        while self.i < len(self.source) and self.source[self.i] not in stop:
            self.i += 1
        return self.source[start : self.i]

    def _open_tag(self) -> None:
        begin = self.i
        self.i += 1
        name = self._scan_name(_SPACES + ">").lower()
        if self.i >= len(self.source):
            raise self._error("Unclosed start tag at byte offset {at}", begin)
        if name not in _HTML_TAGS:
            raise self._error(f'Unsupported start tag "{name}" at byte offset {{at}}', begin)
        argument = self._attributes(name, begin)
        if name == "span" and argument != "spoiler":
            raise self._error('Tag "span" must have class "tg-spoiler" at byte offset {at}', begin)
        self.i += 1
        self.stack.append(_OpenTag(name, argument, self.out.utf16, len(self.out.parts)))

    def _attributes(self, tag: str, begin: int) -> str:
        argument = ""
        while True:
            self._skip_spaces()
            if self.i >= len(self.source):
                raise self._error("Unclosed start tag at byte offset {at}", begin)
            if self.source[self.i] == ">":
                return argument
            name = self._scan_name(_SPACES + "=>")
            if not name:
                raise self._error(
                    f'Empty attribute name in the tag "{tag}" at byte offset {{at}}', begin
                )
            self._skip_spaces()
            if self.i >= len(self.source) or self.source[self.i] != "=":
                argument = _tag_argument(tag, name, "", argument)
                continue
            self.i += 1
            self._skip_spaces()
            if self.i >= len(self.source):
                raise self._error(f'Unclosed start tag "{tag}" at byte offset {{at}}', begin)
            value = self._attribute_value()
            if self.i >= len(self.source):
                raise self._error("Unclosed start tag at byte offset {at}", begin)
            argument = _tag_argument(tag, name, value, argument)

    def _attribute_value(self) -> str:
        text = self.source
        if text[self.i] not in "'\"":
            start = self.i
            while self.i < len(text) and (
                (text[self.i].isascii() and text[self.i].isalnum()) or text[self.i] in ".-"
            ):
                self.i += 1
            if self.i < len(text) and text[self.i] not in _SPACES and text[self.i] != ">":
                raise self._error("Unexpected end of name token at byte offset {at}", start)
            return text[start : self.i].lower()
        quote = text[self.i]
        self.i += 1
        chars: list[str] = []
        while self.i < len(text) and text[self.i] != quote:
            decoded = decode_html_reference(text, self.i) if text[self.i] == "&" else None
            if decoded is not None:
                chars.append(decoded[0])
                self.i = decoded[1]
            else:
                chars.append(text[self.i])
                self.i += 1
        if self.i < len(text):
            self.i += 1
        return "".join(chars)

    def _close_tag(self) -> None:
        begin = self.i
        if not self.stack:
            raise self._error("Unexpected end tag at byte offset {at}", begin)
        self.i += 2
        end_name = self._scan_name(_SPACES + ">")
        self._skip_spaces()
        if self.i >= len(self.source) or self.source[self.i] != ">":
            raise self._error("Unclosed end tag at byte offset {at}", begin)
        self.i += 1
        opened = self.stack[-1]
        if end_name and end_name.lower() != opened.name:
            raise self._error(
                f'Unmatched end tag at byte offset {{at}}, expected "</{opened.name}>", '
                f'found "</{end_name}>"',
                begin,
            )
        self.stack.pop()
        if self.out.utf16 > opened.offset:
            self._add_entity(opened)

    def _add_entity(self, opened: _OpenTag) -> None:
        entity: JSON = {"offset": opened.offset, "length": self.out.utf16 - opened.offset}
        simple = _HTML_ENTITY_TYPES.get(opened.name)
        if simple is not None:
            self.entities.append({"type": simple, **entity})
        elif opened.name == "a":
            url = check_url(opened.argument or self.out.since(opened.out_index))
            if url is not None:
                self.entities.append({"type": "text_link", **entity, "url": url})
        elif opened.name == "blockquote":
            kind = "expandable_blockquote" if opened.argument else "blockquote"
            self.entities.append({"type": kind, **entity})
        elif opened.name == "tg-emoji":
            emoji_id = _custom_emoji_id(opened.argument)
            self.entities.append({"type": "custom_emoji", **entity, "custom_emoji_id": emoji_id})
        else:
            self._add_code_entity(opened, entity)

    def _add_code_entity(self, opened: _OpenTag, entity: JSON) -> None:
        """<pre><code class="language-x"> nests into one `pre` entity with a language."""
        last = self.entities[-1] if self.entities else None
        same_span = last is not None and (last["offset"], last["length"]) == (
            entity["offset"],
            entity["length"],
        )
        if opened.name == "pre":
            if last is not None and same_span and last["type"] == "code" and "language" in last:
                last["type"] = "pre"
            else:
                self.entities.append({"type": "pre", **entity})
        elif last is not None and same_span and last["type"] == "pre" and opened.argument:
            last["language"] = opened.argument
        elif opened.argument:
            self.entities.append({"type": "code", **entity, "language": opened.argument})
        else:
            self.entities.append({"type": "code", **entity})


def _tag_argument(tag: str, attribute: str, value: str, current: str) -> str:
    """The one attribute per tag that tdlib keeps; all others are accepted and ignored."""
    if tag == "a" and attribute == "href":
        return value
    if tag == "code" and attribute == "class" and value.startswith("language-"):
        return value[len("language-") :]
    if tag == "span" and attribute == "class" and value.startswith("tg-"):
        return value[len("tg-") :]
    if tag == "tg-emoji" and attribute == "emoji-id":
        return value
    if tag == "blockquote" and attribute == "expandable":
        return "1"
    return current


def _custom_emoji_id(value: str) -> str:
    if not value.isdigit() or not 0 < int(value) < 2**63:
        raise ParseError("Invalid custom emoji identifier specified")
    return value
