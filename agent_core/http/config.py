"""Loading a tools file: `STEPWISE_TOOLS=path/to/tools.toml`, validated completely.

Config file (see `examples/tools.toml` and `examples/woocommerce.toml`)
-----------------------------------------------------------------------
`[tools.<name>]`, one table per tool. A tool of the built-in catalog (`agent_core.catalog.builtin`)
takes its declaration (arguments, risk, result contract, wording, rules) from there and
the table says only how to call it; any other name must be declared in its table
(`agent_core.http.declare`: description, goal, args, result, templates, rules, phrases …).
A catalog tool left out is simply not registered. The request mapping:

- `url` (required): absolute http(s) url; `{arg}` placeholders must be arguments of the
  tool and are percent-encoded. `${VAR}` is not allowed here (secrets go in headers).
- `method`: GET (default), POST, PUT, PATCH or DELETE. Arguments not used by the url go to
  the query string for GET and to a JSON body otherwise, unless `body` says what to send.
- `body`: the JSON body as a template (`{ status = "cancelled", amount = "{amount}" }`);
  `query`: a GET's query string, the same way (`{ search = "{query}" }`).
- `response`: the answer mapped into the result contract (JMESPath `fields`, `values`,
  `from_args`, `root`, `owner`); `errors`: the error body's `code`/`message` and what a
  code means (`map`). See `agent_core.http.mapping`.
- `check_first`: another configured read tool (GET) called first with the same arguments;
  the change is only sent if it succeeds (an API that does not check ownership itself).
- `timeout_s`: 5. The whole budget of one attempt (0 < t <= 60), Retry-After wait included.
- `max_retries`: 2 (0..10). How often the executor retries a transient failure.
- `risk`: "read" (default) or "high". A catalog tool's risk can be raised, never lowered
  (`cancel_order` is always high), so a forgotten or mistyped line can never remove the
  customer's confirmation. A high-risk tool is `idempotent=False` and must not use GET.
- `idempotency`: "honoured" or "ignored": whether the backend replays a request whose
  `Idempotency-Key` it has seen. A retry of a change is only safe where it does; where it
  does not (WooCommerce, most shop APIs), a change that may have arrived is reconciled
  (`reconcile`) and never re-sent blindly. `{idempotency_key}` in `body` sends the key in a
  field the backend stores, so the reconcile read can find it.
- `reconcile`: `{ url = "...", match = { <JMESPath> = "<value template>" } }`, the GET that
  tells whether the change happened (`agent_core.http.mapping.ReconcileRead`); without
  it, a change in doubt ends as `unknown_outcome` for staff to check.
- `settle_s`: 30 (0 < s <= 600). The longest the backend may take to make a change after
  it was sent. A reconcile read that finds nothing sooner proves nothing (the first
  request may still be in flight): it is read again, with backoff, until this long after
  the send, and only then is the change sent again.

Safe defaults (issue 20): nothing that changes data may rest on a default. A tool whose
method is not GET and that the file declares must say its `risk` (and, when high, its
`approval`); every high-risk tool must say its `idempotency`. A table that forgets one is
refused with one line naming the file, the tool and the missing field.
- `graphql`: the request is one GraphQL operation (POST, no `body`): its `query`, templated
  `variables`, user errors, a `lookup` before a change and a reconcile query
  (`agent_core.http.graphql`).
- `address_parts`: `{ arg = "address", country = "CN" }`: the argument holding a customer's
  one-line address is split into `{address_1}`, `{city}`, `{postcode}`, `{country}` for
  `body`, a GraphQL tool's `variables` and `reconcile.match` (`agent_core.http.address`;
  `country` when the text names none). An address that cannot be split is refused before the customer is asked to
  confirm, with the hint to write it as "street, city, postcode".
- `probe_args`: arguments for `stepwise tools check --probe` (a catalog tool has defaults);
  validated against the arguments at load.

`[customer]`: who the asking Telegram user is at the shop, for tools keyed by the customer:
a lookup (GET or GraphQL), its `owner`, the `fields` `id`/`email` that `{customer.id}` and
`{customer.email}` fill in a tool's `url`, `query` and `body`, `ttl_s` and the `link` text
an unlinked customer reads, and `claim`, where the `/start <token>` of the shop's "Link
Telegram" deep link is handed over (`agent_core.http.customer`). Using either placeholder, or
`response.owner_is = "customer"`, without the table is refused at load.

`[http]`: `headers` sent on every request, where `${VAR}` is taken from the environment at
load; `query`: query-string parameters sent on every request, the same way, for hosts that
strip the Authorization header (WooCommerce's `consumer_key`/`consumer_secret`): refused
unless every url of the file is https:// (a key in a plain http url is readable on the
way); `probe_user_id` (default 0) is the X-Stepwise-User a probe sends.

- `note`: `{ url = "...", body = { ... } }`, a POST sent after a change succeeded, to leave
  a record at the backend (WooCommerce's order notes); its body may use the arguments and
  `{idempotency_key}`. Best effort: it never fails the change, which already happened; a
  failed note is logged. Not sent when a change is found by its reconcile read.

Every header and query value is treated as a secret: kept as `SecretStr`, never logged, and removed
from every message this module produces (an upstream that echoes a header back included;
values under 4 characters are not worth hiding and would garble the messages). A secret
is removed before any message is clipped, and so is any piece of a header's or query's
secret of 6 or more characters, in any letter case, base64, percent-encoded or spelled out
with spaces, dashes or dots (an upstream that echoes the key it refused, in whatever form:
`agent_core.redaction`).

`load_tools_config` stops at the first problem (one line: file, tool, field, problem);
`check_tools_file` reads the whole file and returns every problem, one line each.

One idea, the tools file read and checked, which is long because every rule of it says
its own problem; a declaration's own parts are checked in `declare`, mappings in `mapping`.
"""

