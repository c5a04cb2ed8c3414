"""The handoff's decisions as pure functions (issue 14): what the start-up check reports,
which staff-group messages reach a customer, which answers offer a person, the topic's
name and header, and the buttons' data."""

from __future__ import annotations

import html
from datetime import UTC, date, datetime

import pytest

from agent_core.interpretation import Handoff as HandoffIntent
from agent_core.interpretation import Interpretation
from agent_core.models import (
    ErrorType,
    Language,
    PlanStep,
    Run,
    RunStatus,
    StepError,
    StepStatus,
    StepTag,
)
from bot.callbacks import (
    CloseHandoffData,
    DecisionData,
    PersonData,
    close_handoff_data,
    parse_callback,
    person_data,
    reason_data,
)
from bot.handlers import opened_text
from bot.handoff import (
    EDIT_MARK,
    TOPIC_NAME_LIMIT,
    Customer,
    Ignore,
    Opened,
    StaffChatFacts,
    StaffMessage,
    handoff_is_private,
    header_text,
    is_handoff_request,
    marked_parts,
    offers_person,
    private_handoff_link,
    relay_variant,
    staff_chat_problem,
    staff_relay_decision,
    start_handoff_run,
    topic_name,
)
from bot.slash import read_slash
from bot.staff import format_handoff_stats
from bot.texts import TEXTS
from bot.textsplit import visible_units
from storage.handoffs import Handoff, Trigger
from storage.history import HandoffDay

STAFF_CHAT = -1001
BOT = 42
STAFF = frozenset({900, 901})


def run(status: RunStatus = RunStatus.COMPLETED, **fields: object) -> Run:
    base: dict[str, object] = {
        "id": "abc123",
        "trace_id": "t",
        "user_id": 10001,
        "chat_id": 10001,
        "request_text": "where is A1001",
        "language": Language.EN,
        "status": status,
    }
    base.update(fields)
    return Run.model_validate(base)


def step(status: StepStatus, **fields: object) -> PlanStep:
    base: dict[str, object] = {
        "id": "s1",
        "goal": "Check the status of order A1001",
        "tool": "get_order_status",
        "args": {"order_id": "A1001"},
        "tag": StepTag.ORDER_STATUS,
        "status": status,
        "max_retries": 2,
    }
    base.update(fields)
    return PlanStep.model_validate(base)


# -- the start-up check ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("chat_id", "facts", "expected"),
    [
        (None, None, "STEPWISE_STAFF_CHAT_ID is not set"),
        (STAFF_CHAT, StaffChatFacts(found=False, error="chat not found"), "not reachable"),
        (STAFF_CHAT, StaffChatFacts(found=True, is_forum=False), "enable Topics"),
        (
            STAFF_CHAT,
            StaffChatFacts(found=True, is_forum=True, bot_status="member"),
            "not an admin",
        ),
        (
            STAFF_CHAT,
            StaffChatFacts(found=True, is_forum=True, bot_status="administrator"),
            "Manage Topics right",
        ),
    ],
)
def test_staff_chat_problem_names_the_one_thing_wrong(
    chat_id: int | None, facts: StaffChatFacts | None, expected: str
) -> None:
    problem = staff_chat_problem(chat_id, facts)
    assert problem is not None and expected in problem and "\n" not in problem


def test_a_forum_where_the_bot_manages_topics_is_fine() -> None:
    facts = StaffChatFacts(
        found=True, is_forum=True, bot_status="administrator", can_manage_topics=True
    )
    assert staff_chat_problem(STAFF_CHAT, facts) is None
    nobody = staff_chat_problem(STAFF_CHAT, facts, has_staff=False)
    assert nobody is not None and "STEPWISE_STAFF_IDS is empty" in nobody


# -- who may relay -----------------------------------------------------------------------


def staff_message(**fields: object) -> StaffMessage:
    base: dict[str, object] = {
        "chat_id": STAFF_CHAT,
        "thread_id": 7,
        "sender_id": 900,
        "sender_is_bot": False,
        "is_service": False,
        "is_command": False,
    }
    base.update(fields)
    return StaffMessage(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, None),
        ({"chat_id": -2002}, Ignore.OTHER_CHAT),
        ({"is_service": True}, Ignore.SERVICE),
        ({"sender_id": BOT, "sender_is_bot": True}, Ignore.OWN),
        ({"sender_id": 77, "sender_is_bot": True}, Ignore.BOT),
        ({"sender_id": 555}, Ignore.NOT_STAFF),
        ({"sender_id": None}, Ignore.NOT_STAFF),
        ({"thread_id": None}, Ignore.NO_TOPIC),
        ({"is_command": True}, Ignore.COMMAND),
    ],
)
def test_staff_relay_decision(fields: dict[str, object], expected: Ignore | None) -> None:
    decision = staff_relay_decision(
        staff_message(**fields), staff_chat_id=STAFF_CHAT, staff_ids=STAFF, bot_id=BOT
    )
    assert decision is expected


