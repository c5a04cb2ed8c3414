"""How runs, steps and events map to rows: one column list per table, rows as dicts.

Every row is a `dict[str, Any]` keyed by column name, in both directions (model → row for
writes, row → model for reads, where rows are read by name), and every write statement is
built from a column list and bound to its row by name (`Statement.bind`). Column order is
therefore written once, in the lists below, and reordering one cannot put a value into
the wrong column.

Timestamps are stored as fixed-width UTC text (`ts`), so text order is time order in the
indexes.

One idea (the schema's columns and their mapping to the models, both ways); it is long
because runs, steps and events each have a column list, a writer and a reader here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from operator import itemgetter
from typing import Any, Protocol

from agent_core.interpretation import Interpretation
from agent_core.models import (
    Approval,
    EventKind,
    Language,
    Pause,
    PlanStep,
    PromptRef,
    Run,
    RunEvent,
    RunStatus,
    StepError,
    StepStatus,
)
from agent_core.understanding.order_facts import ObservedStep
from storage.records import RunSummary, TimelineEntry

Row = dict[str, Any]  # column name -> value, as written

# -- columns -----------------------------------------------------------------------------

# What a run is (written once, with the plan; `status` changes through its own statement).
RUN_FIXED_COLUMNS = (
    "id",
    "trace_id",
    "user_id",
    "chat_id",
    "request_text",
    "language",
    "status",
    "refusal",
    "max_attempts",
    "created_at",
    "interpretation",
    "unsupported",
    "clarify_nonce",
)
# What a transition after `run_planned` can change.
RUN_STATE_COLUMNS = (
    "pause_step_id",
    "pause_nonce",
    "pause_tool",
    "pause_args_hash",
    "paused_at",
    "pause_approver",
    "attempts",
    "stop_reason",
    "answer",
    "updated_at",
    "finished_at",
)
RUN_COLUMNS = RUN_FIXED_COLUMNS + RUN_STATE_COLUMNS
# Written only when a pause's prompt is delivered (`bind_prompt`), never by a transition:
# the executor's copy of a run does not know which message shows its buttons.
RUN_PROMPT_COLUMNS = ("prompt_chat_id", "prompt_message_id")
RUN_READ_COLUMNS = RUN_COLUMNS + RUN_PROMPT_COLUMNS

# What a step is (written once, with the plan) and then what it has become.
STEP_FIXED_COLUMNS = (
    "run_id",
    "position",
    "id",
    "goal",
    "tool",
    "args",
    "tag",
    "max_retries",
    "depends_on",
)
STEP_STATE_COLUMNS = (
    "status",
    "observation",
    "error_type",
    "error_message",
    "error_code",
    "skip_reason",
    "fallback_reason",
    "pause_reason",
    "retry_count",
    "approval_approved",
    "approval_by",
    "approval_at",
    "started_at",
    "finished_at",
)
STEP_COLUMNS = STEP_FIXED_COLUMNS + STEP_STATE_COLUMNS

# `seq` is assigned by SQLite (INTEGER PRIMARY KEY); everything else is written.
EVENT_COLUMNS = (
    "run_id",
    "trace_id",
    "kind",
    "step_id",
    "tool",
    "args",
    "attempt",
    "status",
    "error_type",
    "decision",
    "delay_s",
    "observation",
    "message",
    "at",
)
TIMELINE_COLUMNS = ("seq", *(c for c in EVENT_COLUMNS if c not in ("run_id", "trace_id")))

# A runs row (alias `r`) with its step count and total retries: every runs list reads this.
SUMMARY_SELECT = (
    "r.id, r.trace_id, r.user_id, r.chat_id, r.request_text, r.language, r.status,"
    " r.created_at, r.updated_at, r.finished_at, r.unsupported,"
    " (SELECT count(*) FROM steps s WHERE s.run_id = r.id) AS step_count,"
    " (SELECT coalesce(sum(s.retry_count), 0) FROM steps s WHERE s.run_id = r.id) AS retries,"
    # The runs list badges a run a person took over (one probe of handoffs_by_run a row).
    " EXISTS (SELECT 1 FROM handoffs h WHERE h.run_id = r.id) AS handed_off"
)


# -- statements --------------------------------------------------------------------------


def columns(names: Iterable[str], prefix: str = "") -> str:
    """`a, b, c` (with `prefix`: `r.a, r.b, r.c`) for a SELECT list."""
    return ", ".join(f"{prefix}{name}" for name in names)


@dataclass(frozen=True)
class Statement:
    """A write built from a column list, bound to a row dict by column name.

    The SQL is generated with `?` placeholders from `names`, and `bind` picks the values
    out of the row by the same `names`, so the order exists only here, generated from one
    list: a missing column is a KeyError, never a shifted value. (SQLite's own `:name`
    binding does the same lookup in C, but about twice as slowly per statement, which the
    journal's hot path would feel; hand-written statements elsewhere use `:name`.)
    """

    sql: str
    names: tuple[str, ...]
    _values: Callable[[Row], tuple[Any, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.names) < 2:  # itemgetter of one name returns the value, not a tuple
            raise ValueError("a Statement binds two or more columns")
        object.__setattr__(self, "_values", itemgetter(*self.names))

    def bind(self, row: Row) -> tuple[str, tuple[Any, ...]]:
        """The statement and its parameters from `row` (extra keys are ignored)."""
        return self.sql, self._values(row)


# NULLs written as literals (SQLite): sqlite3 adapts every parameter that is not exactly
# int, float, str or bytearray, and a None costs it ~1.2 k instructions even with the
# None adapter of `storage.db` (a key tuple built, a dict lookup, a call); most columns of
# a step or event row are NULL (~210 parameters a standard run). A `NullsInline` statement
# writes `NULL` in the SQL where the row's value is None and binds only the others: one
# variant of the SQL per pattern of NULLs, made once (a run's rows repeat a few dozen
# patterns; sqlite3's statement cache keeps them prepared). `x = NULL` and `x = ?` bound
# to NULL are the same expression, so every statement's effect is the same.
# The key of a pattern is the values' types (`map(type, …)`, the cheapest exact test a C loop
# makes: ~0.24 k instructions a value, against ~1.2 k for binding a None).
_NONE_TYPE = type(None)
_VARIANTS_KEPT = 64  # per statement; past it, new patterns are bound as plain parameters


def _picker(kept: Sequence[int]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    if len(kept) >= 2:
        return itemgetter(*kept)
    if kept:
        only = kept[0]
        return lambda values: (values[only],)
    return lambda values: ()


@dataclass(frozen=True)
class NullsInline(Statement):
    """A `Statement` whose None values are written into the SQL as `NULL`, not bound."""

    _parts: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _variants: dict[tuple[type, ...], tuple[str, Callable[[tuple[Any, ...]], tuple[Any, ...]]]] = (
        field(init=False, repr=False, compare=False)
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        parts = tuple(self.sql.split("?"))
        if len(parts) != len(self.names) + 1:
            raise ValueError("NullsInline needs exactly one `?` per name and no other `?`")
        object.__setattr__(self, "_parts", parts)
        object.__setattr__(self, "_variants", {})

    def bind(self, row: Row) -> tuple[str, tuple[Any, ...]]:
        """The SQL with `NULL` for the row's None values, and the other values."""
        values = self._values(row)
        types = tuple(map(type, values))
        variant = self._variants.get(types)
        if variant is None:
            if len(self._variants) >= _VARIANTS_KEPT:
                return self.sql, values
            variant = self._variants[types] = self._variant(types)
        sql, pick = variant
        return sql, pick(values)

    def _variant(
        self, types: tuple[type, ...]
    ) -> tuple[str, Callable[[tuple[Any, ...]], tuple[Any, ...]]]:
        parts = self._parts
        nulls = [t is _NONE_TYPE for t in types]
        sql = parts[0] + "".join(
            ("NULL" if null else "?") + part for null, part in zip(nulls, parts[1:], strict=True)
        )
        return sql, _picker([i for i, null in enumerate(nulls) if not null])


def nulls_inline(statement: Statement) -> NullsInline:
    """`statement` with its None values written as `NULL` literals (SQLite's spelling)."""
    return NullsInline(statement.sql, statement.names)


def insert(table: str, names: Sequence[str]) -> Statement:
    sql = f"INSERT INTO {table} ({columns(names)}) VALUES ({', '.join('?' * len(names))})"
    return Statement(sql, tuple(names))


def upsert(table: str, names: Sequence[str], key: Sequence[str]) -> Statement:
    """Insert, or update every non-key column of the existing row.

    An upsert, not INSERT OR REPLACE: REPLACE deletes first, which would cascade to children.
    """
    updates = ", ".join(f"{c} = excluded.{c}" for c in names if c not in key)
    plain = insert(table, names)
    return Statement(
        f"{plain.sql} ON CONFLICT({columns(key)}) DO UPDATE SET {updates}", plain.names
    )


def update(table: str, names: Sequence[str], key: Sequence[str]) -> Statement:
    """Set `names` on the row whose `key` columns equal the row's values of the same name."""
    sets = ", ".join(f"{c} = ?" for c in names)
    where = " AND ".join(f"{k} = ?" for k in key)
    return Statement(f"UPDATE {table} SET {sets} WHERE {where}", (*names, *key))


# -- values ------------------------------------------------------------------------------

# `2026-11-30T08:19:00.123456Z`: fixed width, so text order is time order in indexes.
_TS_LEN = 27


def ts(value: datetime | None) -> str | None:
    """Fixed-width UTC timestamps, so text order is time order in indexes."""
    if value is None:
        return None
    known = _RECENT.get(id(value))
    if known is not None and known[0] is value:
        return known[1]
    return _remember(value, _format(value))


# The instants written lately, by identity: a transition's `now` is the run's `updated_at`,
# the event's `at` and often a step's `started_at` or `finished_at` in the same commit, and
# a run read back (`parse_ts`) writes its steps' instants again when it ends. An entry
# holds its datetime, so its `id` is not reused while it is here; cleared when full.
# Sized for many runs at a time: ~18 instants a run, so 256 held under 15 runs' worth and
# 50 concurrent runs cleared it before their instants came round again (2048: ~0.4 MB).
# (An `lru_cache` keyed by the datetime cost more: hashing an aware datetime, and a miss,
# most of a run's instants, paid the cache's bookkeeping and an eviction on top.)
_RECENT: dict[int, tuple[datetime, str]] = {}
_RECENT_KEPT = 2048


def _remember(value: datetime, text: str) -> str:
    if len(_RECENT) >= _RECENT_KEPT:
        _RECENT.clear()
    _RECENT[id(value)] = (value, text)
    return text


# `2026-11-30T08:19:00.` of the seconds seen lately, by (days, seconds) since the epoch (a
# subtraction and two reads, cheaper than six fields): `isoformat` costs ~15 k instructions
# (`PyUnicode_FromFormat`), and the instants of a run fall within a second or two of each
# other, so only the microseconds are written anew, from two three-digit strings (cheaper
# than a `06d` format spec). Bounded: cleared when full.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SECONDS: dict[tuple[int, int], str] = {}
_SECONDS_KEPT = 256
_DIGITS3 = tuple(f"{n:03d}" for n in range(1000))


def _format(value: datetime) -> str:
    if value.tzinfo is not UTC:
        value = value.astimezone(UTC)
    since = value - _EPOCH
    key = (since.days, since.seconds)
    second = _SECONDS.get(key)
    if second is None:
        if len(_SECONDS) >= _SECONDS_KEPT:
            _SECONDS.clear()
        # isoformat of a UTC datetime ends in "+00:00"; the stored form ends in "Z".
        second = _SECONDS[key] = value.isoformat(timespec="seconds")[:19] + "."
    micro = value.microsecond
    return second + _DIGITS3[micro // 1000] + _DIGITS3[micro % 1000] + "Z"


def parse_ts(value: str | None) -> datetime | None:
    """The inverse of `ts`; a ValueError for anything not in exactly that form."""
    if not value:
        return None
    if len(value) != _TS_LEN or value[10] != "T" or value[26] != "Z":
        raise ValueError(f"not a stored timestamp: {value!r}")
    parsed = datetime.fromisoformat(value)  # 3.11+ reads the "Z" as UTC
    if value[4:20:3] == "--T::.":  # exactly what `ts` writes (not "," or " "): remembered
        _remember(parsed, value)
    return parsed


def required_ts(value: str) -> datetime:
    parsed = parse_ts(value)
    assert parsed is not None
    return parsed


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)  # = json.dumps(…, same options)
# What `_ENCODER.encode` ends up calling, made directly: `encode` and `iterencode` cost two
# Python frames and a closure per value on top of the C encoder doing the work. The
# arguments are `iterencode`'s for `_ENCODER` (a fresh `markers` dict: circular check on).
_C_ENCODER: Callable[..., Callable[[Any, int], Iterable[str]]] | None = getattr(
    json.encoder, "c_make_encoder", None
)


def to_json(value: Any) -> str | None:
    if value is None:
        return None
    if _C_ENCODER is None:  # an interpreter built without the _json accelerator
        return _ENCODER.encode(value)
    encode = _C_ENCODER(
        {}, str, json.encoder.encode_basestring, None, ": ", ", ", False, False, True
    )
    return "".join(encode(value, 0))


def from_json(value: str | None) -> Any:
    return None if value is None else json.loads(value)


# -- model → row -------------------------------------------------------------------------

# Reading fields: the row builders below run for every row a commit writes (~30 a standard
# run) and read the models' fields through `vars()`. A pydantic model defines `__getattr__`,
# so each `model.field` goes through CPython's generic lookup with that hook (~0.4 k
# instructions, never specialised); a dict read is a tenth of it. Enum members are read
# as `_value_` for the same reason (`.value` is a property: two Python calls). Same values.

_NO_PAUSE: Row = dict.fromkeys(
    (
        "pause_step_id",
        "pause_nonce",
        "pause_tool",
        "pause_args_hash",
        "paused_at",
        "pause_approver",
    )
)


def run_row(run: Run) -> Row:
    """`RUN_COLUMNS`: the whole run."""
    row = run_state_row(run)
    row.update(
        trace_id=run.trace_id,
        user_id=run.user_id,
        chat_id=run.chat_id,
        request_text=run.request_text,
        language=run.language.value,
        status=run.status.value,
        refusal=run.refusal,
        max_attempts=run.max_attempts,
        created_at=ts(run.created_at),
        interpretation=(
            run.interpretation.model_dump_json() if run.interpretation is not None else None
        ),
        unsupported=int(bool(run.unsupported)),
        clarify_nonce=clarify.nonce if (clarify := run.clarify) is not None else None,
    )
    return row


def run_state_row(run: Run) -> Row:
    """`RUN_STATE_COLUMNS` and the key (`id`)."""
    fields = vars(run)  # see "Reading fields" above
    pause = fields["pause"]
    if pause is None:
        row = dict(_NO_PAUSE)
    else:
        held = vars(pause)
        row = {
            "pause_step_id": held["step_id"],
            "pause_nonce": held["nonce"],
            "pause_tool": held["tool"],
            "pause_args_hash": held["args_hash"],
            "paused_at": ts(held["paused_at"]),
            "pause_approver": held["approver"],
        }
    row["id"] = fields["id"]
    row["attempts"] = fields["attempts"]
    row["stop_reason"] = fields["stop_reason"]
    row["answer"] = fields["answer"]
    row["updated_at"] = ts(fields["updated_at"])
    row["finished_at"] = ts(fields["finished_at"])
    return row


def step_row(run_id: str, position: int, step: PlanStep, observation: str | None) -> Row:
    """`STEP_COLUMNS`: the whole step. `observation` is `step.observation` as JSON."""
    row = step_state_row(run_id, step, observation)
    row.update(
        position=position,
        goal=step.goal,
        tool=step.tool,
        args=to_json(step.args),
        # `_value_`: a StrEnum member is not exactly a str, so sqlite3 would adapt it
        tag=None if (tag := step.tag) is None else tag._value_,
        max_retries=step.max_retries,
        depends_on=to_json(step.depends_on),
    )
    return row


def step_state_row(run_id: str, step: PlanStep, observation: str | None) -> Row:
    """`STEP_STATE_COLUMNS` and the key (`run_id`, `id`): what a step has become."""
    fields = vars(step)  # see "Reading fields" above
    approval, error = fields["approval"], fields["error"]
    return {
        "run_id": run_id,
        "id": fields["id"],
        "status": fields["status"]._value_,
        "observation": observation,
        "error_type": error.type._value_ if error else None,
        "error_message": error.message if error else None,
        "error_code": error.code if error else None,
        "skip_reason": fields["skip_reason"],
        "fallback_reason": fields["fallback_reason"],
        "pause_reason": fields["pause_reason"],
        "retry_count": fields["retry_count"],
        "approval_approved": None if approval is None else int(approval.approved),
        "approval_by": approval.by_user_id if approval else None,
        "approval_at": ts(approval.at) if approval else None,
        "started_at": ts(fields["started_at"]),
        "finished_at": ts(fields["finished_at"]),
    }


def event_row(run: Run, event: RunEvent, observations: dict[str, str | None]) -> Row:
    """`EVENT_COLUMNS`. A step's args go with its start, its observation with its success
    (`observations`: the JSON already made for the step rows of the same commit)."""
    fields = vars(event)  # see "Reading fields" above
    kind, step_id = fields["kind"], fields["step_id"]
    args = observation = None
    if step_id is not None:
        if kind is EventKind.STEP_STARTED:
            args = to_json(run.step(step_id).args)
        elif kind is EventKind.STEP_SUCCEEDED:
            observation = observations[step_id]
    error_type, decision = fields["error_type"], fields["decision"]
    return {
        "run_id": run.id,
        "trace_id": run.trace_id,
        "kind": kind._value_,
        "step_id": step_id,
        "tool": fields["tool"],
        "args": args,
        "attempt": fields["attempt"],
        "status": fields["status"],
        "error_type": error_type._value_ if error_type else None,
        "decision": decision._value_ if decision else None,
        "delay_s": fields["delay_s"],
        "observation": observation,
        "message": fields["message"],
        "at": ts(fields["at"]),
    }


# -- row → model -------------------------------------------------------------------------


class NamedRow(Protocol):
    """A row read by column name: `sqlite3.Row` (what the connections return) or a dict."""

    def __getitem__(self, key: str, /) -> Any: ...


def run_from_rows(row: NamedRow, step_rows: Iterable[NamedRow]) -> Run:
    """A run from its `RUN_READ_COLUMNS` row and its `STEP_COLUMNS` rows in plan order."""
    pause = None
    if row["pause_step_id"] is not None:
        prompt = None
        if row["prompt_message_id"] is not None:
            prompt = PromptRef(chat_id=row["prompt_chat_id"], message_id=row["prompt_message_id"])
        pause = Pause(
            step_id=row["pause_step_id"],
            nonce=row["pause_nonce"],
            tool=row["pause_tool"],
            args_hash=row["pause_args_hash"],
            paused_at=required_ts(row["paused_at"]),
            prompt=prompt,
            approver=row["pause_approver"] or "customer",
        )
    return Run(
        id=row["id"],
        trace_id=row["trace_id"],
        user_id=row["user_id"],
        chat_id=row["chat_id"],
        request_text=row["request_text"],
        language=Language(row["language"]),
        status=RunStatus(row["status"]),
        steps=[step_from_row(s) for s in step_rows],
        refusal=row["refusal"],
        interpretation=(
            Interpretation.model_validate_json(row["interpretation"])
            if row["interpretation"]
            else None
        ),
        pause=pause,
        attempts=row["attempts"],
        max_attempts=row["max_attempts"],
        stop_reason=row["stop_reason"],
        answer=row["answer"],
        created_at=required_ts(row["created_at"]),
        updated_at=required_ts(row["updated_at"]),
        finished_at=parse_ts(row["finished_at"]),
    )


def step_from_row(row: NamedRow) -> PlanStep:
    approval = None
    if row["approval_approved"] is not None:
        approval = Approval(
            approved=bool(row["approval_approved"]),
            by_user_id=row["approval_by"],
            at=required_ts(row["approval_at"]),
        )
    error = None
    if row["error_type"] is not None:
        error = StepError(
            type=row["error_type"], message=row["error_message"] or "", code=row["error_code"]
        )
    return PlanStep(
        id=row["id"],
        goal=row["goal"],
        tool=row["tool"],
        args=json.loads(row["args"]),
        tag=row["tag"],
        status=StepStatus(row["status"]),
        observation=from_json(row["observation"]),
        error=error,
        skip_reason=row["skip_reason"],
        fallback_reason=row["fallback_reason"],
        pause_reason=row["pause_reason"],
        retry_count=row["retry_count"],
        max_retries=row["max_retries"],
        approval=approval,
        started_at=parse_ts(row["started_at"]),
        finished_at=parse_ts(row["finished_at"]),
        depends_on=from_json(row["depends_on"]),
    )


def summary_from_row(row: NamedRow) -> RunSummary:
    """A row of `SUMMARY_SELECT`."""
    return RunSummary(
        id=row["id"],
        trace_id=row["trace_id"],
        user_id=row["user_id"],
        chat_id=row["chat_id"],
        request_text=row["request_text"],
        language=Language(row["language"]),
        status=RunStatus(row["status"]),
        step_count=row["step_count"],
        retries=row["retries"],
        unsupported=bool(row["unsupported"]),
        handed_off=bool(row["handed_off"]),
        created_at=required_ts(row["created_at"]),
        updated_at=required_ts(row["updated_at"]),
        finished_at=parse_ts(row["finished_at"]),
    )


def timeline_entry_from_row(row: NamedRow) -> TimelineEntry:
    """A row of `TIMELINE_COLUMNS`."""
    return TimelineEntry(
        seq=row["seq"],
        kind=EventKind(row["kind"]),
        step_id=row["step_id"],
        tool=row["tool"],
        args=from_json(row["args"]),
        attempt=row["attempt"],
        status=row["status"],
        error_type=row["error_type"],
        decision=row["decision"],
        delay_s=row["delay_s"],
        observation=from_json(row["observation"]),
        message=row["message"],
        at=required_ts(row["at"]),
    )


# How many of a chat's latest order steps decide what a clarifying question may offer.
RECENT_ORDER_STEPS = 40


def distinct_orders(rows: Sequence[Any]) -> list[str]:
    """`last_order_ids` rows (order_id), each order once, in the rows' order."""
    return list(dict.fromkeys(str(row["order_id"]) for row in rows))


def observed_steps(rows: Sequence[Any]) -> list[ObservedStep]:
    """`recent_order_steps` rows (tool, order_id, status, observation JSON, error_type)."""
    steps = []
    for row in rows:
        raw = row["observation"]
        try:
            observation = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            observation = None
        steps.append(
            ObservedStep(
                tool=str(row["tool"]),
                order_id=str(row["order_id"]),
                status=str(row["status"]),
                observation=observation,
                error_type=row["error_type"],
            )
        )
    return steps
