"""Who the customer asking is, at the shop: the tools file's `[customer]` lookup, cached.

A tool keyed by the customer ("my orders", loyalty points, store credit) needs the shop's
own customer id, not the Telegram user id. The shop declares how to find it:

    [customer]
    url = "https://shop.example/wp-json/wc/v3/customers"
    query = { search = "{telegram_user_id}", role = "all" }
    root = "@"                                           # the list of candidates
    owner = "meta_data[?key=='telegram_user_id'] | [0].value"
    fields = { id = "to_string(id)", email = "email" }
    ttl_s = 600
    link = { en = "Link your account at https://shop.example/my-account/telegram ...", zh = "…" }

- `url`, `query` (GET) or `graphql = { query, variables }` (POST): the request; its only
  placeholder is `{telegram_user_id}`.
- `root` (JMESPath): the candidates in the answer (a search answers a list); without it the
  answer itself is the one candidate.
- `owner` (JMESPath, required): where a candidate keeps the Telegram user id the shop
  stored when the customer linked their account. The first candidate whose value equals
  the asking user's id (compared in Python, never put into an expression) is the customer;
  none: the customer is not linked. A search that matches loosely can therefore never
  hand one customer another's points.
- `fields`: `id` (required) and `email`, JMESPath in the candidate, available to every
  tool as `{customer.id}` and `{customer.email}` in its url, `query` and `body`.
- `ttl_s` (default 300, 0..86400): how long a found customer is remembered, per Telegram
  user, in this process's memory. A customer not found is never remembered: one who just
  linked is recognised at their next message.
- `link` (zh and en): what an unlinked customer is told, once, instead of being asked for
  an order number. Say where and how to link (see the README, "Who the customer is").
- `claim = { url, body }`: where the bot hands over the token of the shop's "Link
  Telegram" deep link (`/start <token>`), as a POST with the `[http]` headers; `body` may
  use `{token}` (required) and `{telegram_user_id}`. Any 2xx: linked. The token is a
  credential: it is only ever put in this body, never in a url, a log line or the
  database (`bot.link`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agent_core.catalog.spec import Texts
from agent_core.http.mapping import compile_path, render_body, search, template_names

# The placeholders a tool's templates may use once `[customer]` is declared, and the
# internal argument names they stand for (an argument never starts with "_").
CUSTOMER_FIELDS: Final[Mapping[str, str]] = {
    "customer.id": "_customer_id",
    "customer.email": "_customer_email",
}
TELEGRAM_USER_ID: Final = "telegram_user_id"
TOKEN: Final = "token"
NOT_LINKED: Final = "not_linked"
DEFAULT_TTL_S: Final = 300


class CustomerQuery(BaseModel):
    """`graphql` of the lookup: the query text and its variables (a template)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    query: str
    variables: dict[str, Any] = Field(default_factory=dict)


class LinkOutcome(StrEnum):
    """What handing a deep link's token to the shop (`claim`) came to."""

    LINKED = "linked"  # the shop took it, or refused it but the user is linked (a double tap)
    REFUSED = "refused"  # the shop refused the token (4xx): expired, used, unknown
    UNAVAILABLE = "unavailable"  # no answer, a 5xx, or the shop refused our credentials


