"""GraphQL in the tools file: a tool whose request is one GraphQL operation (Shopify's Admin
API, say), and how its answers are read. Pure; `client` sends, `config` loads.

`[tools.<name>.graphql]`
------------------------
- `query`: the operation's text, sent exactly as written (`query Name(...) {...}` or
  `mutation Name(...) {...}`, named). It is never filled in: every value the step brings
  travels in `variables`, JSON-typed, so no argument's text can change the operation.
- `variables`: the variables as a template, like a `body` (`agent_core.http.mapping`):
  `"{amount}"` is the argument's JSON value, `"name:#{order_id}"` is text filled in. Each
  must be declared in the query (`$amount`). Placeholders: the tool's arguments,
  `{idempotency_key}`, what `lookup.bind` found, and with `address_parts` the address's parts.
- `found`: JMESPath to what the operation was asked for (`data.orders.nodes[0]`); missing
  or empty: `not_found`. `match`: `{ <JMESPath> = "<template>" }` that must hold too (the
  order found has the name asked for), else `not_found`; compared in Python.
- `user_errors`: JMESPath to the mutation's user errors (`data.orderCancel.orderCancelUserErrors`,
  a list of `{field, message, code}`). Any: the change was refused; `codes` says what a
  `code` means (`NOT_FOUND = "not_found"`, `"invalid_arguments:<reason>"`); a code it does
  not list (or none) is `invalid_arguments`. Nothing was changed, so never retried.
- `lookup`: a query run before the operation, for what the operation needs and the
  customer cannot say (the order's global id, the refund's transaction). Its `owner` (as
  a response's) must be the customer asking, else `permission_denied`; `bind =
  { order_gid = "data.orders.nodes[0].id" }` names what it found (each must be found,
  else `invalid_arguments`). When it fails, the operation is never sent.
- `reconcile`: the query that tells whether a change happened (with the tool's
  `reconcile.url` and `reconcile.match`): `root` picks the list (or item) the match is
  tried on, and `response` reads the found item in the change's result shape.

Top-level `errors` (HTTP 200, as GraphQL answers): `THROTTLED` is `unavailable` with a
wait computed from the cost extension (what the query costs minus what is available,
divided by the restore rate; 1 to 60 s), honoured like a 429's Retry-After, and nothing
was done; `ACCESS_DENIED` is `permission_denied`; `INTERNAL_SERVER_ERROR` is
`unavailable` (a change may have happened); anything else (a query the shop's API does not
accept) is `internal`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agent_core.catalog.spec import fill, placeholders
from agent_core.http.mapping import (
    IDEMPOTENCY_KEY,
    ReconcileRead,
    ResponseMapping,
    compile_path,
    render_body,
    search,
    template_names,
)
from agent_core.http.responses import HttpOutcome, clip
from agent_core.models import ErrorType

# The wait a THROTTLED answer asks for, bounded (the client waits in-attempt up to its cap).
MIN_THROTTLE_S: Final = 1.0
MAX_THROTTLE_S: Final = 60.0

_OPERATION = re.compile(r"\s*(?:#[^\n]*\n\s*)*(query|mutation)\s+([A-Za-z_]\w*)")
_DECLARED = re.compile(r"\$([A-Za-z_]\w*)\s*:")
_TOP_LEVEL: Final[Mapping[str, ErrorType]] = {
    "ACCESS_DENIED": ErrorType.PERMISSION_DENIED,
    "THROTTLED": ErrorType.UNAVAILABLE,
    "INTERNAL_SERVER_ERROR": ErrorType.UNAVAILABLE,
}


def _meaning(meaning: str) -> tuple[ErrorType, str | None]:
    error, _, refusal = meaning.partition(":")
    return ErrorType(error), refusal or None


def _check_paths(paths: Mapping[str, str] | None, where: str) -> None:
    for name, path in (paths or {}).items():
        try:
            compile_path(path)
        except ValueError as exc:
            raise ValueError(f"{where}.{name}: {exc}") from None


class Operation(BaseModel):
    """One GraphQL operation: its text, its variables' template, what it must find."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    query: str
    variables: dict[str, Any] = Field(default_factory=dict)
    found: str | None = None
    match: dict[str, str] = Field(default_factory=dict)

    @field_validator("query")
    @classmethod
    def _named(cls, value: str) -> str:
        if _OPERATION.match(value) is None:
            raise ValueError(
                "must start with a named operation (query Name(...) { ... } or mutation ...)"
            )
        return value

    @field_validator("found")
    @classmethod
    def _found(cls, value: str | None) -> str | None:
        if value is not None:
            compile_path(value)
        return value

    @field_validator("match")
    @classmethod
    def _match(cls, value: dict[str, str]) -> dict[str, str]:
        _check_paths({path: path for path in value}, "match")
        for template in value.values():
            placeholders(template)
        return value

    @model_validator(mode="after")
    def _declared(self) -> Operation:
        declared = set(_DECLARED.findall(self.query))
        unknown = sorted(set(self.variables) - declared)
        if unknown:
            raise ValueError(f"variables.{unknown[0]}: the query declares no ${unknown[0]}")
        try:
            template_names(self.variables)
        except ValueError as exc:
            raise ValueError(f"variables: {exc}") from None
        return self

    @property
    def name(self) -> str:
        found = _OPERATION.match(self.query)
        assert found is not None
        return found.group(2)

    def names(self) -> set[str]:
        """Every placeholder the variables and the match use."""
        used = template_names(self.variables)
        return used | {n for template in self.match.values() for n in placeholders(template)}

    def body(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The request body: the query as written, the variables from `values`."""
        return {
            "query": self.query,
            "operationName": self.name,
            "variables": render_body(self.variables, values),
        }

    def refused(self, data: Any, values: Mapping[str, Any]) -> HttpOutcome | None:
        """`not_found` when the answer lacks what was asked for (`found`, `match`)."""
        if self.found is not None and search(self.found, data) in (None, [], {}):
            return HttpOutcome(200, error_type=ErrorType.NOT_FOUND, message="not found upstream")
        texts = {k: str(v) for k, v in values.items() if v is not None}
        for path, template in self.match.items():
            want = fill(template, texts, missing="")
            got = search(path, data)
            if not isinstance(got, str | int | float) or str(got) != want:
                return HttpOutcome(
                    200,
                    error_type=ErrorType.NOT_FOUND,
                    message=f"upstream found something else ({path} is not {want!r})",
                )
        return None


class Lookup(Operation):
    """The query run before a change (see the module docstring)."""

    owner: str | None = None
    bind: dict[str, str] = Field(default_factory=dict)

    @field_validator("owner")
    @classmethod
    def _owner(cls, value: str | None) -> str | None:
        if value is not None:
            compile_path(value)
        return value

    @field_validator("bind")
    @classmethod
    def _bind(cls, value: dict[str, str]) -> dict[str, str]:
        _check_paths(value, "bind")
        for name in value:
            if not name.isidentifier():
                raise ValueError(f"bind.{name}: must be a plain name")
        return value

    def bound(self, data: Any, user_id: int) -> tuple[dict[str, Any], HttpOutcome | None]:
        """What the answer binds, or the failure that stops the change."""
        if self.owner is not None:
            owner = search(self.owner, data)
            if owner is None or str(owner) != str(user_id):
                return {}, HttpOutcome(
                    200,
                    error_type=ErrorType.PERMISSION_DENIED,
                    message="lookup: the answer is not the requesting user's",
                )
        out: dict[str, Any] = {}
        for name, path in self.bind.items():
            value = search(path, data)
            if value is None:
                return {}, HttpOutcome(
                    200,
                    error_type=ErrorType.INVALID_ARGUMENTS,
                    message=f"lookup: upstream has no {name} for this ({path})",
                )
            out[name] = value
        return out, None


class Reconcile(Operation):
    """The query that tells whether a change happened (see the module docstring)."""

    root: str | None = None
    response: ResponseMapping | None = None

    @field_validator("root")
    @classmethod
    def _root(cls, value: str | None) -> str | None:
        if value is not None:
            compile_path(value)
        return value

    def find(self, data: Any, read: ReconcileRead, texts: Mapping[str, str]) -> Any:
        """The item the change made (None: not there)."""
        items = search(self.root, data) if self.root is not None else data
        return None if items is None else read.find(items, texts)


class GraphQLTool(Operation):
    """A tool's `graphql` table: its operation, its user errors, its lookup and reconcile."""

    user_errors: str | None = None
    codes: dict[str, str] = Field(default_factory=dict)
    lookup: Lookup | None = None
    reconcile: Reconcile | None = None

    @field_validator("user_errors")
    @classmethod
    def _user_errors(cls, value: str | None) -> str | None:
        if value is not None:
            compile_path(value)
        return value

    @field_validator("codes")
    @classmethod
    def _codes(cls, value: dict[str, str]) -> dict[str, str]:
        for code, meaning in value.items():
            try:
                _meaning(meaning)
            except ValueError:
                known = ", ".join(e.value for e in ErrorType)
                raise ValueError(
                    f"codes.{code}: {meaning!r} is not an error type ({known})"
                ) from None
        return value

    def check(self, args: set[str]) -> None:
        """ValueError naming the first placeholder that is not an argument, the key or
        (after the lookup) a bound name."""
        allowed = args | {IDEMPOTENCY_KEY}
        for where, operation, extra in (
            ("lookup", self.lookup, set()),
            ("reconcile", self.reconcile, set()),
            ("", self, set(self.lookup.bind) if self.lookup else set()),
        ):
            if operation is None:
                continue
            unknown = sorted(operation.names() - allowed - extra)
            if unknown:
                prefix = f"{where}." if where else ""
                raise ValueError(
                    f"{prefix}variables: {{{unknown[0]}}} is neither an argument, "
                    f"{{{IDEMPOTENCY_KEY}}} nor a lookup.bind name"
                )

    def refused(self, data: Any, values: Mapping[str, Any]) -> HttpOutcome | None:
        """The mutation's user errors, then `found`/`match` (see `Operation.refused`)."""
        if self.user_errors is not None:
            errors = search(self.user_errors, data)
            if isinstance(errors, list) and errors:
                return self._user_error(errors)
        return super().refused(data, values)

    def _user_error(self, errors: list[Any]) -> HttpOutcome:
        first = errors[0] if isinstance(errors[0], dict) else {}
        code = first.get("code")
        error, refusal = _meaning(self.codes.get(str(code), "invalid_arguments"))
        texts = [
            f"{e.get('code') or 'error'}: {e.get('message')}" for e in errors if isinstance(e, dict)
        ]
        return HttpOutcome(
            200,
            error_type=error,
            code=refusal,
            message="upstream refused it: " + "; ".join(texts),
        )


def throttle_wait(data: Mapping[str, Any]) -> float:
    """Seconds until the bucket holds what the throttled query costs (1 to 60)."""
    cost = search("extensions.cost", data)
    needed = search("requestedQueryCost", cost)
    available = search("throttleStatus.currentlyAvailable", cost)
    rate = search("throttleStatus.restoreRate", cost)
    wait = MIN_THROTTLE_S
    numbers = (needed, available, rate)
    if all(isinstance(n, int | float) and not isinstance(n, bool) for n in numbers) and rate > 0:
        wait = math.ceil(max(0.0, float(needed) - float(available)) / float(rate))
    return float(min(MAX_THROTTLE_S, max(MIN_THROTTLE_S, wait)))


def read_answer(
    operation: Operation,
    status: int,
    body: bytes,
    values: Mapping[str, Any],
    *,
    writes: bool,
    redact: Callable[[str], str],
) -> HttpOutcome | None:
    """A 2xx GraphQL answer's own failure (top-level `errors`, user errors, not found);
    None when there is none and the answer is read as any other (`map_response`)."""
    if not 200 <= status < 300:
        return None
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    errors = data.get("errors")
    if errors:
        return _top_level(errors, data, status, writes=writes, redact=redact)
    outcome = operation.refused(data, values)
    if outcome is None:
        return None
    return HttpOutcome(
        status,
        error_type=outcome.error_type,
        code=outcome.code,
        message=f"{operation.name}: {clip(outcome.message, redact)}",
    )


def _top_level(
    errors: Any, data: Mapping[str, Any], status: int, *, writes: bool, redact: Callable[[str], str]
) -> HttpOutcome:
    items = errors if isinstance(errors, list) else [{"message": str(errors)}]
    codes = [search("extensions.code", e) for e in items]
    messages = [search("message", e) for e in items]
    throttled = "THROTTLED" in codes or "Throttled" in messages
    code = "THROTTLED" if throttled else next((c for c in codes if c in _TOP_LEVEL), None)
    error = _TOP_LEVEL.get(code or "", ErrorType.INTERNAL)
    text = "; ".join(
        f"{c}: {m}" if c else str(m) for c, m in zip(codes, messages, strict=True) if m or c
    )
    message = f"upstream answered HTTP {status} with GraphQL errors: {clip(text, redact)}"
    if throttled:
        wait = throttle_wait(data)
        return HttpOutcome(
            status,
            error_type=error,
            message=f"{message} (Retry-After {wait:g}s)",
            retry_after_s=wait,
        )
    return HttpOutcome(
        status,
        error_type=error,
        message=message,
        may_have_happened=writes and error is ErrorType.UNAVAILABLE,
    )
