"""Mapped API text as customers read it (`agent_core.http.text`). Pure."""

from __future__ import annotations

from agent_core.http.text import clip_at_sentence, plain_text


def test_html_becomes_lines_and_plain_text_is_left_alone() -> None:
    html = "<h2>Shipping</h2><p>We ship in 2&nbsp;days.</p><ol><li>Pack</li><li>Send</li></ol>"
    assert plain_text(html) == "Shipping\nWe ship in 2 days.\n1. Pack\n2. Send"
    assert plain_text("<script>alert(1)</script>Hi") == "Hi"
    assert plain_text("88 Century Avenue, <3 floor") == "88 Century Avenue, <3 floor"
    assert plain_text("A1001") == "A1001"


def test_long_text_ends_at_a_whole_sentence() -> None:
    text = "One short sentence. " * 40
    clipped = clip_at_sentence(text, 100)
    assert clipped.endswith("sentence.…") and len(clipped) <= 100
    zh = "七天内可以退货。" * 30
    assert clip_at_sentence(zh, 50).endswith("。…")
    words = "word " * 100
    assert clip_at_sentence(words, 60).endswith("word…")
