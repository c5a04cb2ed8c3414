"""A tool declared in the tools file: its catalog entry (`ToolSpec`) from a TOML table.

A tool the built-in catalog does not know is declared next to its request mapping, with
the same parts as a built-in entry, so it is planned, confirmed, executed once, shown and
listed like one, with no Python:

    [tools.request_invoice]
    description = { zh = "…", en = "Send an invoice for one of the customer's orders." }
    risk = "high"                                   # read | high
    goal = { zh = "为订单 {order_id} 开发票", en = "Send an invoice for order {order_id}" }
    confirm = { zh = "…？", en = "Send an invoice for order {order_id}?" }   # optional
    approve_label = { … }, decline_label = { … }    # optional button words
    phrases = { zh = ["发票"], en = ["invoice"] }   # what customers say (a planner reads it)
    args.order_id = { type = "order_id" }
    args.email = { type = "text", max_length = 100, required = false }
    result.invoice_id = { type = "string" }
    result.order_id = { type = "string" }
    templates = [{ zh = "…", en = "Invoice {invoice_id} for order {order_id} is on its way." }]
    rules = [{ name = "…", after = "get_order_status", field = "status",
               values = ["cancelled"], reason = { zh = "…", en = "…" } }]

A read tool with no `args` is keyed by the customer asking ("my points", "my orders"): its
url, query or body says `{customer.id}` / `{customer.email}` (the tools file's `[customer]`
lookup), and it is planned with no order number asked.

Argument types: `order_id` (trimmed, upper-cased, ≤ 32), `string` (`min_length`,
`max_length` ≤ 1000, `pattern`, `enum`), `text` (customer free text: bounded, one line, no
control characters), `amount` (positive, two decimals), `integer` (`minimum`, `maximum`),
`boolean`. Result field types: `string`, `integer`, `number`, `amount` (a string or a
number), `boolean`, `list` (of objects with `fields`, or of anything). Every text is given
in zh and en; templates may name only result fields and arguments.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    create_model,
    field_validator,
)

from agent_core.catalog.contracts import Amount, NonBlank, OrderId, no_control_characters
from agent_core.catalog.spec import (
    GENERIC_APPROVE,
    GENERIC_CONFIRM,
    GENERIC_DECLINE,
    Approver,
    Phrases,
    ResultView,
    SkipRule,
    Template,
    Texts,
    ToolSpec,
    placeholders,
    rule,
)
from agent_core.models import Risk, StepTag

# The keys a declaration may have; the rest of a tool's table is its request mapping.
DECLARATION_KEYS = frozenset(
    {
        "description",
        "goal",
        "approval",
        "args",
        "result",
        "result_list",
        "empty_field",
        "state_field",
        "bounds",
        "templates",
        "each",
        "item_templates",
        "max_items",
        "labels",
        "empty",
        "confirm",
        "approve_label",
        "decline_label",
        "refusals",
        "arg_hints",
        "rules",
        "phrases",
    }
)
_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


class Problem(ValueError):
    """A bad declaration; `field` says where (`args.email.type`), `str()` what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class _Arg(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["order_id", "string", "text", "amount", "integer", "boolean"]
    required: bool = True
    description: str | None = None
    min_length: int | None = Field(None, ge=0, le=1000)
    max_length: int | None = Field(None, ge=1, le=1000)
    pattern: str | None = None
    enum: list[str] | None = None
    minimum: int | None = None
    maximum: int | None = None

    @field_validator("pattern")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a regular expression ({exc})") from None
        return value


class _ResultField(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["string", "integer", "number", "amount", "boolean", "list"]
    required: bool = True
    enum: list[str] | None = None
    fields: dict[str, _ResultField] | None = None


class _Rule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    after: str
    field: str
    values: list[str] = Field(min_length=1)
    reason: Texts
    tag: StepTag | None = None


class _Template(BaseModel):
    model_config = ConfigDict(extra="forbid")

    zh: str
    en: str
    when: dict[str, list[str]] = Field(default_factory=dict)


class _Declaration(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: Texts
    goal: Texts
    risk: Risk = Risk.READ
    approval: Approver | None = None
    # None: a tool keyed by the asking customer (its url says `{customer.id}`), no order.
    args: dict[str, _Arg] = Field(default_factory=dict)
    result: dict[str, _ResultField] = Field(default_factory=dict)
    result_list: bool = False
    empty_field: str | None = None
    state_field: str | None = None
    bounds: dict[str, Annotated[int, Field(ge=1, le=2000)]] = Field(default_factory=dict)
    templates: list[_Template] = Field(default_factory=list)
    each: str | None = None
    item_templates: list[_Template] = Field(default_factory=list)
    max_items: int = Field(3, ge=1, le=10)
    labels: dict[str, dict[str, Texts]] = Field(default_factory=dict)
    empty: Texts | None = None
    confirm: Texts | None = None
    approve_label: Texts | None = None
    decline_label: Texts | None = None
    refusals: dict[str, Texts] = Field(default_factory=dict)
    arg_hints: dict[str, Texts] = Field(default_factory=dict)
    rules: list[_Rule] = Field(default_factory=list)
    phrases: Phrases | None = None


def declare(name: str, table: Mapping[str, Any], risk: Risk | None) -> ToolSpec:
    """The `ToolSpec` a tools-file table declares for the unknown tool `name`.

    `table` holds the declaration keys only (see `DECLARATION_KEYS`); `risk` is the table's
    own `risk` line. Raises `Problem` naming the field.
    """
    if not _NAME.fullmatch(name):
        raise Problem("name", "a tool name is 1-64 of a-z, 0-9 and _, starting with a letter")
    try:
        raw = _Declaration.model_validate({**table, **({"risk": risk} if risk else {})})
    except ValidationError as exc:
        err = exc.errors(include_url=False, include_input=False)[0]
        raise Problem(".".join(str(p) for p in err["loc"]) or "tool", err["msg"]) from None
    args_model = _args_model(name, raw.args)
    result_model = _result_model(name, raw.result) if raw.result else None
    names = set(raw.args) | _result_names(raw.result)
    _check_texts(raw, set(raw.args), names)
    approval = raw.approval or (Approver.CUSTOMER if raw.risk is Risk.HIGH else None)
    if raw.risk is Risk.READ and raw.approval is not None:
        raise Problem("approval", "a read tool needs no approval")
    try:
        return ToolSpec(
            name=name,
            description=raw.description,
            args_model=args_model,
            risk=raw.risk,
            approval=approval,
            goal=raw.goal,
            result_model=result_model,
            result_is_list=raw.result_list,
            empty_field=raw.empty_field,
            state_field=raw.state_field,
            bounds=raw.bounds,
            view=ResultView(
                lines=tuple(_template(t) for t in raw.templates),
                each=raw.each,
                item_lines=tuple(_template(t) for t in raw.item_templates),
                max_items=raw.max_items,
                labels=raw.labels,
            ),
            empty=raw.empty,
            confirm=raw.confirm or GENERIC_CONFIRM,
            approve_label=raw.approve_label or GENERIC_APPROVE,
            decline_label=raw.decline_label or GENERIC_DECLINE,
            refusals=raw.refusals,
            arg_hints=raw.arg_hints,
            skip_rules=tuple(_rule(name, r) for r in raw.rules),
            phrases=raw.phrases,
        )
    except ValidationError as exc:
        raise Problem("tool", exc.errors(include_url=False)[0]["msg"]) from None


def _template(raw: _Template) -> Template:
    return Template(zh=raw.zh, en=raw.en, when={k: tuple(v) for k, v in raw.when.items()})


def _rule(name: str, raw: _Rule) -> SkipRule:
    return rule(
        raw.name,
        after=raw.after,
        field=raw.field,
        values=raw.values,
        reason=raw.reason,
        skip_tool=name,
        skip_tag=raw.tag,
    )


def _args_model(name: str, args: Mapping[str, _Arg]) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for arg, spec in args.items():
        if not _NAME.fullmatch(arg):
            raise Problem(f"args.{arg}", "an argument name is 1-64 of a-z, 0-9 and _")
        annotation = _arg_type(f"args.{arg}", spec)
        if spec.required:
            fields[arg] = (annotation, Field(..., description=spec.description))
        else:
            fields[arg] = (annotation | None, Field(None, description=spec.description))
    model: type[BaseModel] = create_model(
        f"{_camel(name)}Args", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model


def _arg_type(where: str, spec: _Arg) -> Any:
    if spec.enum is not None and spec.type != "string":
        raise Problem(f"{where}.enum", "only a string argument has an enum")
    if spec.type == "order_id":
        return OrderId
    if spec.type == "amount":
        return Amount
    if spec.type == "boolean":
        return bool
    if spec.type == "integer":
        return Annotated[int, Field(ge=spec.minimum, le=spec.maximum, strict=True)]
    if spec.type == "string" and spec.enum:
        return Literal[tuple(spec.enum)]
    constraints = StringConstraints(
        strip_whitespace=True,
        min_length=spec.min_length if spec.min_length is not None else 1,
        max_length=spec.max_length or (1000 if spec.type == "string" else 200),
        pattern=spec.pattern,
    )
    if spec.type == "text":
        return Annotated[str, constraints, AfterValidator(no_control_characters)]
    return Annotated[str, constraints]


def _result_model(name: str, result: Mapping[str, _ResultField]) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for field, spec in result.items():
        annotation = _result_type(f"result.{field}", name + "_" + field, spec)
        fields[field] = (annotation, ...) if spec.required else (annotation | None, None)
    model: type[BaseModel] = create_model(
        f"{_camel(name)}Result", __config__=ConfigDict(strict=True, extra="allow"), **fields
    )
    return model


def _result_type(where: str, model_name: str, spec: _ResultField) -> Any:
    if spec.type == "list":
        if spec.fields:
            return list[_result_model(model_name, spec.fields)]  # type: ignore[misc]
        return list[Any]
    if spec.fields:
        raise Problem(f"{where}.fields", "only a list has fields")
    if spec.enum is not None:
        if spec.type != "string":
            raise Problem(f"{where}.enum", "only a string field has an enum")
        return Literal[tuple(spec.enum)]
    return {
        "string": NonBlank,
        "integer": int,
        "number": int | float,
        "amount": NonBlank | int | float | Decimal,
        "boolean": bool,
    }[spec.type]


def _result_names(result: Mapping[str, _ResultField]) -> set[str]:
    names = set(result)
    for spec in result.values():
        if spec.fields:
            names |= _result_names(spec.fields)
    return names


def _check_texts(raw: _Declaration, args: set[str], names: set[str]) -> None:
    """Every template names only what it can read."""
    checks: list[tuple[str, Texts | _Template | None, set[str]]] = [
        ("goal", raw.goal, args),
        ("confirm", raw.confirm, args | {"goal"}),
        ("approve_label", raw.approve_label, args),
        ("decline_label", raw.decline_label, args),
        ("empty", raw.empty, args),
        *((f"templates.{n}", t, names) for n, t in enumerate(raw.templates)),
        *((f"item_templates.{n}", t, names) for n, t in enumerate(raw.item_templates)),
        *((f"refusals.{code}", t, args) for code, t in raw.refusals.items()),
        *((f"rules.{n}.reason", r.reason, {"order_id", "status"}) for n, r in enumerate(raw.rules)),
    ]
    for where, texts, allowed in checks:
        if texts is None:
            continue
        for language in ("zh", "en"):
            try:
                used = placeholders(getattr(texts, language))
            except ValueError as exc:
                raise Problem(f"{where}.{language}", str(exc)) from None
            unknown = sorted(set(used) - allowed)
            if unknown:
                raise Problem(
                    f"{where}.{language}",
                    f"{{{unknown[0]}}} is not one of {', '.join(sorted(allowed)) or 'nothing'}",
                )
    for hint in raw.arg_hints:
        if hint not in args:
            raise Problem(f"arg_hints.{hint}", "not an argument of this tool")


def _camel(name: str) -> str:
    return "".join(part.title() for part in name.split("_"))
