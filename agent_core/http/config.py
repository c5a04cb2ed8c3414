"""Loading a tools file: `STEPWISE_TOOLS=path/to/tools.toml`, validated against the catalog.

Config file (see `examples/tools.toml`)
---------------------------------------
`[tools.<name>]`, one table per tool; `<name>` is a tool of `agent_core.catalog` (today
`get_order_status`, `search_policy` and `cancel_order`; anything else is an error; a tool
left out is simply not registered). Its arguments and lowest risk come from the catalog:

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
"""

from __future__ import annotations

import os
import re
import string
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, NoReturn

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from agent_core.catalog import CATALOG, ToolSpec
from agent_core.models import Risk

DEFAULT_TIMEOUT_S: Final = 5.0
MAX_TIMEOUT_S: Final = 60.0
DEFAULT_MAX_RETRIES: Final = 2
MAX_RETRIES_LIMIT: Final = 10
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
    """Validate one `[tools.<name>]` table against the catalog's entry for `name`."""
    where = f"tool {name}"
    known = CATALOG.get(name)
    if known is None:
        _fail(source, where, f"unknown tool (known: {', '.join(sorted(CATALOG))})")
    if not isinstance(entry, dict):
        _fail(source, where, "must be a table")
    try:
        raw = _RawTool.model_validate(entry)
        method = _check_method(raw.method)
        placeholders = _check_url(raw.url, name, known.args_model)
        risk = _check_risk(raw.risk or known.risk, known, method)
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


def _check_risk(risk: Risk, known: ToolSpec, method: str) -> Risk:
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