class CustomerClaim(BaseModel):
    """`claim` of the lookup: the POST that hands a deep link's token to the shop."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str
    body: dict[str, Any]
    timeout_s: float = Field(5.0, gt=0, le=60)

    @field_validator("body")
    @classmethod
    def _body(cls, value: dict[str, Any]) -> dict[str, Any]:
        used = template_names(value)
        unknown = sorted(used - {TOKEN, TELEGRAM_USER_ID})
        if unknown:
            raise ValueError(
                f"body: {{{unknown[0]}}} is not a placeholder of the claim "
                "({token}, {telegram_user_id})"
            )
        if TOKEN not in used:
            raise ValueError("body: the shop needs the token: put {token} in it")
        return value

    def body_for(self, user_id: int, token: str) -> Any:
        """The JSON body handing `token` over for `user_id`."""
        return render_body(self.body, {TOKEN: token, TELEGRAM_USER_ID: str(user_id)})


class CustomerLookup(BaseModel):
    """The `[customer]` table (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str
    query: dict[str, str | int | float | bool] | None = None
    graphql: CustomerQuery | None = None
    root: str | None = None
    owner: str
    fields: dict[str, str]
    ttl_s: int = Field(DEFAULT_TTL_S, ge=0, le=86400)
    timeout_s: float = Field(5.0, gt=0, le=60)
    link: Texts | None = None  # None: the general words (`agent_core.answers.compose`)
    claim: CustomerClaim | None = None  # None: `/start <token>` is a plain /start

    @field_validator("root", "owner")
    @classmethod
    def _path(cls, value: str | None) -> str | None:
        if value is not None:
            compile_path(value)
        return value

    @field_validator("fields")
    @classmethod
    def _fields(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - {"id", "email"})
        if unknown:
            raise ValueError(f"{unknown[0]!r} is not a customer field (id, email)")
        if "id" not in value:
            raise ValueError("say where the customer's id is (id = <JMESPath>)")
        for name, path in value.items():
            try:
                compile_path(path)
            except ValueError as exc:
                raise ValueError(f"{name}: {exc}") from None
        return value

    def request_parts(self, user_id: int) -> tuple[str, dict[str, Any] | None, Any]:
        """(method, query parameters, JSON body) of the lookup for `user_id`."""
        values = {TELEGRAM_USER_ID: str(user_id)}
        if self.graphql is not None:
            body = {
                "query": self.graphql.query,
                "variables": render_body(self.graphql.variables, values),
            }
            return "POST", None, body
        params = render_body(self.query, values) if self.query is not None else None
        return "GET", params, None

    def find(self, data: Any, user_id: int) -> Customer | None:
        """The candidate whose `owner` is `user_id`, or None (not linked)."""
        found = search(self.root, data) if self.root is not None else data
        candidates = found if isinstance(found, list) else [found]
        for item in candidates:
            owner = search(self.owner, item)
            if owner is None or isinstance(owner, dict | list | bool) or str(owner) != str(user_id):
                continue
            customer_id = search(self.fields["id"], item)
            if customer_id is None or isinstance(customer_id, dict | list | bool):
                continue
            email = search(self.fields["email"], item) if "email" in self.fields else None
            return Customer(id=str(customer_id), email=email if isinstance(email, str) else None)
        return None


@dataclass(frozen=True)
class Customer:
    """The shop's customer behind a Telegram user."""

    id: str
    email: str | None = None

    def values(self) -> dict[str, str]:
        """The tool-argument values of `{customer.id}` and `{customer.email}`."""
        out = {CUSTOMER_FIELDS["customer.id"]: self.id}
        if self.email is not None:
            out[CUSTOMER_FIELDS["customer.email"]] = self.email
        return out


def customer_templates(value: Any) -> Any:
    """A url, query or body template with `{customer.id}` / `{customer.email}` written as
    the internal names the request is filled from."""
    if isinstance(value, str):
        for public, internal in CUSTOMER_FIELDS.items():
            value = value.replace("{" + public + "}", "{" + internal + "}")
        return value
    if isinstance(value, dict):
        return {k: customer_templates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [customer_templates(v) for v in value]
    return value


def uses_customer(*templates: Any) -> bool:
    """Whether any template reads `{customer.id}` or `{customer.email}` (already renamed)."""
    text = repr(templates)
    return any("{" + internal + "}" in text for internal in CUSTOMER_FIELDS.values())


class CustomerCache:
    """Found customers per Telegram user, each for `ttl_s` (`clock` is injectable)."""

    def __init__(self, ttl_s: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl_s = ttl_s
        self._clock = clock
        self._found: dict[int, tuple[float, Customer]] = {}

    def get(self, user_id: int) -> Customer | None:
        entry = self._found.get(user_id)
        if entry is None:
            return None
        until, customer = entry
        if self._clock() >= until:
            del self._found[user_id]
            return None
        return customer

    def put(self, user_id: int, customer: Customer) -> None:
        if self._ttl_s > 0:
            self._found[user_id] = (self._clock() + self._ttl_s, customer)

    def forget(self, user_id: int) -> None:
        self._found.pop(user_id, None)