def test_nothing_is_relayed_without_a_staff_chat() -> None:
    decision = staff_relay_decision(
        staff_message(), staff_chat_id=None, staff_ids=STAFF, bot_id=BOT
    )
    assert decision is Ignore.OTHER_CHAT


# -- which answers offer a person ----------------------------------------------------------


def test_offers_person_on_stop_fallback_unsupported_and_second_clarification() -> None:
    assert offers_person(run(RunStatus.FAILED), None)
    assert offers_person(run(steps=[step(StepStatus.FALLBACK)]), None)
    assert offers_person(run(refusal="unsupported"), None)
    flagged = Interpretation.model_validate({"unsupported": ["a warranty claim"]})
    assert offers_person(run(interpretation=flagged), None)
    asked = run(RunStatus.NEEDS_CLARIFICATION)
    assert offers_person(asked, RunStatus.NEEDS_CLARIFICATION)


def test_no_person_button_on_clean_answers_pauses_first_questions_and_handoffs() -> None:
    assert not offers_person(run(steps=[step(StepStatus.DONE)]), None)
    assert not offers_person(run(RunStatus.PAUSED), None)
    assert not offers_person(run(RunStatus.NEEDS_CLARIFICATION), RunStatus.COMPLETED)
    assert not offers_person(run(RunStatus.NEEDS_CLARIFICATION), None)
    assert not offers_person(run(RunStatus.FAILED, refusal="handoff"), None)


def test_handoff_request_by_refusal_or_interpretation() -> None:
    assert is_handoff_request(run(refusal="handoff"))
    interp = Interpretation(handoff=HandoffIntent(reason="wants a person"))
    assert is_handoff_request(run(interpretation=interp))
    assert not is_handoff_request(run(refusal="unsupported"))


# -- topic and header --------------------------------------------------------------------


def test_topic_name_keeps_the_id_within_telegrams_limit() -> None:
    assert topic_name("Ada  Lovelace", 10001) == "Ada Lovelace · 10001"
    assert topic_name("   ", 5) == "customer · 5"
    long = topic_name("x" * 300, 123456789)
    assert len(long) == TOPIC_NAME_LIMIT and long.endswith("… · 123456789")


def test_header_shows_customer_request_plan_with_reasons_and_run_link() -> None:
    failed = step(
        StepStatus.FAILED,
        error=StepError(type=ErrorType.NOT_FOUND, message="no order Z9"),
    )
    skipped = step(StepStatus.SKIPPED, id="s2", goal="Look up compensation", skip_reason="arrived")
    the_run = run(RunStatus.FAILED, steps=[failed, skipped], request_text="where is <Z9>")
    handoff = Handoff(
        id="h1",
        customer_chat_id=10001,
        customer_user_id=10001,
        customer_name="Ada & co",
        language="en",
        trigger=Trigger.BUTTON,
        run_id=the_run.id,
        opened_at=datetime(2026, 12, 1, 9, 30, tzinfo=UTC),
    )
    text = header_text(handoff, the_run, "https://staff.example/")
    assert "Ada &amp; co" in text and "<code>10001</code>" in text and "language en" in text
    assert "where is &lt;Z9&gt;" in text
    assert "1. " in text and "reason: not_found: no order Z9" in text
    assert "2. " in text and "reason: arrived" in text
    assert '<a href="https://staff.example/runs/abc123">abc123</a>' in text
    without = header_text(handoff, the_run, None)
    assert "/run abc123" in without and "href" not in without
    assert "No run" in header_text(handoff, None, None)


# -- buttons and replies -----------------------------------------------------------------


def test_person_and_close_buttons_round_trip_and_reject_junk() -> None:
    assert parse_callback(person_data("abc123")) == PersonData("abc123")
    assert parse_callback(close_handoff_data("0a1b2c3d4e5f")) == CloseHandoffData("0a1b2c3d4e5f")
    for junk in ("sw:h:XYZ", "sw:hc:", "sw:h:abc123\n", "sw:hc:abc123:1"):
        assert parse_callback(junk) is None
    with pytest.raises(ValueError):
        person_data("not hex!")
    assert parse_callback(reason_data("abc123", "n0nce_x", "d")) == DecisionData(
        "abc123", "n0nce_x", approved=False, reason="d"
    )
    assert parse_callback("sw:r:abc123:n0nce_x:z") is None


