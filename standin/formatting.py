"""Telegram's text formatting rules, so length limits and markup errors match the real API.

Telegram measures a message *after* its markup is parsed (4096 UTF-16 code units of
visible text), reports markup errors with byte offsets into the UTF-8 source, and
accepts only a few HTML tags and entities. Bots that pass with a lenient fake and then
fail in production trip over exactly these rules, so the parsers below follow tdlib's
(`td/telegram/MessageEntity.cpp`: `parse_html`, `parse_markdown_v2`, `parse_markdown`)
step by step rather than leaning on a general-purpose HTML or Markdown library.
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
_MD2_RESERVED = "_*[]()~`>#+-=|{}.!"
# tdlib's names for entity types, as they appear in "Can't find end of X entity" errors.
_MD2_TYPE_NAMES = {
    "bold": "Bold",
    "italic": "Italic",
    "underline": "Underline",
    "strikethrough": "Strikethrough",
    "spoiler": "Spoiler",
    "code": "Code",
    "pre": "Pre",
    "pre_code": "PreCode",
    "text_link": "TextUrl",
    "custom_emoji": "CustomEmoji",
}
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


class ParseError(Exception):
    """A markup error, worded as tdlib words it (the API adds "can't parse entities: ")."""


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

    Raises ParseError for bad markup and ValueError for an unknown parse mode.
    """
    mode = (parse_mode or "").lower()
    if mode == "":
        return FormattedText(text)
    if mode == "html":
        return _HtmlParser(text).parse()
    if mode == "markdownv2":
        return _MarkdownV2Parser(text).parse()
    if mode == "markdown":
        return _MarkdownParser(text).parse()
    raise ValueError(parse_mode)


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


def _sorted_entities(entities: list[JSON]) -> tuple[JSON, ...]:
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
        return FormattedText(result, _sorted_entities(self.entities))

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


@dataclass
class _Md2Open:
    kind: str
    argument: str
    offset: int
    at: int
    out_index: int


@dataclass
class _Quote:
    offset: int
    depth: int
    expandable: bool = False