from __future__ import annotations

import os
import re
import string
import tomllib
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Any, Final, NoReturn
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from agent_core.catalog.builtin import CATALOG
from agent_core.catalog.spec import ToolSpec
from agent_core.execution.tools import DEFAULT_SETTLE_S
from agent_core.http.address import ADDRESS_PARTS
from agent_core.http.customer import (
    CUSTOMER_FIELDS,
    NOT_LINKED,
    CustomerLookup,
    customer_templates,
    uses_customer,
)
from agent_core.http.declare import DECLARATION_KEYS, Problem, declare
from agent_core.http.graphql import GraphQLTool
from agent_core.http.mapping import IDEMPOTENCY_KEY, ErrorMapping, ReconcileRead, ResponseMapping
from agent_core.models import Idempotency, Risk
from agent_core.redaction import Redactor

# httpx is imported where it is used: importing it costs ~0.1 s at every start (the
# package loads its own command line), and only a shop with a tools file needs it.

DEFAULT_TIMEOUT_S: Final = 5.0
MAX_TIMEOUT_S: Final = 60.0
DEFAULT_MAX_RETRIES: Final = 2
MAX_RETRIES_LIMIT: Final = 10
MAX_SETTLE_S: Final = 600.0
# Shorter header values (a version number) are not redacted: it would garble every message.
MIN_SECRET_CHARS: Final = 4
METHODS: Final = ("GET", "POST", "PUT", "PATCH", "DELETE")
# Set per request from the ToolContext; a config header must not be able to fake them.
RESERVED_HEADERS: Final = frozenset({"x-stepwise-user", "x-stepwise-trace", "idempotency-key"})

_VAR = re.compile(r"\$\{([^}]*)\}")
_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_HEADER_VALUE = re.compile(r"[\x20-\x7e\t]*")


class ToolsConfigError(ValueError):
    """A bad tools file. `str()` is one line: the file, the tool (or section), the problem."""


