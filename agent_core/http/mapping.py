"""A shop's own API shapes, mapped to and from stepwise's: request bodies, responses, errors.

So a shop can point a catalog tool at the API it already has (WooCommerce, say) instead of
writing an adapter service. All of it is data from the tools file and pure functions here:

- `body`: the JSON body of a non-GET request, as a template. A string that is exactly
  `"{arg}"` becomes that argument's value (left out when the argument is null); other
  strings are filled with the arguments (`spec.fill`: plain names only); everything else is
  sent as written. Without `body`, the arguments not used by the url are the body.
- `ResponseMapping`: each result field is a JMESPath expression over the answer
  (`order_id = "to_string(id)"`), `values` translate a field's values
  (`processing = "pending"`), `from_args` copies arguments the answer leaves out
  (`order_id` of a refund), `root` picks the list of a list result, and `owner` names
  where the answer says whose it is: a result whose owner is not the requesting customer
  is `permission_denied` (for APIs that know every customer, like a shop's admin API).
  Every text a field picks is plain text (`agent_core.http.text`: HTML converted,
  clipped at a sentence).
- `ErrorMapping`: where an error body keeps its code and message (JMESPath), and what a
  code means (`woocommerce_rest_shop_order_invalid_id = "not_found"`, or
  `"invalid_arguments:amount_too_high"` to give the refusal its reason). A mapped code wins
  over the HTTP status: WooCommerce answers an invalid refund with a 500.
- `ReconcileRead`: for a change whose backend ignores `Idempotency-Key`, the GET that tells
  whether it happened (issue 20): the answer, or one item of a list answer, that holds
  every `match` (`{ status = "cancelled" }`, or the idempotency key the write sent in a
  field the shop stores: `{ "meta_data[?key=='stepwise_key'] | [0].value" =
  "{idempotency_key}" }`) is the change, read like the write's own answer.
  The matched values are compared in Python, never put into an expression, so an
  argument's text cannot change what the path means.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

import jmespath
from jmespath.exceptions import JMESPathError
from jmespath.parser import ParsedResult
from pydantic import BaseModel, ConfigDict, Field, field_validator

from agent_core.catalog.spec import fill, placeholders
from agent_core.http.text import plain_text
from agent_core.models import ErrorType

# The placeholder a write's `body` and a reconcile `match` may use besides the arguments:
# the step's idempotency key (`run_id:step_id`), the same on every retry and recovery.
IDEMPOTENCY_KEY: Final = "idempotency_key"


def compile_path(path: str) -> ParsedResult:
    """A JMESPath expression, compiled; ValueError naming the problem if it is not one."""
    try:
        return jmespath.compile(path)
    except JMESPathError as exc:
        raise ValueError(f"not a JMESPath expression ({type(exc).__name__})") from None


def search(path: str, data: Any) -> Any:
    """`path` evaluated on `data`; None when it finds nothing or cannot be evaluated."""
    try:
        return compile_path(path).search(data)
    except (ValueError, JMESPathError, TypeError, RecursionError):
        return None


class ResponseMapping(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    fields: dict[str, str] = Field(default_factory=dict)
    values: dict[str, dict[str, str]] = Field(default_factory=dict)
    from_args: tuple[str, ...] = ()
    root: str | None = None
    owner: str | None = None
    # Whom `owner` must be: the Telegram user id the shop stored ("telegram_user_id"), or
    # the asking customer's id at the shop (`"customer"`: the `[customer]` lookup's `id`).
    owner_is: Literal["telegram_user_id", "customer"] = "telegram_user_id"

    @field_validator("fields")
    @classmethod
    def _paths(cls, value: dict[str, str]) -> dict[str, str]:
        for name, path in value.items():
            try:
                compile_path(path)
            except ValueError as exc:
                raise ValueError(f"fields.{name}: {exc}") from None
        return value

    @field_validator("root", "owner")
    @classmethod
    def _path(cls, value: str | None) -> str | None:
        if value is not None:
            compile_path(value)
        return value

    def apply(self, data: Any, args: Mapping[str, Any]) -> Any:
        """The answer in stepwise's shape (a dict, or a list of dicts for `root`)."""
        if self.root is not None:
            items = search(self.root, data)
            if not isinstance(items, list):
                return items
            return [self._one(item, args) for item in items]
        return self._one(data, args)

    def _one(self, data: Any, args: Mapping[str, Any]) -> Any:
        if self.fields:
            # Customers read these: HTML becomes plain text, long texts end at a sentence.
            out: Any = {name: _plain(search(path, data)) for name, path in self.fields.items()}
            out = {k: v for k, v in out.items() if v is not None}
        else:
            out = data
        if isinstance(out, dict):
            for name, table in self.values.items():
                value = out.get(name)
                if isinstance(value, str | int | float | bool) and str(value) in table:
                    out[name] = table[str(value)]
            for name in self.from_args:
                if out.get(name) is None and args.get(name) is not None:
                    out[name] = args[name]
        return out

    def owner_of(self, data: Any) -> str | None:
        """Whose the answer says it is (as text), or None when it does not say."""
        if self.owner is None:
            return None
        value = search(self.owner, data)
        return None if value is None else str(value)


