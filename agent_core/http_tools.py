"""The shop's three tools served by a real HTTP API instead of the built-in demo shop.

`STEPWISE_TOOLS=path/to/tools.toml` replaces the demo shop's tools with the ones built here.
The names, arguments (`shop.OrderArgs`, `shop.PolicyArgs`) and failure types stay the same,
so the planner, the policy and the answers do not know which backend they talk to.

Config file (see `examples/tools.toml`)
---------------------------------------
`[tools.<name>]`, one table per tool; `<name>` is `get_order_status`, `search_policy` or
`cancel_order` (anything else is an error; a tool left out is simply not registered):

- `url` (required): absolute http(s) url; `{arg}` placeholders must be fields of the tool's
  args model and are percent-encoded. `${VAR}` is not allowed here (secrets go in headers).
- `method`: GET (default), POST, PUT, PATCH or DELETE. Arguments not used by the url go to
  the query string for GET and to a JSON body otherwise.
- `timeout_s`: 5. The whole budget of one attempt (0 < t <= 60), Retry-After wait included.
- `max_retries`: 2 (0..10). How often the executor retries a transient failure.
- `risk`: "read" (default) or "high". `cancel_order` is always high: it defaults to "high" and
  "read" is rejected, so a forgotten or mistyped line can never remove the customer's
  confirmation. A high-risk tool is `idempotent=False` and must not use GET.
- `probe_args`: arguments for `stepwise tools check --probe` (default `{order_id = "A1001"}`
  or `{query = "refund"}`); validated against the args model at load.

`[http]`: `headers` sent on every request, where `${VAR}` is taken from the environment at
load; `probe_user_id` (default 0) is the X-Stepwise-User a probe sends.

Every header value is treated as a secret: kept as `SecretStr`, never logged, and removed
from every message this module produces (an upstream that echoes a header back included;
values under 4 characters are not worth hiding and would garble the messages).

Requests
--------
Every request carries `X-Stepwise-User` (the customer's Telegram user id) and
`X-Stepwise-Trace` (the run's trace id); every non-GET request also carries
`Idempotency-Key: <run_id>:<step_id>`, the same on every retry and after crash recovery.
The upstream owns authorisation: it must answer 403 (or 404) for another customer's order.

Responses
---------
======================================================  ===================================
2xx with a JSON body that keeps the contract            ok
2xx with no body, `null`, `[]`, `{}`, `{"results": []}`  empty_result (cancel_order: internal)
2xx that is not JSON, or breaks the contract            internal (the message names the field)
404                                                     not_found
401, 403                                                permission_denied
400, 409, 422                                           invalid_arguments
408; read, write or pool timeout                        timeout (retried)
429, 5xx; connection refused or broken                  unavailable (retried like timeout)
anything else (3xx too: redirects are not followed)     internal
======================================================  ===================================

The upstream's own error text is kept for staff in the failure message, cut to 300
characters; customers never see it (`answers` words every failure itself).

A transient answer with `Retry-After` (seconds or an HTTP date) is retried once inside the
same attempt, after waiting that long, when the wait is at most 10 s and still leaves half
of `timeout_s` for the retried request; otherwise it is reported at once and the
executor's backoff takes over. The retried request is the same request, idempotency key
included.

Response contracts
------------------
- `get_order_status`: `{"order_id": str, "status": "pending|shipping|delivered|cancelled",
  "eta"?: str | null, ...}`; extra fields are passed through.
- `search_policy`: `[{"title": str, "text": str}, ...]` or `{"results": [...]}`; the tool
  returns the list of `{"title", "text"}`.
- `cancel_order`: `{"order_id": str, "status": "cancelled", ...}`. An empty 2xx breaks this
  contract instead of being an empty result: a write whose outcome is unknown must stop
  for staff, not degrade into an answer that leaves it out.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import secrets
import string
import time
import tomllib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, NoReturn
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from agent_core.models import ErrorType, Risk
from agent_core.shop import OrderArgs, PolicyArgs
from agent_core.tools import Tool, ToolContext, ToolFailure

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S: Final = 5.0
MAX_TIMEOUT_S: Final = 60.0
DEFAULT_MAX_RETRIES: Final = 2
MAX_RETRIES_LIMIT: Final = 10
# Longest Retry-After honoured inside one attempt; a longer one is the executor's business.
RETRY_AFTER_CAP_S: Final = 10.0
# Bigger answers are refused unread: no shop answer to these three questions is that large.
MAX_BODY_BYTES: Final = 1 << 20
MESSAGE_LIMIT: Final = 300
# Shorter header values (a version number) are not redacted: it would garble every message.
MIN_SECRET_CHARS: Final = 4
MAX_CONNECTIONS: Final = 20
USER_AGENT: Final = "stepwise-http-tools/0.1"
METHODS: Final = ("GET", "POST", "PUT", "PATCH", "DELETE")
ORDER_STATUSES: Final = ("pending", "shipping", "delivered", "cancelled")
TRANSIENT: Final = frozenset({ErrorType.TIMEOUT, ErrorType.UNAVAILABLE})
# Set per request from the ToolContext; a config header must not be able to fake them.
RESERVED_HEADERS: Final = frozenset({"x-stepwise-user", "x-stepwise-trace", "idempotency-key"})

_VAR = re.compile(r"\$\{([^}]*)\}")
_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_HEADER_VALUE = re.compile(r"[\x20-\x7e\t]*")


@dataclass(frozen=True)
class KnownTool:
    """What the demo shop fixes about a tool: its arguments and how it may be configured."""

    args_model: type[BaseModel]
    description: str
    default_risk: Risk
    # None: never probed (a probe must be harmless).
    probe_args: Mapping[str, Any] | None


KNOWN_TOOLS: Final[Mapping[str, KnownTool]] = MappingProxyType(
    {
        "get_order_status": KnownTool(
            OrderArgs,
            "Look up the status, estimated delivery date and items of one of the customer's "
            "own orders.",
            Risk.READ,
            {"order_id": "A1001"},
        ),
        "search_policy": KnownTool(
            PolicyArgs,
            "Find the shop policies (delay compensation, returns and refunds, shipping, "
            "cancellation, exchanges) that match a topic, in Chinese or English.",
            Risk.READ,
            {"query": "refund"},
        ),
        "cancel_order": KnownTool(
            OrderArgs,
            "Cancel one of the customer's own orders that has not been delivered yet, after "
            "the customer has confirmed.",
            Risk.HIGH,
            None,
        ),
    }
)
# Tools that change something: an empty 2xx leaves their outcome unknown.
_WRITE_TOOLS: Final = frozenset({"cancel_order"})


class ToolsConfigError(ValueError):
    """A bad tools file. `str()` is one line: the file, the tool (or section), the problem."""


class HttpToolConfig(BaseModel):
    """One configured tool, validated; holds no secret."""

    model_config = ConfigDict(frozen=True)

    name: str
    method: str
    url: str
    placeholders: tuple[str, ...]
    timeout_s: float
    max_retries: int
    risk: Risk
    probe_args: dict[str, Any] | None


class ToolsConfig(BaseModel):
    """A loaded tools file. Header values are `SecretStr`, so reprs and dumps hide them."""

    model_config = ConfigDict(frozen=True)

    source: str
    tools: tuple[HttpToolConfig, ...]
    headers: dict[str, SecretStr]
    probe_user_id: int = 0
    # Every header value and every substituted variable, for `redact`.
    secrets: tuple[SecretStr, ...] = ()

    def redact(self, text: str) -> str:
        """`text` with every secret replaced, longest first (a token inside a header value)."""
        values = sorted((s.get_secret_value() for s in self.secrets), key=len, reverse=True)
        for value in values:
            if len(value) >= MIN_SECRET_CHARS:
                text = text.replace(value, "***")
        return text


# ---------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------


class _RawTool(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str
    method: str = "GET"
    timeout_s: float = Field(DEFAULT_TIMEOUT_S, gt=0, le=MAX_TIMEOUT_S)
    max_retries: int = Field(DEFAULT_MAX_RETRIES, ge=0, le=MAX_RETRIES_LIMIT)
    risk: Risk | None = None
    probe_args: dict[str, Any] | None = None


class _RawHttp(BaseModel):
    model_config = ConfigDict(extra="forbid")

    headers: dict[str, str] = Field(default_factory=dict)
    probe_user_id: int = Field(0, ge=0)


class _Problem(Exception):
    """A config problem found below the level that knows the file and the tool."""


def load_tools_config(path: str | Path, env: Mapping[str, str] | None = None) -> ToolsConfig:
    """Read and validate a tools file; any problem raises `ToolsConfigError` (one line)."""
    source = str(path)
    raw = _read_toml(Path(path), source)
    unknown = sorted(set(raw) - {"tools", "http"})
    if unknown:
        _fail(source, unknown[0], "unknown section (expected [tools.<name>] and [http])")
    tables = raw.get("tools")
    if not isinstance(tables, dict) or not tables:
        _fail(source, "[tools]", "no tools configured (expected [tools.<name>] tables)")
    tools = tuple(_parse_tool(source, name, entry) for name, entry in tables.items())
    http = raw.get("http", {})
    if not isinstance(http, dict):
        _fail(source, "[http]", "must be a table")
    try:
        settings = _RawHttp.model_validate(http)
    except ValidationError as exc:
        _fail(source, "[http]", _describe(exc))
    headers, found = _parse_headers(source, settings, os.environ if env is None else env)
    return ToolsConfig(
        source=source,
        tools=tools,
        headers=headers,
        probe_user_id=settings.probe_user_id,
        secrets=tuple(SecretStr(value) for value in found),
    )


def _read_toml(path: Path, source: str) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        _fail(source, "file", f"cannot read it ({exc.strerror or type(exc).__name__})")
    except tomllib.TOMLDecodeError as exc:
        _fail(source, "file", f"TOML syntax error: {exc}")


def _fail(source: str, where: str, problem: str) -> NoReturn:
    line = " ".join(f"{source}: {where}: {problem}".split())
    raise ToolsConfigError(line)


def _parse_tool(source: str, name: str, entry: Any) -> HttpToolConfig:
    """Validate one `[tools.<name>]` table against what the demo shop fixes for `name`."""
    where = f"tool {name}"
    known = KNOWN_TOOLS.get(name)
    if known is None:
        _fail(source, where, f"unknown tool (known: {', '.join(sorted(KNOWN_TOOLS))})")
    if not isinstance(entry, dict):
        _fail(source, where, "must be a table")
    try:
        raw = _RawTool.model_validate(entry)
        method = _check_method(raw.method)
        placeholders = _check_url(raw.url, name, known.args_model)
        risk = _check_risk(raw.risk or known.default_risk, known, method)
        probe_args = _check_probe_args(raw.probe_args, known, risk)
    except ValidationError as exc:
        _fail(source, where, _describe(exc))
    except _Problem as exc:
        _fail(source, where, str(exc))
    return HttpToolConfig(
        name=name,
        method=method,
        url=raw.url,
        placeholders=placeholders,
        timeout_s=raw.timeout_s,
        max_retries=raw.max_retries,
        risk=risk,
        probe_args=probe_args,
    )


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


def _check_url(url: str, tool: str, args_model: type[BaseModel]) -> tuple[str, ...]:
    """The url's placeholders, each a plain argument of the tool; the url must be http(s)."""
    if "${" in url:
        raise _Problem("url: ${VAR} is only substituted in [http] headers; put secrets there")
    try:
        parts = list(string.Formatter().parse(url))
    except ValueError as exc:
        raise _Problem(f"url: bad placeholder syntax ({exc})") from None
    allowed = sorted(args_model.model_fields)
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