class HttpToolConfig(BaseModel):
    """One configured tool, validated; holds no secret."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    method: str
    url: str
    placeholders: tuple[str, ...]
    timeout_s: float
    max_retries: int
    risk: Risk
    probe_args: dict[str, Any] | None
    body: Any = None
    query: dict[str, Any] | None = None
    response: ResponseMapping | None = None
    errors: ErrorMapping | None = None
    check_first: str | None = None
    # What the backend does with a repeated Idempotency-Key (a read tool: irrelevant).
    idempotency: Idempotency = Idempotency.IGNORED
    reconcile: ReconcileRead | None = None
    reconcile_placeholders: tuple[str, ...] = ()
    settle_s: float = DEFAULT_SETTLE_S
    # The GraphQL operation the request sends (`agent_core.http.graphql`), if it is one.
    graphql: GraphQLTool | None = None
    address_parts: AddressParts | None = None
    note: FollowUp | None = None
    note_placeholders: tuple[str, ...] = ()
    # Whether the request needs the asking customer (`{customer.id}`, `{customer.email}`,
    # or `response.owner_is = "customer"`): resolved by the `[customer]` lookup first.
    customer_keyed: bool = False
    # Its catalog entry: the built-in one, or the one the file declares.
    spec: ToolSpec = Field(exclude=True, repr=False)


class ToolsConfig(BaseModel):
    """A loaded tools file. Header values are `SecretStr`, so reprs and dumps hide them."""

    model_config = ConfigDict(frozen=True)

    source: str
    tools: tuple[HttpToolConfig, ...]
    headers: dict[str, SecretStr]
    # Query-string parameters of every request (secrets; https only).
    query: dict[str, SecretStr] = Field(default_factory=dict)
    probe_user_id: int = 0
    # `[customer]`: who the asking Telegram user is at the shop (`agent_core.http.customer`).
    customer: CustomerLookup | None = None
    # Every header value and every substituted variable, for `redact`.
    secrets: tuple[SecretStr, ...] = ()
    # The values any piece of which is a secret too: the substituted variables (and a
    # header value written without any), not the words around them ("Bearer").
    piece_secrets: tuple[SecretStr, ...] = ()

    @cached_property
    def _redactor(self) -> Redactor:
        return Redactor(
            (s.get_secret_value() for s in self.piece_secrets),
            whole=(v for s in self.secrets if len(v := s.get_secret_value()) >= MIN_SECRET_CHARS),
        )

    def redact(self, text: str) -> str:
        """`text` with every secret replaced whole, and every piece of a `piece_secrets`
        value in any of its forms (`agent_core.redaction`). Run it BEFORE clipping: a
        clipped secret is no longer found whole."""
        return self._redactor(text)

    def url_secrets(self) -> tuple[str, ...]:
        """The secrets a request url carries (the query values, also percent-encoded), for
        whoever logs urls (httpx does, at INFO) to blank them out."""
        values = [s.get_secret_value() for s in self.query.values()]
        return tuple(dict.fromkeys([*values, *(quote(v, safe="") for v in values)]))

    def catalog(self) -> dict[str, ToolSpec]:
        """The catalog entries of the configured tools (declared ones included)."""
        return {tool.name: tool.spec for tool in self.tools}


# ---------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------


class AddressParts(BaseModel):
    """`address_parts`: which argument is the one-line address, and the default country."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    arg: str
    country: str = Field(pattern=r"^[A-Z]{2}$")


class FollowUp(BaseModel):
    """`note`: the POST recording a change at the backend (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str
    body: dict[str, Any]


class _RawTool(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str
    method: str = "GET"
    timeout_s: float = Field(DEFAULT_TIMEOUT_S, gt=0, le=MAX_TIMEOUT_S)
    max_retries: int = Field(DEFAULT_MAX_RETRIES, ge=0, le=MAX_RETRIES_LIMIT)
    risk: Risk | None = None
    probe_args: dict[str, Any] | None = None
    body: dict[str, Any] | None = None
    query: dict[str, str | int | float | bool] | None = None
    response: ResponseMapping | None = None
    errors: ErrorMapping | None = None
    check_first: str | None = None
    idempotency: Idempotency | None = None
    reconcile: ReconcileRead | None = None
    settle_s: float = Field(DEFAULT_SETTLE_S, gt=0, le=MAX_SETTLE_S)
    graphql: GraphQLTool | None = None
    address_parts: AddressParts | None = None
    note: FollowUp | None = None


class _RawHttp(BaseModel):
    model_config = ConfigDict(extra="forbid")

    headers: dict[str, str] = Field(default_factory=dict)
    query: dict[str, str] = Field(default_factory=dict)
    probe_user_id: int = Field(0, ge=0)


class _Problem(Exception):
    """A config problem found below the level that knows the file and the tool."""


class _Stop(Exception):
    """This part of the file has a problem (recorded); go on with the next part."""


class _Problems:
    """Every problem of one file, each one line: file, where (tool and field), what."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines: list[str] = []

    def note(self, where: str, problem: str) -> None:
        self.lines.append(" ".join(f"{self.source}: {where}: {problem}".split()))

    def fail(self, where: str, problem: str) -> NoReturn:
        self.note(where, problem)
        raise _Stop