def test_the_customer_is_told_the_truth_about_who_replies() -> None:
    h = Handoff("h", 1, 1, "A", "zh", Trigger.INTENT, None, datetime(2026, 1, 1, tzinfo=UTC))
    assert (
        opened_text(Opened(h, True, staffed=False), Language.ZH)
        == TEXTS["handoff_unstaffed"][Language.ZH]
    )
    assert (
        opened_text(Opened(h, True, staffed=True), Language.EN)
        == TEXTS["handoff_opened"][Language.EN]
    )
    assert (
        opened_text(Opened(h, False, staffed=True), Language.EN)
        == TEXTS["handoff_already"][Language.EN]
    )


def test_handoff_stats_lines() -> None:
    days = [HandoffDay(date(2026, 12, 1), 3), HandoffDay(date(2026, 12, 2), 1)]
    text = format_handoff_stats(days, 125.4)
    assert "2026-12-01: 3" in text and "2026-12-02: 1" in text
    assert text.endswith("median time to first staff reply: 2 min 5 s")
    assert format_handoff_stats([], None).splitlines()[1:] == [
        "none",
        "median time to first staff reply: no staff reply yet",
    ]
    assert format_handoff_stats(days, 3 * 3600 + 120).endswith("3 h 2 min")


def test_every_handoff_text_has_both_languages() -> None:
    keys = [k for k in TEXTS if "handoff" in k or "person" in k or k == "command_human"]
    assert len(keys) >= 8
    for key in keys:
        assert set(TEXTS[key]) == {Language.ZH, Language.EN}, key


def test_each_edit_is_its_own_relay_keyed_by_its_update() -> None:
    assert relay_variant(False, 0) == 0 == relay_variant(False, 77)  # the message as sent
    assert relay_variant(True, 77) != relay_variant(True, 78)  # two edits, however close
    with pytest.raises(ValueError):
        relay_variant(True, 0)  # an edit without its update has no key


def test_an_edit_too_long_with_its_mark_is_split_into_marked_parts() -> None:
    short = EDIT_MARK + "edited: fine"
    assert marked_parts(short) == [(short, None)]  # as before: one plain message
    body = "\n".join(f"{n:04d} <tag> & more" for n in range(300))  # 5,399 units
    parts = marked_parts(EDIT_MARK + "edited: " + body)
    assert [p[1] for p in parts] == ["HTML", "HTML"]
    assert parts[0][0].startswith("✏️ (1/2) edited: 0000 &lt;tag&gt; &amp; more")
    assert parts[1][0].startswith("✏️ (2/2) ")
    assert all(visible_units(text) <= 4096 for text, _ in parts)
    shown = [html.unescape(text.split(") ", 1)[1]) for text, _ in parts]
    assert "\n".join(shown) == "edited: " + body  # nothing lost, in order


@pytest.mark.parametrize(
    ("text", "units", "expected"),
    [
        ("/cancel order P0002", 7, ("/cancel", "order P0002", False, False, "cancel order P0002")),
        ("/settings", 9, ("/settings", "", False, False, "")),
        ("/settings@Stepwise_Bot", 22, ("/settings", "", True, False, "")),
        ("/start@other_bot", 16, ("/start", "", False, True, "")),
        (
            "/refund  59 for A1002 😀",
            7,
            ("/refund", "59 for A1002 😀", False, False, "refund 59 for A1002 😀"),
        ),
    ],
)
def test_a_leading_slash_word_is_read_as_telegram_marked_it(
    text: str, units: int, expected: tuple[str, str, bool, bool, str]
) -> None:
    slash = read_slash(text, units, "stepwise_bot")
    assert (slash.command, slash.rest, slash.addressed, slash.other_bot, slash.request) == expected


def test_handoffs_are_private_and_a_group_gets_a_link_to_the_private_chat() -> None:
    assert handoff_is_private(Customer(10001, 10001, "Ada", Language.EN))
    assert not handoff_is_private(Customer(-4001, 10001, "Ada", Language.EN, private=False))
    assert private_handoff_link("stepwise_bot", None) == "https://t.me/stepwise_bot?start=human"
    link = private_handoff_link("stepwise_bot", "0a1b2c3d4e5f")
    assert link == "https://t.me/stepwise_bot?start=human-0a1b2c3d4e5f"
    payload = link.split("start=")[1]
    assert len(payload) <= 64 and payload.replace("-", "").isalnum()  # Telegram's rule
    assert start_handoff_run([payload]) == (True, "0a1b2c3d4e5f")
    assert start_handoff_run(["human"]) == (True, None)
    assert start_handoff_run([]) == (False, None)
    assert start_handoff_run(["promo-5"]) == (False, None)
