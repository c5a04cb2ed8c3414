"""Bad input fuzzing: nothing a customer (or Telegram, or an upstream) sends makes us raise.

Property tests with hypothesis, bounded so the module runs in seconds:

- the planner turns any text (including lone surrogates, control characters, huge and
  full-width input) into a valid plan (1-4 steps of known tools whose args validate
  against the tools' own args models) or a clear refusal, and never raises;
- the callback-data parser accepts only canonical data and never raises on any object;
- the answer composer and the progress lines never raise on any run the models allow;
- `agent_core.http.map_response` (when present) never raises on any response.
"""

from __future__ import annotations

import json
import re
import string
from datetime import UTC, datetime
from typing import Any

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis is a dev dependency")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from agent_core.answers.compose import compose_answer, plan_text, step_progress  # noqa: E402
from agent_core.catalog.builtin import CATALOG  # noqa: E402
from agent_core.models import (  # noqa: E402
    Approval,
    ErrorType,
    Language,
    Pause,
    PlanStep,
    Run,
    RunStatus,
    StepError,
    StepStatus,
)
from agent_core.understanding.planner import (  # noqa: E402
    MAX_STEPS,
    PlanRequest,
    Refusal,
    RuleBasedPlanner,
    StepTag,
)
from bot.callbacks import (  # noqa: E402
    MAX_CALLBACK_BYTES,
    DecisionData,
    PageData,
    decision_data,
    page_data,
    parse_callback,
)
from storage.shop.tools import OrderArgs, PolicyArgs  # noqa: E402

FUZZ = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,  # the same examples on every run: CI never flakes on a new draw
    database=None,  # and nothing written into the work tree
)

# Every tool of the catalog (issue 12 added four); the planner may plan any of them.
ARGS_MODELS = {name: spec.args_model for name, spec in CATALOG.items()}
assert ARGS_MODELS["get_order_status"] is OrderArgs and ARGS_MODELS["search_policy"] is PolicyArgs
PLANNER = RuleBasedPlanner()

# Every character class, lone surrogates included (Telegram never sends those, but bytes
# decoded with surrogateescape do), weighted towards the characters the planner reads.
ANY_CHAR = st.characters(codec=None, categories=None)
KEYWORDS = [
    "where is my order", "cancel", "取消", "订单", "物流", "到哪了", "refund", "退货",
    "if it has not arrived", "如果还没送达", "延迟补偿", "compensation", "this order",
    "这单", "policy", "政策", "warranty", "保修", "售后", "A1001", "a1003", "Ｂ２００１",
    "Z9999", "A1001A1002", "\u200bA1001", "\x00", "\n", "，", "？", "ﷺ", "ß", "İ",
]  # fmt: skip
TEXT = st.one_of(
    st.text(ANY_CHAR, max_size=300),
    st.lists(st.one_of(st.sampled_from(KEYWORDS), st.text(ANY_CHAR, max_size=8)), max_size=25).map(
        " ".join
    ),
    st.binary(max_size=300).map(lambda b: b.decode("utf-8", errors="surrogateescape")),
    st.builds(lambda s, n: s * n, st.sampled_from(KEYWORDS), st.integers(1, 2000)),
)
ORDER_IDS = st.from_regex(r"[A-Za-z][0-9]{3,10}", fullmatch=True)


def assert_valid_plan(draft: Any) -> None:
    if draft.refusal is not None:
        assert isinstance(draft.refusal, Refusal)
        assert draft.steps == [], "a refusal runs nothing"
        return
    assert 1 <= len(draft.steps) <= MAX_STEPS
    for step in draft.steps:
        assert step.tool in ARGS_MODELS, step.tool
        ARGS_MODELS[step.tool].model_validate(step.args)  # raises if invalid
        assert isinstance(step.tag, StepTag)
        assert step.goal.strip()
    # a cancellation is always preceded by a look at the same order
    for n, step in enumerate(draft.steps):
        if step.tool == "cancel_order":
            before = [s.args.get("order_id") for s in draft.steps[:n]]
            assert step.args["order_id"] in before


@FUZZ
@given(
    text=TEXT,
    hint=st.one_of(
        st.none(), st.sampled_from(["zh", "zh-hans", "en", "", "-", "ZH_tw"]), st.text(max_size=12)
    ),
    last=st.one_of(st.none(), ORDER_IDS, st.just(""), st.just("  a1001 ")),
)
def test_planner_never_raises_and_plans_validly(
    text: str, hint: str | None, last: str | None
) -> None:
    draft = PLANNER.draft(PlanRequest(text=text, language_hint=hint, last_order_id=last))
    assert isinstance(draft.language, Language)
    assert_valid_plan(draft)