def load_tools_config(path: str | Path, env: Mapping[str, str] | None = None) -> ToolsConfig:
    """Read and validate a tools file; the first problem raises `ToolsConfigError` (one line)."""
    config, problems = _load(path, env)
    if problems:
        raise ToolsConfigError(problems[0])
    assert config is not None
    return config


def check_tools_file(
    path: str | Path, env: Mapping[str, str] | None = None
) -> tuple[ToolsConfig | None, list[str]]:
    """The whole file checked: the config (None if any problem) and every problem line."""
    config, problems = _load(path, env)
    return (None if problems else config), problems


def _load(path: str | Path, env: Mapping[str, str] | None) -> tuple[ToolsConfig | None, list[str]]:
    source = str(path)
    problems = _Problems(source)
    try:
        raw = _read_toml(Path(path), problems)
    except _Stop:
        return None, problems.lines
    customer = _parse_customer(raw, problems)
    tools = _parse_tools(raw, problems, customer)
    environ = os.environ if env is None else env
    headers, found, partial = _parse_http(raw, problems, environ)
    query, in_query = _parse_query(raw, problems, environ, tools, customer)
    if problems.lines:
        return None, problems.lines
    return (
        ToolsConfig(
            source=source,
            tools=tuple(tools),
            headers=headers,
            query=query,
            probe_user_id=int(raw.get("http", {}).get("probe_user_id", 0)),
            customer=customer,
            secrets=tuple(SecretStr(value) for value in [*found, *in_query]),
            piece_secrets=tuple(SecretStr(value) for value in [*partial, *in_query]),
        ),
        [],
    )


def _parse_customer(raw: dict[str, Any], problems: _Problems) -> CustomerLookup | None:
    """The `[customer]` lookup (`agent_core.http.customer`), if the file declares one."""
    import httpx

    table = raw.get("customer")
    if table is None:
        return None
    try:
        if not isinstance(table, dict):
            problems.fail("[customer]", "must be a table")
        try:
            lookup = CustomerLookup.model_validate(table)
        except ValidationError as exc:
            problems.fail("[customer]", _describe(exc))
        try:
            parsed = httpx.URL(lookup.url)
        except httpx.InvalidURL as exc:
            problems.fail("[customer]", f"url: not a valid url ({exc})")
        if parsed.scheme not in ("http", "https") or not parsed.host or "{" in lookup.url:
            problems.fail("[customer]", "url: an absolute http(s) url without placeholders")
        if lookup.claim is not None:
            # The token goes in the body only: a url is logged (httpx, proxies, the shop's
            # access log), so no placeholder may put it there.
            try:
                claimed = httpx.URL(lookup.claim.url)
            except httpx.InvalidURL as exc:
                problems.fail("[customer]", f"claim.url: not a valid url ({exc})")
            if (
                claimed.scheme not in ("http", "https")
                or not claimed.host
                or "{" in lookup.claim.url
            ):
                problems.fail(
                    "[customer]",
                    "claim.url: an absolute http(s) url without placeholders "
                    "(the token goes in the body)",
                )
    except _Stop:
        return None
    return lookup


def _parse_tools(
    raw: dict[str, Any], problems: _Problems, customer: CustomerLookup | None = None
) -> list[HttpToolConfig]:
    for section in sorted(set(raw) - {"tools", "http", "customer"}):
        problems.note(section, "unknown section (expected [tools.<name>], [http] and [customer])")
    tables = raw.get("tools")
    if not isinstance(tables, dict) or not tables:
        problems.note("[tools]", "no tools configured (expected [tools.<name>] tables)")
        return []
    tools: list[HttpToolConfig] = []
    for name, entry in tables.items():
        try:
            tools.append(_parse_tool(problems, name, entry, customer))
        except _Stop:
            continue
    _check_references(tools, problems)
    return tools