class ErrorMapping(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    code: str = "code"
    message: str = "message"
    map: dict[str, str] = Field(default_factory=dict)

    @field_validator("code", "message")
    @classmethod
    def _path(cls, value: str) -> str:
        compile_path(value)
        return value

    @field_validator("map")
    @classmethod
    def _meanings(cls, value: dict[str, str]) -> dict[str, str]:
        for code, meaning in value.items():
            error, _, _ = meaning.partition(":")
            if error not in {e.value for e in ErrorType}:
                known = ", ".join(e.value for e in ErrorType)
                raise ValueError(f"map.{code}: {error!r} is not an error type ({known})")
        return value

    def read(self, data: Any) -> tuple[ErrorType | None, str | None, str | None]:
        """(the mapped error type, its refusal code, the upstream's message) of an error body."""
        code = search(self.code, data)
        message = search(self.message, data)
        text = message if isinstance(message, str) else None
        meaning = self.map.get(str(code)) if code is not None else None
        if meaning is None:
            return None, None, text
        error, _, refusal = meaning.partition(":")
        return ErrorType(error), refusal or None, text


class ReconcileRead(BaseModel):
    """How to tell whether a change happened (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str
    match: dict[str, str]

    @field_validator("match")
    @classmethod
    def _matches(cls, value: dict[str, str]) -> dict[str, str]:
        if not value:
            raise ValueError("say what identifies the change (a path = its value)")
        for path, template in value.items():
            try:
                compile_path(path)
                placeholders(template)
            except ValueError as exc:
                raise ValueError(f"{path}: {exc}") from None
        return value

    def names(self) -> set[str]:
        """The placeholders the `match` values use (arguments, or the idempotency key)."""
        return {name for template in self.match.values() for name in placeholders(template)}

    def find(self, data: Any, values: Mapping[str, str]) -> Any:
        """The item of `data` (a list answer), or `data` itself, that holds every match;
        None when none does: the change is not there."""
        wanted = {path: fill(template, values, missing="") for path, template in self.match.items()}
        for item in data if isinstance(data, list) else [data]:
            if all(_text(search(path, item)) == want for path, want in wanted.items()):
                return item
        return None


def _plain(value: Any) -> Any:
    """A mapped value with every text in it made plain (`agent_core.http.text`)."""
    if isinstance(value, str):
        return plain_text(value)
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _text(value: Any) -> str | None:
    """A found value as the text a template fills in (None: nothing to compare)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        return None
    return str(value)


def template_names(template: Any) -> set[str]:
    """The placeholders a body template reads (see `render_body`; ValueError for a
    malformed one)."""
    if isinstance(template, dict):
        return {n for item in template.values() for n in template_names(item)}
    if isinstance(template, list):
        return {n for item in template for n in template_names(item)}
    if isinstance(template, str):
        return set(placeholders(template))
    return set()


def render_body(template: Any, args: Mapping[str, Any]) -> Any:
    """The request body from its template (see the module docstring)."""
    if isinstance(template, dict):
        out = {}
        for key, value in template.items():
            rendered = render_body(value, args)
            if rendered is not _OMIT:
                out[key] = rendered
        return out
    if isinstance(template, list):
        return [v for v in (render_body(item, args) for item in template) if v is not _OMIT]
    if isinstance(template, str):
        name = template[1:-1]
        if template.startswith("{") and template.endswith("}") and name.isidentifier():
            return args.get(name, _OMIT) if args.get(name) is not None else _OMIT
        texts = {k: str(v) for k, v in args.items() if v is not None}
        return fill(template, texts, missing="")
    return template


_OMIT: Final = object()
