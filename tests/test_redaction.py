"""`agent_core.redaction`: every piece of a secret, in every form it is echoed in, removed;
everything else left as it was."""

from __future__ import annotations

import base64
from urllib.parse import quote

import pytest

from agent_core.redaction import Redactor

SECRET = "sk_live_7Qx2Lm9Pz4Rt"
B64 = lambda text: base64.b64encode(text.encode()).decode()  # noqa: E731


@pytest.mark.parametrize(
    "echo",
    [
        pytest.param(SECRET, id="whole"),
        pytest.param(SECRET[:7], id="prefix"),
        pytest.param(SECRET[-6:], id="suffix"),
        pytest.param(SECRET[5:13], id="middle-piece"),
        pytest.param(SECRET.lower(), id="lower-cased"),
        pytest.param(SECRET[4:14].upper(), id="upper-cased-piece"),
        pytest.param(B64(SECRET), id="base64"),
        pytest.param(B64(f"user:{SECRET}"), id="base64-inside-a-credential"),
        pytest.param(B64(SECRET[3:12]), id="base64-of-a-piece"),
        pytest.param(base64.urlsafe_b64encode(f"??{SECRET}".encode()).decode(), id="base64url"),
        pytest.param(quote(SECRET + "/=&", safe=""), id="url-encoded"),
        pytest.param(" ".join(SECRET), id="spaced"),
        pytest.param("-".join(SECRET[2:10]), id="dashed-piece"),
        pytest.param(". ".join(SECRET[8:]), id="dotted-suffix"),
    ],
)
def test_every_form_of_a_secret_is_removed(echo: str) -> None:
    redact = Redactor([SECRET])
    text = redact(f'{{"code": 401, "message": "key {echo} is invalid"}}')
    assert text.startswith('{"code": 401, "message": "key ') and text.endswith(' is invalid"}')
    rest = text.replace("***", "")
    assert not any(SECRET[i : i + 6].lower() in rest.lower() for i in range(len(SECRET) - 5))
    assert "***" in text


def test_the_text_of_a_base64_secret_is_removed_in_every_form() -> None:
    """A Basic credential: the secret is the base64 of `key:secret`, which is secret too."""
    redact = Redactor([B64("ck_5f2a9e:cs_77c1d0e4b3")])
    for echo in ["cs_77c1d0e4b3", "CK_5F2A9E", "c k _ 5 f 2 a 9 e", quote("5f2a9e:cs", safe="")]:
        assert redact(f"got {echo}.") == "got ***."


def test_short_common_strings_and_unrelated_text_are_untouched() -> None:
    redact = Redactor([SECRET, "abc12"])  # a secret under six characters is not pieced
    text = (
        "Order 1001 is live; Bearer token refused: Sorry, you cannot view this resource. "
        'sk_li is five characters of a key, so is 7Qx2L, abc12 is short; {"status": "Live"} '
        "https://shop.example/wp-json/wc/v3/orders?per_page=10 — a-b-c d.e.f"
    )
    assert redact(text) == text
    assert Redactor([])(text) == text


def test_whole_values_are_removed_whole_only() -> None:
    redact = Redactor([SECRET], whole=[f"Bearer {SECRET}"])
    assert redact(f"header was bearer {SECRET.lower()}!") == "header was ***!"
    assert redact("Bearer tokens are refused") == "Bearer tokens are refused"


def test_pieces_next_to_each_other_become_one_mask() -> None:
    redact = Redactor([SECRET, "another-long-secret"])
    assert redact(f"{SECRET}another-long-secret and {SECRET[:8]} {SECRET[-8:]}") == (
        "*** and *** ***"
    )