def _check_risk(risk: Risk, known: KnownTool, method: str) -> Risk:
    if known.default_risk is Risk.HIGH and risk is not Risk.HIGH:
        raise _Problem('risk must be "high": this tool always asks the customer first')
    if risk is Risk.HIGH and method == "GET":
        raise _Problem("a high-risk tool must not use GET (a GET carries no Idempotency-Key)")
    return risk


def _check_probe_args(
    given: dict[str, Any] | None, known: KnownTool, risk: Risk
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


def _parse_headers(
    source: str, raw: _RawHttp, env: Mapping[str, str]
) -> tuple[dict[str, SecretStr], list[str]]:
    """The `[http]` headers with `${VAR}` substituted, and every secret value they hold."""
    headers: dict[str, SecretStr] = {}
    found: list[str] = []
    for name, template in raw.headers.items():
        try:
            value, used = _header_value(name, template, env)
        except _Problem as exc:
            _fail(source, f"[http] headers.{name}", str(exc))
        headers[name] = SecretStr(value)
        found += [value, *used]
    return headers, found


def _header_value(name: str, template: str, env: Mapping[str, str]) -> tuple[str, list[str]]:
    if not _HEADER_NAME.fullmatch(name):
        raise _Problem("not a valid header name")
    if name.lower() in RESERVED_HEADERS:
        raise _Problem("is set by stepwise on every request and cannot be configured")
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


# ---------------------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HttpOutcome:
    """What one HTTP exchange means to the executor: data, or a typed failure."""

    status: int | None  # None when no response arrived
    data: Any = None
    error_type: ErrorType | None = None
    message: str = ""
    retry_after_s: float | None = None

    @property
    def ok(self) -> bool:
        return self.error_type is None

    @property
    def transient(self) -> bool:
        return self.error_type in TRANSIENT


_STATUS_ERRORS: Final[Mapping[int, ErrorType]] = MappingProxyType(
    {
        400: ErrorType.INVALID_ARGUMENTS,
        401: ErrorType.PERMISSION_DENIED,
        403: ErrorType.PERMISSION_DENIED,
        404: ErrorType.NOT_FOUND,
        408: ErrorType.TIMEOUT,
        409: ErrorType.INVALID_ARGUMENTS,  # e.g. the order can no longer be cancelled
        422: ErrorType.INVALID_ARGUMENTS,
        429: ErrorType.UNAVAILABLE,
    }
)


def map_response(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    tool: str | None = None,
    now: datetime | None = None,
) -> HttpOutcome:
    """The meaning of one response (see the module table). Pure, and never raises.

    `tool` selects the response contract to check; `now` is for an HTTP-date Retry-After.
    """
    if 200 <= status < 300:
        return _map_success(status, body, tool)
    error_type = _STATUS_ERRORS.get(status)
    if error_type is None:
        error_type = ErrorType.UNAVAILABLE if 500 <= status < 600 else ErrorType.INTERNAL
    retry_after = _retry_after(headers, now) if error_type in TRANSIENT else None
    detail = _upstream_detail(body)
    message = f"upstream answered HTTP {status}" + (f": {detail}" if detail else "")
    if retry_after is not None:
        message += f" (Retry-After {retry_after:g}s)"
    return HttpOutcome(status, error_type=error_type, message=message, retry_after_s=retry_after)


def _map_success(status: int, body: bytes, tool: str | None) -> HttpOutcome:
    data: Any = None
    if body.strip():
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            return HttpOutcome(
                status,
                error_type=ErrorType.INTERNAL,
                message=f"upstream answered HTTP {status} with a body that is not JSON",
            )
    if tool not in _WRITE_TOOLS and _is_empty(data):
        return HttpOutcome(
            status,
            error_type=ErrorType.EMPTY_RESULT,
            message=f"upstream answered HTTP {status} with no results",
        )
    check = _CONTRACTS.get(tool or "")
    if check is None:
        return HttpOutcome(status, data=data)
    try:
        return HttpOutcome(status, data=check(data))
    except _Problem as exc:
        return HttpOutcome(
            status,
            error_type=ErrorType.INTERNAL,
            message=f"{tool} response breaks the contract: {exc}",
        )


def _is_empty(data: Any) -> bool:
    if data is None or data == [] or data == {}:
        return True
    return isinstance(data, dict) and data.get("results") == []


def _check_order(data: Any) -> Any:
    if not isinstance(data, dict):
        raise _Problem("expected a JSON object with 'order_id' and 'status'")
    order_id = data.get("order_id")
    if not isinstance(order_id, str) or not order_id.strip():
        raise _Problem("'order_id' must be a non-empty string")
    if data.get("status") not in ORDER_STATUSES:
        raise _Problem(f"'status' must be one of {', '.join(ORDER_STATUSES)}")
    if data.get("eta") is not None and not isinstance(data["eta"], str):
        raise _Problem("'eta' must be a string or null")
    return data


def _check_cancel(data: Any) -> Any:
    if not isinstance(data, dict):
        raise _Problem("expected a JSON object with 'order_id' and 'status'")
    order_id = data.get("order_id")
    if not isinstance(order_id, str) or not order_id.strip():
        raise _Problem("'order_id' must be a non-empty string")
    if data.get("status") != "cancelled":
        raise _Problem("'status' must be 'cancelled'")
    return data


def _check_policies(data: Any) -> list[dict[str, str]]:
    items = data.get("results") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise _Problem("expected a list of {title, text} or {'results': [...]}")
    policies = []
    for index, item in enumerate(items):
        title = item.get("title") if isinstance(item, dict) else None
        text = item.get("text") if isinstance(item, dict) else None
        if not isinstance(title, str):
            raise _Problem(f"'results[{index}].title' must be a string")
        if not isinstance(text, str):
            raise _Problem(f"'results[{index}].text' must be a string")
        policies.append({"title": title, "text": text})
    return policies


_CONTRACTS: Final[Mapping[str, Callable[[Any], Any]]] = MappingProxyType(
    {
        "get_order_status": _check_order,
        "search_policy": _check_policies,
        "cancel_order": _check_cancel,
    }
)


def parse_retry_after(value: str, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After value (delta-seconds or HTTP date); None if bad."""
    value = value.strip()
    if re.fullmatch(r"[0-9]{1,10}", value):
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _retry_after(headers: Mapping[str, str], now: datetime | None) -> float | None:
    for name, value in headers.items():
        if name.lower() == "retry-after":
            return parse_retry_after(value, now)
    return None


def _upstream_detail(body: bytes) -> str:
    """The upstream's own error text, one line, at most MESSAGE_LIMIT characters."""
    try:
        data: Any = json.loads(body)
    except (ValueError, RecursionError):
        data = None
    text = body.decode("utf-8", errors="replace")
    if isinstance(data, dict):
        for key in ("message", "error", "detail", "title"):
            value = data.get(key)
            if isinstance(value, dict):
                value = value.get("message")
            if isinstance(value, str) and value.strip():
                text = value
                break
    return _clip(text)


def _clip(text: str) -> str:
    text = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "…"


# ---------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------


def new_client(config: ToolsConfig) -> httpx.AsyncClient:
    """The one connection pool every HTTP tool shares.

    Redirects are not followed: a redirected call is a misconfigured url (reported as
    internal), and following it could carry the credentials to another host.
    """
    longest = max((tool.timeout_s for tool in config.tools), default=DEFAULT_TIMEOUT_S)
    return httpx.AsyncClient(
        timeout=httpx.Timeout(longest),
        limits=httpx.Limits(
            max_connections=MAX_CONNECTIONS,
            max_keepalive_connections=MAX_CONNECTIONS // 2,
            keepalive_expiry=30.0,
        ),
        follow_redirects=False,
        headers={"User-Agent": USER_AGENT},
    )


def build_http_tools(
    config: ToolsConfig,
    client: httpx.AsyncClient,
    *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> list[Tool]:
    """One `Tool` per configured entry, all sending through `client`.

    `sleep` is the Retry-After wait (tests pass a recorder).
    """
    tools = []
    for spec in config.tools:
        known = KNOWN_TOOLS[spec.name]
        tools.append(
            Tool(
                name=spec.name,
                description=known.description,
                args_model=known.args_model,
                handler=_HttpTool(spec, config, client, sleep),
                risk=spec.risk,
                timeout_s=spec.timeout_s,
                idempotent=spec.risk is Risk.READ,
                max_retries=spec.max_retries,
            )
        )
    return tools


def _encode(value: Any) -> str:
    """A url placeholder value: percent-encoded, and never a `.`/`..` path segment."""
    encoded = quote(str(value), safe="")
    return encoded.replace(".", "%2E") if not encoded.strip(".") else encoded


def _build_request(
    client: httpx.AsyncClient,
    config: ToolsConfig,
    spec: HttpToolConfig,
    args: Mapping[str, Any],
    ctx: ToolContext,
    timeout_s: float,
) -> httpx.Request:
    url = spec.url.format_map({name: _encode(args[name]) for name in spec.placeholders})
    rest = {k: v for k, v in args.items() if k not in spec.placeholders and v is not None}
    headers = {"Accept": "application/json"}
    headers.update({name: value.get_secret_value() for name, value in config.headers.items()})
    headers["X-Stepwise-User"] = str(ctx.user_id)
    headers["X-Stepwise-Trace"] = ctx.trace_id
    if spec.method == "GET":
        return client.build_request(
            "GET", url, params=rest, headers=headers, timeout=httpx.Timeout(timeout_s)
        )
    headers["Idempotency-Key"] = ctx.idempotency_key
    return client.build_request(
        spec.method, url, json=rest, headers=headers, timeout=httpx.Timeout(timeout_s)
    )


class _BodyTooLarge(Exception):
    pass


async def _read_body(response: httpx.Response) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise _BodyTooLarge
    return bytes(body)


async def _exchange(client: httpx.AsyncClient, request: httpx.Request, tool: str) -> HttpOutcome:
    """Send one request and map what came back; transport trouble becomes a typed outcome."""
    try:
        response = await client.send(request, stream=True)
        try:
            body = await _read_body(response)
        finally:
            await response.aclose()
    except httpx.TimeoutException as exc:
        return HttpOutcome(None, error_type=ErrorType.TIMEOUT, message=_transport(exc))
    except httpx.TransportError as exc:
        return HttpOutcome(None, error_type=ErrorType.UNAVAILABLE, message=_transport(exc))
    except httpx.HTTPError as exc:
        return HttpOutcome(None, error_type=ErrorType.INTERNAL, message=_transport(exc))
    except _BodyTooLarge:
        return HttpOutcome(
            response.status_code,
            error_type=ErrorType.INTERNAL,
            message=f"upstream answer is larger than {MAX_BODY_BYTES} bytes",
        )
    return map_response(response.status_code, response.headers, body, tool=tool)


def _transport(exc: httpx.HTTPError) -> str:
    detail = _clip(str(exc))
    return f"no answer from upstream: {type(exc).__name__}" + (f" ({detail})" if detail else "")


class _HttpTool:
    """The handler of one configured tool: render, send, map, maybe honour Retry-After."""

    def __init__(
        self,
        spec: HttpToolConfig,
        config: ToolsConfig,
        client: httpx.AsyncClient,
        sleep: Callable[[float], Awaitable[None]],
    ) -> None:
        self._spec = spec
        self._config = config
        self._client = client
        self._sleep = sleep

    def __repr__(self) -> str:
        return f"<http tool {self._spec.name}: {self._spec.method} {self._spec.url}>"

    async def __call__(self, args: BaseModel, ctx: ToolContext) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._spec.timeout_s
        values = args.model_dump(mode="json")
        outcome = await self._attempt(values, ctx, deadline - loop.time())
        wait = outcome.retry_after_s
        if outcome.transient and wait is not None and self._fits(wait, deadline - loop.time()):
            await self._sleep(wait)
            outcome = await self._attempt(values, ctx, deadline - loop.time())
        if outcome.error_type is not None:
            raise ToolFailure(outcome.error_type, self._config.redact(outcome.message))
        return outcome.data

    def _fits(self, wait: float, remaining: float) -> bool:
        """Wait in-attempt only if capped and the retried request keeps half the budget."""
        return wait <= RETRY_AFTER_CAP_S and wait + self._spec.timeout_s / 2 <= remaining

    async def _attempt(
        self, values: Mapping[str, Any], ctx: ToolContext, budget_s: float
    ) -> HttpOutcome:
        request = _build_request(
            self._client, self._config, self._spec, values, ctx, max(budget_s, 0.001)
        )
        started = time.perf_counter()
        outcome = await _exchange(self._client, request, self._spec.name)
        log.info(
            "http tool %s: %s %s in %.0f ms",
            self._spec.name,
            self._spec.method,
            outcome.status if outcome.ok else f"{outcome.status} {outcome.error_type}",
            (time.perf_counter() - started) * 1000,
            extra={"trace_id": ctx.trace_id},
        )
        return outcome


# ---------------------------------------------------------------------------------------
# `stepwise tools check [--probe]`
# ---------------------------------------------------------------------------------------


async def check_tools(
    config: ToolsConfig,
    *,
    probe: bool,
    out: Callable[[str], None],
    client: httpx.AsyncClient | None = None,
) -> int:
    """List the configured tools; with `probe`, GET each read tool once. 0 if all is well.

    A probe passes on 2xx or 404 (the example order may not exist upstream). High-risk and
    non-GET tools are never probed: a probe must not change anything.
    """
    out(f"tools from {config.source}:")
    for spec in config.tools:
        out(
            f"  {spec.name}: {spec.method} {spec.url} risk={spec.risk.value} "
            f"timeout={spec.timeout_s:g}s max_retries={spec.max_retries}"
        )
    for name in sorted(set(KNOWN_TOOLS) - {spec.name for spec in config.tools}):
        out(f"  {name}: not configured (plans that need it stop with unknown_tool)")
    if not probe:
        return 0
    own = client is None
    pool = new_client(config) if client is None else client
    failed = 0
    try:
        for spec in config.tools:
            line, ok = await _probe(pool, config, spec)
            out(line)
            failed += 0 if ok else 1
    finally:
        if own:
            await pool.aclose()
    return 1 if failed else 0


async def _probe(
    client: httpx.AsyncClient, config: ToolsConfig, spec: HttpToolConfig
) -> tuple[str, bool]:
    """One probe line for `spec`, and whether it passed (a skipped tool passes)."""
    if spec.risk is Risk.HIGH or spec.method != "GET" or spec.probe_args is None:
        return f"  {spec.name}: not probed ({spec.risk.value} risk, {spec.method})", True
    args = KNOWN_TOOLS[spec.name].args_model.model_validate(spec.probe_args)
    ctx = ToolContext(
        user_id=config.probe_user_id,
        trace_id=f"probe-{secrets.token_hex(4)}",
        run_id="probe",
        step_id=spec.name,
    )
    request = _build_request(
        client, config, spec, args.model_dump(mode="json"), ctx, spec.timeout_s
    )
    started = time.perf_counter()
    try:
        response = await client.send(request, stream=True)
        await response.aclose()
    except httpx.HTTPError as exc:
        return f"  {spec.name}: probe FAILED: {config.redact(_transport(exc))}", False
    latency_ms = (time.perf_counter() - started) * 1000
    ok = 200 <= response.status_code < 300 or response.status_code == 404
    verdict = "ok" if ok else "FAILED"
    return f"  {spec.name}: probe HTTP {response.status_code} in {latency_ms:.0f} ms {verdict}", ok