def _check_references(tools: list[HttpToolConfig], problems: _Problems) -> None:
    """What one tool says about another: `check_first` and the rules' `after`."""
    by_name = {tool.name: tool for tool in tools}
    known = set(CATALOG) | set(by_name)
    for tool in tools:
        try:
            first = tool.check_first
            if first is not None:
                other = by_name.get(first)
                if other is None or other.method != "GET" or other.risk is not Risk.READ:
                    problems.fail(
                        f"tool {tool.name}",
                        f"check_first: {first!r} is not a configured read tool using GET",
                    )
                needs = {
                    n for n, f in other.spec.args_model.model_fields.items() if f.is_required()
                }
                missing = sorted(needs - set(tool.spec.args_model.model_fields))
                if missing:
                    problems.fail(
                        f"tool {tool.name}",
                        f"check_first: {first} needs {', '.join(missing)}, which this tool lacks",
                    )
            for n, skip in enumerate(tool.spec.skip_rules):
                if skip.after_tool not in known:
                    problems.fail(
                        f"tool {tool.name}", f"rules.{n}.after: no tool named {skip.after_tool!r}"
                    )
        except _Stop:
            continue


def _read_toml(path: Path, problems: _Problems) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        problems.fail("file", f"cannot read it ({exc.strerror or type(exc).__name__})")
    except tomllib.TOMLDecodeError as exc:
        problems.fail("file", f"TOML syntax error: {exc}")
    except UnicodeDecodeError as exc:
        problems.fail("file", f"not UTF-8 text (byte {exc.start} is {exc.object[exc.start]:#04x})")


def _parse_tool(
    problems: _Problems, name: str, entry: Any, customer: CustomerLookup | None = None
) -> HttpToolConfig:
    """Validate one `[tools.<name>]` table: its request mapping, and its declaration when
    the catalog does not know `name`."""
    where = f"tool {name}"
    if not isinstance(entry, dict):
        problems.fail(where, "must be a table")
    declared = {k: v for k, v in entry.items() if k in DECLARATION_KEYS}
    request = {
        k: customer_templates(v) if k in ("url", "query", "body") else v
        for k, v in entry.items()
        if k not in DECLARATION_KEYS
    }
    spec = _spec(problems, where, name, declared, request.get("risk"))
    try:
        raw = _RawTool.model_validate(request)
        method = _check_method(raw.method)
        keyed = uses_customer(raw.url, raw.query, raw.body) or (
            raw.response is not None and raw.response.owner_is == "customer"
        )
        if keyed and customer is None:
            raise _Problem(
                '{customer.id}, {customer.email} and owner_is = "customer" need the '
                "[customer] lookup (who the asking customer is at the shop)"
            )
        placeholders = _check_url(raw.url, name, spec.args_model, customer=keyed)
        risk = _check_risk(raw.risk or spec.risk, spec, method)
        probe_args = _check_probe_args(raw.probe_args, spec, risk)
        if raw.body is not None and method == "GET":
            raise _Problem("body: a GET sends no body (write `query` instead)")
        if raw.query is not None and method != "GET":
            raise _Problem("query: only a GET sends a query string (write `body` instead)")
        _check_declared(name, method, risk, raw, declared)
        _check_address_parts(raw, spec)
        reconcile_placeholders = _check_reconcile(raw, name, spec, risk)
        _check_graphql(raw, method, spec)
        note_placeholders = _check_note(raw, name, spec, risk)
    except ValidationError as exc:
        problems.fail(where, _describe(exc))
    except _Problem as exc:
        problems.fail(where, str(exc))
    return HttpToolConfig(
        name=name,
        method=method,
        url=raw.url,
        placeholders=placeholders,
        timeout_s=raw.timeout_s,
        max_retries=raw.max_retries,
        risk=risk,
        probe_args=probe_args,
        body=raw.body,
        query=raw.query,
        response=raw.response,
        errors=raw.errors,
        check_first=raw.check_first,
        idempotency=raw.idempotency or Idempotency.IGNORED,
        reconcile=raw.reconcile,
        reconcile_placeholders=reconcile_placeholders,
        settle_s=raw.settle_s,
        graphql=raw.graphql,
        address_parts=raw.address_parts,
        note=raw.note,
        note_placeholders=note_placeholders,
        customer_keyed=keyed,
        spec=_with_link(spec, customer) if keyed else spec,
    )