@dataclass
class _MarkdownV2Parser:
    """tdlib's parse_markdown_v2, including its "reserved character" strictness."""

    source: str
    i: int = 0
    out: _Output = field(default_factory=_Output)
    stack: list[_Md2Open] = field(default_factory=list)
    entities: list[JSON] = field(default_factory=list)
    quote: _Quote | None = None

    def parse(self) -> FormattedText:
        while self.i < len(self.source):
            self._step()
        self._close_quote()
        if self.stack:
            raise self._unclosed(self.stack[-1])
        return FormattedText(self.out.text(), _sorted_entities(self.entities))

    def _unclosed(self, opened: _Md2Open) -> ParseError:
        name = _MD2_TYPE_NAMES[opened.kind]
        at = byte_offset(self.source, opened.at)
        return ParseError(f"Can't find end of {name} entity at byte offset {at}")

    def _in_code(self) -> bool:
        return bool(self.stack) and self.stack[-1].kind in ("code", "pre", "pre_code")

    def _peek(self, ahead: int = 1) -> str:
        index = self.i + ahead
        return self.source[index] if index < len(self.source) else ""

    def _step(self) -> None:
        char = self.source[self.i]
        escaped = self._peek()
        if char == "\\" and escaped and 0 < ord(escaped) <= 126:
            self.out.add(escaped)
            self.i += 2
            return
        if not self._in_code() and self._quote_marker():
            return
        reserved = "`" if self._in_code() else _MD2_RESERVED
        if char not in reserved:
            self.out.add(char)
            self.i += 1
            if char == "\n":
                self._maybe_end_quote()
            return
        if self.stack and self._is_end(char):
            self._end_entity()
        else:
            self._begin_entity(char)

    def _reserved(self, char: str) -> ParseError:
        return ParseError(
            f"Character '{char}' is reserved and must be escaped with the preceding '\\'"
        )

    def _at_line_start(self) -> bool:
        return self.i == 0 or self.source[self.i - 1] in "\r\n"

    def _quote_marker(self) -> bool:
        """Consume a line-leading ">" (or "**>" for an expandable quote) or a closing "||"."""
        text = self.source
        if self._at_line_start():
            expandable = text.startswith("**>", self.i)
            if expandable or text.startswith(">", self.i):
                if self.quote is None:
                    self.quote = _Quote(self.out.utf16, len(self.stack), expandable)
                self.i += 3 if expandable else 1
                return True
        if self.quote is not None and text.startswith("||", self.i):
            after = self._peek(2)
            top_is_spoiler = bool(self.stack) and self.stack[-1].kind == "spoiler"
            if after in ("", "\r", "\n") and not top_is_spoiler:
                self.quote.expandable = True
                self.i += 2
                return True
        return False

    def _maybe_end_quote(self) -> None:
        if self.quote is None or self._in_code():
            return
        rest = self.source[self.i :]
        if not (rest.startswith(">") or rest.startswith("**>")):
            self._close_quote()

    def _close_quote(self) -> None:
        quote, self.quote = self.quote, None
        if quote is None:
            return
        if len(self.stack) > quote.depth:
            raise self._unclosed(self.stack[-1])
        if self.out.utf16 > quote.offset:
            kind = "expandable_blockquote" if quote.expandable else "blockquote"
            length = self.out.utf16 - quote.offset
            self.entities.append({"type": kind, "offset": quote.offset, "length": length})

    def _is_end(self, char: str) -> bool:
        kind = self.stack[-1].kind
        nxt = self._peek()
        ends = {
            "bold": char == "*",
            "italic": char == "_" and nxt != "_",
            "underline": char == "_" and nxt == "_",
            "strikethrough": char == "~",
            "spoiler": char == "|" and nxt == "|",
            "code": char == "`",
            "pre": self.source.startswith("```", self.i),
            "pre_code": self.source.startswith("```", self.i),
            "text_link": char == "]",
            "custom_emoji": char == "]",
        }
        return ends[kind]

    def _begin_entity(self, char: str) -> None:
        at = self.i
        nxt = self._peek()
        argument = ""
        if char == "_" and nxt == "_":
            kind, width = "underline", 2
        elif char in "_*~[":
            kind = {"_": "italic", "*": "bold", "~": "strikethrough", "[": "text_link"}[char]
            width = 1
        elif char == "|" and nxt == "|":
            kind, width = "spoiler", 2
        elif char == "!" and nxt == "[":
            kind, width = "custom_emoji", 2
        elif char == "`" and self.source.startswith("```", self.i):
            self.i += 3
            kind, argument = self._pre_header()
            width = 0
        elif char == "`":
            kind, width = "code", 1
        else:
            raise self._reserved(char)
        self.i += width
        self.stack.append(_Md2Open(kind, argument, self.out.utf16, at, len(self.out.parts)))

    def _pre_header(self) -> tuple[str, str]:
        """Read an optional language after ``` and skip one leading line break."""
        text = self.source
        end = self.i
        while end < len(text) and text[end] not in _SPACES and text[end] != "`":
            end += 1
        kind, language = "pre", ""
        if end != self.i and end < len(text) and text[end] != "`":
            kind, language = "pre_code", text[self.i : end]
            self.i = end
        if self.i < len(text) and text[self.i] in "\r\n":
            pair = self._peek() in ("\r", "\n") and self._peek() != text[self.i]
            self.i += 2 if pair else 1
        return kind, language

    def _end_entity(self) -> None:
        opened = self.stack[-1]
        skip = self.out.utf16 == opened.offset
        entity: JSON = {"type": opened.kind, "offset": opened.offset}
        if opened.kind in ("underline", "spoiler"):
            self.i += 2
        elif opened.kind in ("pre", "pre_code"):
            self.i += 3
            entity["type"] = "pre"
            if opened.argument:
                entity["language"] = opened.argument
        elif opened.kind == "text_link":
            url = check_url(self._link_target(opened))
            skip = skip or url is None
            entity["url"] = url
        elif opened.kind == "custom_emoji":
            entity["custom_emoji_id"] = self._emoji_target()
        else:
            self.i += 1
        self.stack.pop()
        if not skip:
            entity["length"] = self.out.utf16 - opened.offset
            self.entities.append(entity)

    def _link_target(self, opened: _Md2Open) -> str:
        """After "]": "(url)" with backslash escapes, or the link text itself."""
        self.i += 1
        if self._peek(0) != "(":
            return self.out.since(opened.out_index)
        return self._parenthesised("Can't find end of a URL at byte offset {at}")

    def _parenthesised(self, unclosed: str) -> str:
        self.i += 1
        begin = self.i
        chars: list[str] = []
        text = self.source
        while self.i < len(text) and text[self.i] != ")":
            nxt = self._peek()
            if text[self.i] == "\\" and nxt and 0 < ord(nxt) <= 126:
                chars.append(nxt)
                self.i += 2
            else:
                chars.append(text[self.i])
                self.i += 1
        if self.i >= len(text):
            raise ParseError(unclosed.replace("{at}", str(byte_offset(text, begin))))
        self.i += 1
        return "".join(chars)

    def _emoji_target(self) -> str:
        self.i += 1
        if self._peek(0) != "(":
            raise ParseError("Custom emoji entity must contain a tg://emoji URL")
        url = self._parenthesised("Can't find end of a custom emoji URL at byte offset {at}")
        prefix = "tg://emoji?id="
        if not url.lower().startswith(prefix):
            raise ParseError("Custom emoji URL must have an emoji identifier")
        return _custom_emoji_id(url[len(prefix) :])