@FUZZ
@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(ANY_CHAR, max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
))  # fmt: skip
def test_planner_survives_any_json_as_text(value: Any) -> None:
    """What an adapter might pass through unchecked: JSON, serialised, as the text."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    assert_valid_plan(PLANNER.draft(PlanRequest(text=text)))


def test_planner_plans_stay_valid_for_a_long_lookalike_id() -> None:
    # Edge of the id pattern and of the args model: 1 letter + 10 digits, and 11 digits.
    assert_valid_plan(PLANNER.draft(PlanRequest(text="where is a1234567890")))
    assert_valid_plan(PLANNER.draft(PlanRequest(text="where is a12345678901")))


# -- callback data -------------------------------------------------------------------------

CALLBACK_ALPHABET = string.ascii_letters + string.digits + ":_-*\n\r \x00٣３é"
CALLBACK_TEXT = st.one_of(
    st.text(ANY_CHAR, max_size=80),
    st.text(st.sampled_from(CALLBACK_ALPHABET), max_size=70),
    st.builds(
        lambda verb, run, nonce, tail: f"sw:{verb}:{run}:{nonce}{tail}",
        st.sampled_from(["c", "x", "p", "C", ""]),
        st.text(st.sampled_from("0123456789abcdefABCDEF٣"), max_size=34),
        st.text(st.sampled_from(string.ascii_letters + string.digits + "_-=+/"), max_size=26),
        st.sampled_from(["", "\n", " ", ":", "\x00"]),
    ),
    st.builds(
        lambda status, offset, tail: f"sw:p:{status}:{offset}{tail}",
        st.sampled_from(["*", "paused", "failed", "bogus", "PAUSED", ""]),
        st.one_of(st.integers(-5, 10**8).map(str), st.sampled_from(["٣", "３", "1e3", ""])),
        st.sampled_from(["", "\n", " "]),
    ),
)
ANY_OBJECT = st.one_of(
    CALLBACK_TEXT,
    st.binary(max_size=70),
    st.none(),
    st.integers(),
    st.floats(),
    st.lists(st.text(max_size=5), max_size=3),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
)


@FUZZ
@given(ANY_OBJECT)
def test_callback_parser_never_raises_and_accepts_only_canonical_data(data: object) -> None:
    parsed = parse_callback(data)
    if parsed is None:
        return
    assert isinstance(data, str) and len(data.encode()) <= MAX_CALLBACK_BYTES
    if isinstance(parsed, DecisionData):
        # What we accept is exactly what we would have sent: no trailing newline, no
        # lookalike digits, nothing a forger could vary to probe the store.
        assert decision_data(parsed.run_id, parsed.nonce, parsed.approved) == data
    else:
        assert isinstance(parsed, PageData) and parsed.offset >= 0
        # Leading zeros are harmless; other digits, spaces or a newline are not ours.
        assert re.fullmatch(r"sw:p:(\*|[a-z]+):[0-9]+", data), data
        assert parse_callback(page_data(parsed.status, parsed.offset)) == parsed


@FUZZ
@given(
    run_id=st.text(st.sampled_from("0123456789abcdef"), min_size=6, max_size=32),
    nonce=st.text(
        st.sampled_from(string.ascii_letters + string.digits + "_-"), min_size=4, max_size=24
    ),
    approved=st.booleans(),
)
def test_callback_data_round_trips(run_id: str, nonce: str, approved: bool) -> None:
    try:
        data = decision_data(run_id, nonce, approved)
    except ValueError:
        return  # too long for Telegram: refused when building, never sent
    assert parse_callback(data) == DecisionData(run_id, nonce, approved)


# -- answers on arbitrary runs ---------------------------------------------------------------

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(ANY_CHAR, max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["status", "order_id", "eta", "title", "text", "results", "x"]) | st.text(max_size=6),
        inner,
        max_size=5,
    ),
    max_leaves=15,
)  # fmt: skip
TOOLS = st.sampled_from(["get_order_status", "search_policy", "cancel_order", "unknown_tool", ""])
WHEN = st.just(datetime(2026, 1, 1, tzinfo=UTC))


@st.composite
def steps(draw: Any, n: int, chars: Any) -> PlanStep:
    status = draw(st.sampled_from(list(StepStatus)))
    return PlanStep(
        id=f"s{n}",
        goal=draw(st.text(chars, max_size=40)),
        tool=draw(TOOLS),
        args=draw(st.dictionaries(st.sampled_from(["order_id", "query", "lang", "x"]), JSONISH, max_size=3)),
        tag=draw(st.one_of(st.none(), st.sampled_from(list(StepTag)))),
        status=status,
        observation=draw(JSONISH),
        error=draw(st.one_of(st.none(), st.builds(StepError, type=st.sampled_from(list(ErrorType)), message=st.text(chars, max_size=20)))),
        skip_reason=draw(st.one_of(st.none(), st.text(chars, max_size=20))),
        fallback_reason=draw(st.one_of(st.none(), st.text(max_size=20))),
        retry_count=draw(st.integers(0, 50)),
        max_retries=draw(st.integers(0, 50)),
        approval=draw(st.one_of(st.none(), st.builds(Approval, approved=st.booleans(), by_user_id=st.integers(), at=WHEN))),
    )  # fmt: skip


@st.composite
def runs(draw: Any, chars: Any = ANY_CHAR) -> Run:
    n = draw(st.integers(0, 6))
    plan = [draw(steps(i + 1, chars)) for i in range(n)]
    pause = None
    if plan and draw(st.booleans()):
        pause = Pause(
            step_id=plan[-1].id,
            nonce=draw(st.one_of(st.none(), st.text(max_size=10))),
            tool=plan[-1].tool,
            args_hash="x",
            paused_at=datetime(2026, 1, 1, tzinfo=UTC),
        )
    return Run(
        id="r1",
        trace_id="t1",
        user_id=draw(st.integers()),
        chat_id=draw(st.integers()),
        request_text=draw(st.text(chars, max_size=50)),
        language=draw(st.sampled_from(list(Language))),
        status=draw(st.sampled_from(list(RunStatus))),
        steps=plan,
        refusal=draw(st.one_of(st.none(), st.sampled_from([r.value for r in Refusal]), st.text(max_size=8))),
        pause=pause,
        stop_reason=draw(st.one_of(st.none(), st.sampled_from(["max_steps", *[e.value for e in ErrorType]]), st.text(max_size=8))),
    )  # fmt: skip


@FUZZ
@given(runs())
def test_answers_never_raise_on_any_run(run: Run) -> None:
    answer = compose_answer(run)
    assert isinstance(answer, str)
    if run.refusal is None and run.steps and run.is_terminal:
        assert answer.strip(), "a finished run with steps always says something"
    assert isinstance(plan_text(run), str)
    for step in run.steps:
        assert step_progress(step, run).strip()


# -- the HTTP tools' response mapping (written in parallel; fuzzed when it exists) ----------


@FUZZ
@given(
    status=st.one_of(st.integers(100, 599), st.integers(-10, 10**6)),
    headers=st.dictionaries(
        st.sampled_from(["Retry-After", "retry-after", "Content-Type", "X"]) | st.text(max_size=10),
        st.one_of(
            st.text(ANY_CHAR, max_size=40),
            st.integers(-(10**12), 10**12).map(str),
            st.sampled_from(["Wed, 21 Oct 2015 07:28:00 GMT", "1e309", "nan", "-1", "inf", ""]),
        ),
        max_size=4,
    ),
    body=st.one_of(
        st.binary(max_size=200),
        JSONISH.map(lambda v: json.dumps(v).encode()),
        st.builds(lambda n: b"[" * n + b"]" * n, st.integers(0, 5000)),
    ),
    tool=st.one_of(st.none(), TOOLS, st.text(max_size=10)),
)
def test_http_map_response_never_raises(
    status: int, headers: dict[str, str], body: bytes, tool: str | None
) -> None:
    http_tools = pytest.importorskip("agent_core.http")
    map_response = getattr(http_tools, "map_response", None)
    if map_response is None:
        pytest.skip("agent_core.http.map_response does not exist yet")
    outcome = map_response(status, headers, body, tool=tool)
    assert outcome.ok == (outcome.error_type is None)
    if outcome.error_type is not None:
        assert isinstance(outcome.error_type, ErrorType) and isinstance(outcome.message, str)