def _with_link(spec: ToolSpec, customer: CustomerLookup | None) -> ToolSpec:
    """A customer-keyed tool's entry, with what an unlinked customer is told (`link`)."""
    if customer is None or customer.link is None or NOT_LINKED in spec.refusals:
        return spec
    return spec.model_copy(update={"refusals": {**spec.refusals, NOT_LINKED: customer.link}})


def _check_declared(
    name: str, method: str, risk: Risk, raw: _RawTool, declared: Mapping[str, Any]
) -> None:
    """Nothing that changes data rests on a default (see "Safe defaults"): a forgotten line
    is refused, naming the field, instead of running unconfirmed or being retried twice."""
    if method != "GET" and name not in CATALOG:
        if raw.risk is None:
            raise _Problem(
                f'risk: missing: a {method} tool must say what it risks (risk = "read" or '
                '"high"); it is never assumed to change nothing'
            )
        if risk is Risk.HIGH and "approval" not in declared:
            raise _Problem(
                'approval: missing: say who confirms this change (approval = "customer")'
            )
    if risk is Risk.HIGH and raw.idempotency is None:
        raise _Problem(
            "idempotency: missing: say whether the backend replays a request whose "
            'Idempotency-Key it has seen (idempotency = "honoured") or acts again '
            '(idempotency = "ignored")'
        )
    if raw.idempotency is not None and method == "GET":
        raise _Problem("idempotency: a GET changes nothing (only a change declares it)")


def _check_address_parts(raw: _RawTool, spec: ToolSpec) -> None:
    parts = raw.address_parts
    if parts is not None and parts.arg not in spec.args_model.model_fields:
        raise _Problem(
            f"address_parts.arg: {parts.arg!r} is not an argument of {spec.name} "
            f"(arguments: {', '.join(sorted(spec.args_model.model_fields))})"
        )


def _check_note(raw: _RawTool, name: str, spec: ToolSpec, risk: Risk) -> tuple[str, ...]:
    if raw.note is None:
        return ()
    if risk is not Risk.HIGH:
        raise _Problem('note: only a change (risk = "high") leaves a note')
    try:
        return _check_url(raw.note.url, name, spec.args_model)
    except _Problem as exc:
        raise _Problem(f"note.{exc}") from None


def _check_reconcile(raw: _RawTool, name: str, spec: ToolSpec, risk: Risk) -> tuple[str, ...]:
    """The reconcile read's url placeholders; it belongs to a change at a backend that
    ignores the key, and its `match` may name only arguments and the idempotency key."""
    read = raw.reconcile
    if read is None:
        return ()
    if risk is not Risk.HIGH or raw.idempotency is not Idempotency.IGNORED:
        raise _Problem(
            'reconcile: only a change whose backend ignores the key (idempotency = "ignored") '
            "is reconciled"
        )
    try:
        found = _check_url(read.url, name, spec.args_model)
    except _Problem as exc:
        raise _Problem(f"reconcile.{exc}") from None
    allowed = {*spec.args_model.model_fields, IDEMPOTENCY_KEY}
    if raw.address_parts is not None:
        allowed |= set(ADDRESS_PARTS)
    unknown = sorted(read.names() - allowed)
    if unknown:
        raise _Problem(
            f"reconcile.match: {{{unknown[0]}}} is neither an argument of {name} nor "
            f"{{{IDEMPOTENCY_KEY}}}"
        )
    return found


