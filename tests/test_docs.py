"""The README and the docs/ pages name only buttons and links that exist (issue 34 item 5).

* **Buttons.** A button label is quoted in bold mid-sentence ("press **Yes, cancel A1003**
  or **No, keep it**"). Every such bold text must be a label the bot really shows: a tool's
  approve/decline label from the catalog (its placeholders standing for an argument, so
  "Yes, cancel {order_id}" is **Yes, cancel A1003** and never **Yes, cancel order A1003**),
  a text of `bot.texts.TEXTS`, a choice button of the declared intents, or a label the bot's
  code writes itself (`InlineKeyboardButton("Approve", …)`, the reject reasons). Bold at the
  start of a paragraph or a list item, or followed by ":", is the paragraph's lead-in, and
  lower-case bold is emphasis: neither is a label. The few capitalised bold words that are
  another program's buttons (Telegram's own settings, the demo page's tabs) are listed in
  `NOT_THE_BOTS` with where they are.
* **Links.** Every relative link resolves to a file of the repository, and a link to a
  heading (`docs/operating.md#settings`, `#human-handoff`) to a heading of that page, by
  GitHub's anchor rules.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_core.catalog.builtin import CATALOG
from agent_core.catalog.spec import GENERIC_APPROVE, GENERIC_DECLINE, Texts
from agent_core.understanding.recognition.intents import load as load_intents
from bot.handoff import REASON_LABELS
from bot.texts import TEXTS
from stepwise.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# Capitalised bold words quoted mid-sentence that are buttons of another program, not the bot.
NOT_THE_BOTS = {
    "Topics": "Telegram's group setting that makes a forum (docs/staff.md)",
    "Manage Topics": "Telegram's administrator right (docs/staff.md)",
    "Chat": "a tab of the demo's chat page on a phone (standin/)",
    "Staff group": "a tab of the demo's chat page on a phone (standin/)",
}


# -- what the bot's buttons say -----------------------------------------------------------------


def _template(text: str, values: dict[str, str]) -> re.Pattern[str]:
    """A label template as a pattern: `{name}` is `values[name]` or any one word."""
    parts = re.split(r"\{(\w+)\}", text)
    pattern = "".join(
        re.escape(part) if i % 2 == 0 else values.get(part, r"[^\s,]+")
        for i, part in enumerate(parts)
    )
    return re.compile(pattern)


def _both(texts: Texts) -> list[str]:
    return [texts.en, texts.zh]


def _catalog_labels() -> Iterator[re.Pattern[str]]:
    order_id = f"(?i:{Settings.model_fields['order_pattern'].default})"
    for spec in CATALOG.values():
        goals = [goal[0].lower() + goal[1:] for goal in _both(spec.goal)]
        for label, generic in (
            (spec.approve_label, GENERIC_APPROVE),
            (spec.decline_label, GENERIC_DECLINE),
        ):
            for text in _both(label):
                if label == generic:  # labelled from the step's goal
                    for goal in goals:
                        goal_pattern = _template(goal, {"order_id": order_id}).pattern
                        yield _template(text, {"goal": goal_pattern})
                else:
                    yield _template(text, {"order_id": order_id})


def _literal_button_labels() -> Iterator[str]:
    """The labels the bot's code writes itself: `InlineKeyboardButton("Close", …)`."""
    for module in sorted((ROOT / "bot").glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None))
                == "InlineKeyboardButton"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                yield node.args[0].value


def button_labels() -> tuple[set[str], list[re.Pattern[str]]]:
    """(exact labels, label templates) of every button the bot can show."""
    exact = {text for by_language in TEXTS.values() for text in by_language.values()}
    exact |= set(REASON_LABELS.values())
    exact |= set(_literal_button_labels())
    exact |= {text for intent in load_intents() if intent.label for text in _both(intent.label)}
    return exact, list(_catalog_labels())