@dataclass
class _MarkdownParser:
    """tdlib's legacy `Markdown` mode: four markers, no nesting, few escapes."""

    source: str
    i: int = 0
    out: _Output = field(default_factory=_Output)
    entities: list[JSON] = field(default_factory=list)

    def parse(self) -> FormattedText:
        text = self.source
        while self.i < len(text):
            char = text[self.i]
            nxt = text[self.i + 1] if self.i + 1 < len(text) else ""
            if char == "\\" and nxt in ("_", "*", "`", "["):
                self.out.add(nxt)
                self.i += 2
            elif char in "_*`[":
                self._entity(char)
            else:
                self.out.add(char)
                self.i += 1
        return FormattedText(self.out.text(), _sorted_entities(self.entities))

    def _entity(self, char: str) -> None:
        text = self.source
        begin = self.i
        self.i += 1
        is_pre = char == "`" and text.startswith("``", self.i)
        language = self._pre_language() if is_pre else ""
        end_char = "]" if char == "[" else char
        offset, out_index = self.out.utf16, len(self.out.parts)
        while self.i < len(text) and (
            text[self.i] != end_char or (is_pre and not text.startswith("``", self.i + 1))
        ):
            self.out.add(text[self.i])
            self.i += 1
        if self.i >= len(text):
            at = byte_offset(text, begin)
            raise ParseError(f"Can't find end of the entity starting at byte offset {at}")
        self.i += 1
        entity = self._make_entity(char, is_pre, language, offset, out_index)
        if is_pre:
            self.i += 2
        if entity is not None and self.out.utf16 > offset:
            self.entities.append(entity)

    def _pre_language(self) -> str:
        text = self.source
        self.i += 2
        end = self.i
        while end < len(text) and text[end] not in _SPACES and text[end] != "`":
            end += 1
        language = ""
        if end != self.i and end < len(text) and text[end] != "`":
            language = text[self.i : end]
            self.i = end
        if self.i < len(text) and text[self.i] in "\r\n":
            nxt = text[self.i + 1] if self.i + 1 < len(text) else ""
            self.i += 2 if nxt in ("\r", "\n") and nxt != text[self.i] else 1
        return language

    def _make_entity(
        self, char: str, is_pre: bool, language: str, offset: int, out_index: int
    ) -> JSON | None:
        entity: JSON = {"offset": offset, "length": self.out.utf16 - offset}
        if char == "[":
            url = self.out.since(out_index)
            if self.i < len(self.source) and self.source[self.i] == "(":
                end = self.source.find(")", self.i)
                end = len(self.source) if end < 0 else end
                url = self.source[self.i + 1 : end]
                self.i = min(end + 1, len(self.source))
            link = check_url(url)
            return None if link is None else {"type": "text_link", **entity, "url": link}
        if is_pre:
            return {"type": "pre", **entity, **({"language": language} if language else {})}
        kind = {"_": "italic", "*": "bold", "`": "code"}[char]
        return {"type": kind, **entity}