def _check_graphql(raw: _RawTool, method: str, spec: ToolSpec) -> None:
    """A GraphQL tool POSTs its operation (no `body`, no `query`); its placeholders are its
    arguments, the key and what its lookup binds; its reconcile read is a query too."""
    graphql = raw.graphql
    if graphql is None:
        return
    if method != "POST":
        raise _Problem('graphql: a GraphQL operation is sent with method = "POST"')
    if raw.body is not None:
        raise _Problem("graphql: the body is the operation (leave `body` out)")
    names = set(spec.args_model.model_fields)
    if raw.address_parts is not None:
        names |= set(ADDRESS_PARTS)
    try:
        graphql.check(names)
    except ValueError as exc:
        raise _Problem(f"graphql.{exc}") from None
    if (raw.reconcile is None) != (graphql.reconcile is None):
        raise _Problem(
            "graphql.reconcile: a GraphQL change is reconciled by a query: write both "
            "`reconcile` (url, match) and `graphql.reconcile` (query, variables, root)"
        )


def _spec(
    problems: _Problems, where: str, name: str, declared: dict[str, Any], risk: Any
) -> ToolSpec:
    """The catalog's entry for `name`, or the one the table declares."""
    known = CATALOG.get(name)
    if known is not None:
        if declared:
            key = sorted(declared)[0]
            problems.fail(
                where, f"{key}: {name} is declared by stepwise; only its request belongs here"
            )
        return known
    if not declared:
        problems.fail(
            where,
            f"unknown tool (known: {', '.join(sorted(CATALOG))}; "
            "or declare it here: description, goal, args, risk, result, templates)",
        )
    try:
        return declare(name, declared, Risk(risk) if risk in ("read", "high") else None)
    except Problem as exc:
        problems.fail(where, f"{exc.field}: {exc}")


def _describe(exc: ValidationError) -> str:
    # Messages only: pydantic's `input_value` could be a secret.
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "value"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def _check_method(method: str) -> str:
    upper = method.upper()
    if upper not in METHODS:
        raise _Problem(f"method {method!r} is not one of {', '.join(METHODS)}")
    return upper


def _check_url(
    url: str, tool: str, args_model: type[BaseModel], *, customer: bool = False
) -> tuple[str, ...]:
    """The url's placeholders, each a plain argument of the tool (or, with `customer`,
    `{customer.id}` / `{customer.email}`); the url must be http(s)."""
    import httpx

    if "${" in url:
        raise _Problem("url: ${VAR} is only substituted in [http] headers; put secrets there")
    try:
        parts = list(string.Formatter().parse(url))
    except ValueError as exc:
        raise _Problem(f"url: bad placeholder syntax ({exc})") from None
    allowed = sorted(args_model.model_fields)
    if customer:
        allowed += list(CUSTOMER_FIELDS.values())
    names: list[str] = []
    for _, field, spec, conversion in parts:
        if field is None:
            continue
        if field not in allowed:
            raise _Problem(
                f"url: placeholder {{{field}}} is not an argument of {tool} "
                f"(arguments: {', '.join(allowed)})"
            )
        if spec or conversion:
            raise _Problem(f"url: placeholder {{{field}}} takes no format spec or conversion")
        names.append(field)
    try:
        parsed = httpx.URL(url.format_map(dict.fromkeys(names, "x")))
    except httpx.InvalidURL as exc:
        raise _Problem(f"url: not a valid url ({exc})") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise _Problem("url: must be an absolute http:// or https:// url")
    if parsed.userinfo:
        raise _Problem("url: no credentials in the url (it is printed and logged); use headers")
    return tuple(dict.fromkeys(names))


def _check_risk(risk: Risk, known: ToolSpec, method: str) -> Risk:
    """The configured risk: never below the catalog's, never a GET when high."""
    if known.risk is Risk.HIGH and risk is not Risk.HIGH:
        raise _Problem('risk must be "high": this tool always asks the customer first')
    if risk is Risk.HIGH and method == "GET":
        raise _Problem("a high-risk tool must not use GET (a GET carries no Idempotency-Key)")
    return risk


def _check_probe_args(
    given: dict[str, Any] | None, known: ToolSpec, risk: Risk
) -> dict[str, Any] | None:
    if given is None:
        return dict(known.probe_args) if known.probe_args is not None else None
    if risk is Risk.HIGH:
        raise _Problem("probe_args: a high-risk tool is never probed")
    try:
        known.args_model.model_validate(given)
    except ValidationError as exc:
        raise _Problem(f"probe_args: {_describe(exc)}") from None
    return given