def is_a_button(text: str) -> bool:
    exact, templates = button_labels()
    return text in exact or any(t.fullmatch(text) for t in templates)


# -- what the pages quote in bold ---------------------------------------------------------------

BOLD = re.compile(r"\*\*(.+?)\*\*", re.S)
LIST_ITEM = re.compile(r"(?:^|\n)[ \t]*(?:[-*]|\d+\.)[ \t]+$")
FENCED = re.compile(r"^[ \t]*```.*?^[ \t]*```[ \t]*$", re.M | re.S)


def quoted_labels(text: str) -> list[str]:
    """The bold texts quoted mid-sentence that read as a button's label."""
    text = FENCED.sub("\n", text)  # code is not prose
    found = []
    for match in BOLD.finditer(text):
        if "\n\n" in match[1]:
            continue  # not one bold text: a stray "**"
        bold = " ".join(match[1].split())
        before = text[: match.start()]
        if before == "" or before.endswith("\n\n") or LIST_ITEM.search(before):
            continue  # a paragraph's or a list item's lead-in ("**Stopping.**", "- **Text**")
        if text[match.end() : match.end() + 1] == ":" or bold.endswith((".", ":")):
            continue  # a lead-in inside a paragraph ("**Shopify**: …")
        if not bold[:1].isupper() or "`" in bold or "/" in bold:
            continue  # emphasis ("**not**", "**real bot**"), a command or a path
        found.append(bold)
    return found


def test_the_reader_sees_labels_not_lead_ins() -> None:
    page = (
        "**Stopping.** On SIGTERM it stops.\n\n- **Statuses**: `processing` is paid.\n"
        "1. **Read** (`reading`): text.\n\nPress **Yes, cancel\nA1003** or **No, keep it**;\n"
        "**Approve** / **Reject** appear; this is **not** a label, **Shopify**: neither.\n"
    )
    assert quoted_labels(page) == ["Yes, cancel A1003", "No, keep it", "Approve", "Reject"]


def test_the_catalog_of_labels() -> None:
    assert is_a_button("Yes, cancel A1003") and is_a_button("No, keep it")
    assert not is_a_button("Yes, cancel order A1003")  # the README's old, wrong label
    assert is_a_button("Approve") and is_a_button("Close") and is_a_button("Talk to a person")
    assert is_a_button("Track an order")  # a choice button of the declared intents
    assert not is_a_button("Confirm")


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_button_the_page_quotes_exists(page: Path) -> None:
    quoted = quoted_labels(page.read_text(encoding="utf-8"))
    missing = sorted(
        {label for label in quoted if label not in NOT_THE_BOTS and not is_a_button(label)}
    )
    assert not missing, (
        f"{page.relative_to(ROOT)} quotes in bold buttons the bot never shows: {missing} "
        "(write the label as bot/texts.py or the catalog says; another program's button "
        "goes in NOT_THE_BOTS)"
    )


def test_the_pages_quote_the_confirm_buttons() -> None:
    quoted = {label for page in PAGES for label in quoted_labels(page.read_text())}
    assert {"Yes, cancel A1003", "No, keep it"} <= quoted  # the check is not vacuous


def test_every_exception_is_still_quoted() -> None:
    quoted = {label for page in PAGES for label in quoted_labels(page.read_text())}
    assert set(NOT_THE_BOTS) <= quoted, set(NOT_THE_BOTS) - quoted


# -- links --------------------------------------------------------------------------------------

LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation gone, spaces made hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {anchor(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def test_the_anchor_rules() -> None:
    assert anchor("Running several processes / PostgreSQL") == (
        "running-several-processes--postgresql"
    )
    assert anchor("`stepwise eval`") == "stepwise-eval"
    assert anchor("The demo shop (default tool backend)") == "the-demo-shop-default-tool-backend"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_link_of_the_page_resolves(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, heading = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif heading and resolved.suffix == ".md" and heading not in anchors(resolved):
            broken.append(f"{target}: no such heading")
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"
