"""Telegram's message length, measured the way Telegram measures it.

Telegram limits a message to 4096 UTF-16 code units of its text *after* entity parsing:
with `parse_mode=HTML` the tags do not count and `&lt;` is one unit, while an emoji
outside the Basic Multilingual Plane is two. Counting Python characters of the HTML
source gets both wrong (a request full of emoji came out at 4,455 units and was refused;
one full of `<` was split into four times as many parts as needed).

Every text here is the HTML the bot sends (plain text goes through `html.escape` first).
"""

from __future__ import annotations

import re

MAX_MESSAGE_UNITS = 4096

# One token of bot HTML: a tag, an entity, or a single character.
_TOKEN = re.compile(r"<[^<>]*>|&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z]{1,8});|.", re.S)
_TAG_NAME = re.compile(r"</?\s*([A-Za-z0-9-]+)")
_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}


def utf16_units(text: str) -> int:
    """Length in UTF-16 code units: what Telegram counts (an astral emoji is two)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _units(token: str) -> int:
    """The visible UTF-16 length of one token (a tag shows nothing)."""
    if token.startswith("<") and len(token) > 1:
        return 0
    if token.startswith("&") and token.endswith(";") and len(token) > 2:
        return utf16_units(_entity_text(token[1:-1]))
    return utf16_units(token)


def _entity_text(name: str) -> str:
    if name.startswith(("#x", "#X")):
        return chr(int(name[2:], 16)) if int(name[2:], 16) < 0x110000 else "?"
    if name.startswith("#"):
        return chr(int(name[1:])) if int(name[1:]) < 0x110000 else "?"
    return _ENTITIES.get(name, "?")


def visible_units(html_text: str) -> int:
    """What Telegram counts of this HTML: the parsed text's UTF-16 length."""
    return sum(_units(token) for token in _TOKEN.findall(html_text))


def split_message(text: str, limit: int = MAX_MESSAGE_UNITS) -> list[str]:
    """Split bot HTML on line boundaries so each part's visible text fits `limit` units.

    A line too long by itself is cut between tokens, never inside a tag or an entity;
    tags still open at a cut are closed at the end of the part and opened again at the
    start of the next, so every part parses on its own. Nothing is lost: joined with
    newlines (and the re-opened tags removed) the parts are the text again.
    """
    parts: list[str] = []
    current, current_units = "", 0
    for line in text.split("\n"):
        line_units = visible_units(line)
        if line_units > limit:
            if current:
                parts.append(current)
            pieces = _hard_cut(line, limit)
            parts.extend(pieces[:-1])
            current = pieces[-1]
            current_units = visible_units(current)
            continue
        joined_units = current_units + line_units + (1 if current else 0)
        if current and joined_units > limit:
            parts.append(current)
            current, current_units = line, line_units
        elif current:
            current, current_units = f"{current}\n{line}", joined_units
        else:
            current, current_units = line, line_units
    if current or not parts:
        parts.append(current)
    return parts


def _hard_cut(line: str, limit: int) -> list[str]:
    """Cut one line into pieces of at most `limit` visible units, keeping tags balanced."""
    pieces: list[str] = []
    piece, units = "", 0
    open_tags: list[tuple[str, str]] = []  # (name, the opening tag as written)
    for token in _TOKEN.findall(line):
        size = _units(token)
        if units + size > limit and units > 0:
            pieces.append(piece + "".join(f"</{name}>" for name, _ in reversed(open_tags)))
            piece, units = "".join(tag for _, tag in open_tags), 0
        piece += token
        units += size
        if size == 0 and (name := _TAG_NAME.match(token)):
            if token.startswith("</"):
                if open_tags and open_tags[-1][0] == name[1].lower():
                    open_tags.pop()
            elif not token.endswith("/>"):
                open_tags.append((name[1].lower(), token))
    pieces.append(piece)
    return pieces


def clip_message(text: str, limit: int = MAX_MESSAGE_UNITS) -> str:
    """The first part of `text` that fits one message, marked "…" when something was cut."""
    parts = split_message(text, limit - 1)
    return parts[0] if len(parts) == 1 else parts[0] + "…"