def _parse_http(
    raw: dict[str, Any], problems: _Problems, env: Mapping[str, str]
) -> tuple[dict[str, SecretStr], list[str], list[str]]:
    """The `[http]` headers with `${VAR}` substituted, every secret value they hold, and
    the values any piece of which is secret too (see `ToolsConfig.piece_secrets`)."""
    http = raw.get("http", {})
    headers: dict[str, SecretStr] = {}
    found: list[str] = []
    partial: list[str] = []
    try:
        if not isinstance(http, dict):
            problems.fail("[http]", "must be a table")
        try:
            settings = _RawHttp.model_validate(http)
        except ValidationError as exc:
            problems.fail("[http]", _describe(exc))
    except _Stop:
        return headers, found, partial
    for name, template in settings.headers.items():
        try:
            try:
                value, used = _header_value(name, template, env)
            except _Problem as exc:
                problems.fail(f"[http] headers.{name}", str(exc))
        except _Stop:
            continue
        headers[name] = SecretStr(value)
        found += [value, *used]
        partial += used or [value]
    return headers, found, partial


def _parse_query(
    raw: dict[str, Any],
    problems: _Problems,
    env: Mapping[str, str],
    tools: list[HttpToolConfig],
    customer: CustomerLookup | None = None,
) -> tuple[dict[str, SecretStr], list[str]]:
    """The `[http]` query parameters with `${VAR}` substituted, and their values (secrets).
    Refused when any url of the file could send them in the clear (http://)."""
    http = raw.get("http", {})
    wanted = http.get("query") if isinstance(http, dict) else None
    if not isinstance(wanted, dict) or not wanted:
        return {}, []
    plain = [
        (tool.name, url)
        for tool in tools
        for url in (tool.url, *(x.url for x in (tool.reconcile, tool.note) if x is not None))
        if not url.lower().startswith("https://")
    ]
    if customer is not None:
        for url in (customer.url, *(x.url for x in (customer.claim,) if x is not None)):
            if not url.lower().startswith("https://"):
                plain.append(("[customer]", url))
    if plain:
        name, url = plain[0]
        problems.note(
            "[http] query",
            f"keys in the query string are only sent over https://, and tool {name} "
            f"uses {url.split('://')[0]}:// (use https, or send the key in a header)",
        )
        return {}, []
    query: dict[str, SecretStr] = {}
    values: list[str] = []
    for name, template in wanted.items():
        try:
            try:
                value, used = _substitute(str(template), env)
            except _Problem as exc:
                problems.fail(f"[http] query.{name}", str(exc))
        except _Stop:
            continue
        query[name] = SecretStr(value)
        values += [value, *used]
    return query, values


def _header_value(name: str, template: str, env: Mapping[str, str]) -> tuple[str, list[str]]:
    if not _HEADER_NAME.fullmatch(name):
        raise _Problem("not a valid header name")
    if name.lower() in RESERVED_HEADERS:
        raise _Problem("is set by stepwise on every request and cannot be configured")
    return _substitute(template, env)


def _substitute(template: str, env: Mapping[str, str]) -> tuple[str, list[str]]:
    """`template` with every `${VAR}` taken from `env`, and the values used."""
    used: list[str] = []

    def substitute(match: re.Match[str]) -> str:
        var = match.group(1)
        if not _VAR_NAME.fullmatch(var):
            raise _Problem(f"${{{var}}} is not a valid variable name")
        value = env.get(var)
        if not value:
            raise _Problem(f"environment variable {var} is not set (or empty)")
        used.append(value)
        return value

    value = _VAR.sub(substitute, template)
    if "${" in _VAR.sub("", template):
        raise _Problem("unterminated ${ (write ${NAME})")
    if not _HEADER_VALUE.fullmatch(value):
        # Never echo the value: it may hold a secret.
        raise _Problem("value must be printable ASCII on one line (after ${VAR} substitution)")
    return value, used
