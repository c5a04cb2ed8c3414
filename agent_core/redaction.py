"""Secrets out of text by content: every piece of one, in whatever form it was echoed.

A shop that refuses a key often echoes it in its error body (whole, cut short, lower-cased,
inside the base64 of a Basic credential, percent-encoded in a url it quotes, or spelled
out with spaces), and that text becomes a step's error, a staff alert, a console page and
a log line. `Redactor` removes from a text every run of `MIN_PIECE` or more characters of
a secret, in any letter case, of:

- the secret itself;
- its percent-encodings (`quote`, `quote_plus`): encoding is character by character, so
  every piece's encoding is a piece of the whole's;
- its base64 (standard and url-safe alphabets), at each of the three alignments a piece
  can have inside a longer encoded text, so a piece encoded with other bytes around it is
  found too (six characters of a secret encode to at least seven base64 characters whatever
  the alignment);
- and when the secret is itself base64 of text (a Basic credential, `user:key`), that text
  too, in every form above;
- each of those with spaces, dashes or dots between its characters ("c k - 5 f"): the text
  is also read with those separators left out.

The patterns are built once per secret set (`Redactor(...)`), then each call reads the
text once; it is cheap enough for every log record. Pure; imports nothing of the project.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from typing import Final
from urllib.parse import quote, quote_plus

# Shorter pieces are too common to blank out of every text ("Bearer", "order").
MIN_PIECE: Final = 6
# Written between a secret's characters to spell it out.
SEPARATORS: Final = " -."
_DROP_SEPARATORS: Final = str.maketrans("", "", SEPARATORS)


def _lower(text: str) -> str:
    """`text` lower-cased character by character, keeping its length (so positions match)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(low if len(low := c.lower()) == 1 else c for c in text)


def _base64_cores(secret: bytes) -> list[str]:
    """The base64 characters that depend on `secret` alone, at each alignment it can have
    inside a longer encoded text (0, 1 or 2 bytes before it), in both alphabets."""
    cores: list[str] = []
    for before in range(3):
        encoded = base64.b64encode(bytes(before) + secret).decode().rstrip("=")
        first = -(-8 * before // 6)  # the first character with no bit of the bytes before
        last = 8 * (before + len(secret)) // 6  # and past the last with no padding bit
        core = encoded[first:last]
        cores += [core, core.replace("+", "-").replace("/", "_")]
    return cores


def _decoded(secret: str) -> list[str]:
    """The text `secret` is the base64 of, if it is (a Basic credential's `user:key`)."""
    try:
        text = base64.b64decode(secret, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return []
    return [text] if text.isprintable() and len(text) >= MIN_PIECE else []


def secret_forms(secret: str) -> list[str]:
    """The forms of `secret` a text may carry it in (see the module docstring)."""
    forms: list[str] = []
    for text in [secret, *_decoded(secret)]:
        raw = text.encode()
        forms += [text, quote(text, safe=""), quote_plus(text, safe=""), *_base64_cores(raw)]
    return list(dict.fromkeys(f for f in forms if len(f) >= MIN_PIECE))


class Redactor:
    """`redactor(text)`: `text` with every piece of the secrets replaced by `mask`.

    `secrets`: removed by content, any piece of `MIN_PIECE` or more characters in any of
    their forms (shorter ones are ignored). `whole`: removed only whole, in any letter case
    (a header value such as "Bearer <token>", whose words are not secret)."""

    __slots__ = ("_grams", "_mask", "_spaced_grams", "_whole")

    def __init__(
        self, secrets: Iterable[str] = (), *, whole: Iterable[str] = (), mask: str = "***"
    ):
        self._mask = mask
        self._whole = sorted({_lower(w) for w in whole if w}, key=len, reverse=True)
        # Every MIN_PIECE-long piece of every form, lower-cased, with the separators left
        # out (read against the text with its separators left out), and the pieces that
        # contain a separator (read against the text as written).
        self._grams: set[str] = set()
        self._spaced_grams: set[str] = set()
        for secret in secrets:
            if len(secret) < MIN_PIECE:
                continue
            for form in secret_forms(secret):
                low = _lower(form)
                self._spaced_grams |= _pieces(low, with_separator=True)
                self._grams |= _pieces(low.translate(_DROP_SEPARATORS), with_separator=False)

    def __bool__(self) -> bool:
        return bool(self._whole or self._grams or self._spaced_grams)

    def __call__(self, text: str) -> str:
        if not self or not text:
            return text
        lowered = _lower(text)
        spans: list[tuple[int, int]] = []
        for whole in self._whole:
            start = 0
            while (found := lowered.find(whole, start)) >= 0:
                spans.append((found, found + len(whole)))
                start = found + len(whole)
        n = MIN_PIECE
        if self._spaced_grams:
            grams = self._spaced_grams
            spans += [
                (i, i + n) for i in range(len(lowered) - n + 1) if lowered[i : i + n] in grams
            ]
        if self._grams:
            joined = lowered.translate(_DROP_SEPARATORS)
            grams = self._grams
            found_at = [i for i in range(len(joined) - n + 1) if joined[i : i + n] in grams]
            if found_at:
                kept = (
                    range(len(lowered))
                    if len(joined) == len(lowered)
                    else [i for i, c in enumerate(lowered) if c not in SEPARATORS]
                )
                spans += [(kept[i], kept[i + n - 1] + 1) for i in found_at]
        if not spans:
            return text
        out: list[str] = []
        at = 0
        for start, end in _merged(spans):
            out += [text[at:start], self._mask]
            at = end
        out.append(text[at:])
        return "".join(out)


def _pieces(form: str, *, with_separator: bool) -> set[str]:
    n = MIN_PIECE
    pieces = {form[i : i + n] for i in range(len(form) - n + 1)}
    if with_separator:
        return {p for p in pieces if any(c in SEPARATORS for c in p)}
    return pieces


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans sorted, the overlapping and touching ones joined."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
