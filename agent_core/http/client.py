"""The HTTP tools themselves: one shared connection pool, request building, and the
handler that sends, maps the answer (`responses.map_response`) and may honour Retry-After.

A tool with `check_first` calls that read tool (same arguments) before its own request and
sends nothing when it fails: the read's failure (not found, not yours) is the answer.

Requests
--------
Every request carries `X-Stepwise-User` (the customer's Telegram user id) and
`X-Stepwise-Trace` (the run's trace id); every non-GET request also carries
`Idempotency-Key: <run_id>:<step_id>`, the same on every retry and after crash recovery.
The upstream owns authorisation: it must answer 403 (or 404) for another customer's order.

Exactly once (issue 20): a write's failure says whether the request may have reached the
upstream (`ToolFailure.may_have_happened`): not when the connection was never made (a
connect error or timeout, no free connection) or the `check_first` read failed, so that
retry is safe; yes after a read timeout, a connection lost after sending, or a 5xx. A tool
whose upstream ignores the key gets its `reconcile` read as the tool's reconcile handler.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticCustomError

from agent_core.execution.tools import Tool, ToolContext, ToolFailure
from agent_core.http.address import split_address
from agent_core.http.config import DEFAULT_TIMEOUT_S, AddressParts, HttpToolConfig, ToolsConfig
from agent_core.http.customer import (
    NOT_LINKED,
    Customer,
    CustomerCache,
    CustomerLookup,
    LinkOutcome,
)
from agent_core.http.graphql import Lookup, Operation, Reconcile, read_answer
from agent_core.http.mapping import IDEMPOTENCY_KEY, ReconcileRead, render_body
from agent_core.http.responses import HttpOutcome, Reading, clip, map_response
from agent_core.models import ErrorType, Idempotency, Risk

# httpx is imported where it is used: importing it costs ~0.1 s at every start (the
# package loads its own command line), and only a shop with a tools file needs it.
if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

# Longest Retry-After honoured inside one attempt; a longer one is the executor's business.
RETRY_AFTER_CAP_S: Final = 10.0
# Bigger answers are refused unread: no shop answer to these three questions is that large.
MAX_BODY_BYTES: Final = 1 << 20
MAX_CONNECTIONS: Final = 20
USER_AGENT: Final = "stepwise-http-tools/0.1"


def new_client(config: ToolsConfig) -> httpx.AsyncClient:
    """The one connection pool every HTTP tool shares.

    Redirects are not followed: a redirected call is a misconfigured url (reported as
    internal), and following it could carry the credentials to another host.
    """
    import httpx

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


def customer_directory(
    config: ToolsConfig, client: httpx.AsyncClient, clock: Callable[[], float] = time.monotonic
) -> CustomerDirectory | None:
    """The `[customer]` lookup and its cache, if the file declares one (None otherwise)."""
    if config.customer is None:
        return None
    return CustomerDirectory(config.customer, config, client, clock)


def build_http_tools(
    config: ToolsConfig,
    client: httpx.AsyncClient,
    *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    clock: Callable[[], float] = time.monotonic,
    customers: CustomerDirectory | None = None,
) -> list[Tool]:
    """One `Tool` per configured entry, all sending through `client`.

    `sleep` is the Retry-After wait (tests pass a recorder); `clock` times the customer
    cache (`[customer]`, shared by every tool). `customers`: that lookup, when its cache is
    shared with someone else too (the bot's `/start <token>` drops a linked user's entry).
    """
    by_name = {spec.name: spec for spec in config.tools}
    if customers is None:
        customers = customer_directory(config, client, clock)
    tools = []
    for spec in config.tools:
        entry = spec.spec
        if spec.address_parts is not None:
            # An address that cannot be split is refused before anyone confirms it.
            checked = address_checked(entry.args_model, spec.address_parts)
            entry = entry.model_copy(update={"args_model": checked})
        handler = _HttpTool(
            spec,
            config,
            client,
            sleep,
            first=by_name.get(spec.check_first) if spec.check_first else None,
            customers=customers,
        )
        tools.append(
            Tool.of(
                entry,
                handler,
                timeout_s=spec.timeout_s,
                max_retries=spec.max_retries,
                risk=spec.risk,
                idempotency=spec.idempotency,
                reconcile=handler.reconcile if spec.reconcile is not None else None,
                settle_s=spec.settle_s,
            )
        )
    return tools


def _encode(value: Any) -> str:
    """A url placeholder value: percent-encoded, and never a `.`/`..` path segment."""
    encoded = quote(str(value), safe="")
    return encoded.replace(".", "%2E") if not encoded.strip(".") else encoded


def build_request(
    client: httpx.AsyncClient,
    config: ToolsConfig,
    spec: HttpToolConfig,
    args: Mapping[str, Any],
    ctx: ToolContext,
    timeout_s: float,
) -> httpx.Request:
    import httpx

    url = spec.url.format_map({name: _encode(args[name]) for name in spec.placeholders})
    # `_customer_*` (the `[customer]` lookup's values) are sent only where a template says.
    rest = {
        k: v
        for k, v in args.items()
        if k not in spec.placeholders and v is not None and not k.startswith("_")
    }
    headers = shop_headers(config, ctx.user_id, ctx.trace_id)
    if spec.method == "GET":
        params = render_body(spec.query, args) if spec.query is not None else rest
        return client.build_request(
            "GET",
            url,
            params={**params, **auth_params(config)},
            headers=headers,
            timeout=httpx.Timeout(timeout_s),
        )
    headers["Idempotency-Key"] = ctx.idempotency_key
    keyed = {**args, **address_values(spec, args), IDEMPOTENCY_KEY: ctx.idempotency_key}
    if spec.graphql is not None:
        body: Any = spec.graphql.body(keyed)
    else:
        body = render_body(spec.body, keyed) if spec.body is not None else rest
    return client.build_request(
        spec.method,
        url,
        params=auth_params(config),
        json=body,
        headers=headers,
        timeout=httpx.Timeout(timeout_s),
    )


def shop_headers(config: ToolsConfig, user_id: int, trace_id: str) -> dict[str, str]:
    """What every request to the shop carries: JSON wanted, the `[http]` headers (its
    credentials), who asks and the trace."""
    headers = {"Accept": "application/json"}
    headers.update({name: value.get_secret_value() for name, value in config.headers.items()})
    headers["X-Stepwise-User"] = str(user_id)
    headers["X-Stepwise-Trace"] = trace_id
    return headers


def auth_params(config: ToolsConfig) -> dict[str, str]:
    """The `[http] query` parameters every request carries (https only, see `config`)."""
    return {name: value.get_secret_value() for name, value in config.query.items()}


def build_note(
    client: httpx.AsyncClient,
    config: ToolsConfig,
    spec: HttpToolConfig,
    args: Mapping[str, Any],
    ctx: ToolContext,
    timeout_s: float,
) -> httpx.Request:
    """The `note` POST after a change (see `config`): its own idempotency key."""
    import httpx

    note = spec.note
    assert note is not None
    url = note.url.format_map({name: _encode(args[name]) for name in spec.note_placeholders})
    keyed = {**args, **address_values(spec, args), IDEMPOTENCY_KEY: ctx.idempotency_key}
    headers = shop_headers(config, ctx.user_id, ctx.trace_id)
    headers["Idempotency-Key"] = f"{ctx.idempotency_key}:note"
    return client.build_request(
        "POST",
        url,
        params=auth_params(config),
        json=render_body(note.body, keyed),
        headers=headers,
        timeout=httpx.Timeout(timeout_s),
    )


def address_values(spec: HttpToolConfig, args: Mapping[str, Any]) -> dict[str, str]:
    """`{address_1}`, `{city}`, `{postcode}`, `{country}` of a tool with `address_parts`
    (empty otherwise; its arguments were checked to split, see `address_checked`)."""
    parts = spec.address_parts
    if parts is None:
        return {}
    return split_address(str(args.get(parts.arg) or ""), parts.country) or {}


def address_checked(model: type[BaseModel], parts: AddressParts) -> type[BaseModel]:
    """`model`, refusing an address `split_address` cannot split: a validation error of
    `address_parts`, which the tool's `arg_hints` word for the customer."""

    class Checked(model):  # type: ignore[valid-type,misc]
        @classmethod
        def model_validate(cls, obj: Any, **kwargs: Any) -> Any:
            parsed = super().model_validate(obj, **kwargs)
            if split_address(str(getattr(parsed, parts.arg)), parts.country) is None:
                raise ValidationError.from_exception_data(
                    model.__name__,
                    [
                        {
                            "type": PydanticCustomError(
                                "address_parts",
                                "cannot tell the street, city and postcode apart",
                            ),
                            "loc": ("address_parts",),
                            "input": getattr(parsed, parts.arg),
                        }
                    ],
                )
            return parsed

    Checked.__name__ = model.__name__
    return Checked


class _BodyTooLarge(Exception):
    pass


async def _read_body(response: httpx.Response) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise _BodyTooLarge
    return bytes(body)


# A reading of the answer before `map_response` (GraphQL's errors in a 200): an outcome, or
# None to read it as any other.
Before = Callable[[int, bytes], HttpOutcome | None]


async def _exchange(
    client: httpx.AsyncClient,
    request: httpx.Request,
    tool: str,
    reading: Reading,
    before: Before | None = None,
) -> HttpOutcome:
    """Send one request and map what came back; transport trouble becomes a typed outcome."""
    import httpx

    try:
        response = await client.send(request, stream=True)
        try:
            body = await _read_body(response)
        finally:
            await response.aclose()
    except httpx.TimeoutException as exc:
        message = transport_message(exc, reading.redact)
        return HttpOutcome(
            None, error_type=ErrorType.TIMEOUT, message=message, may_have_happened=_sent(exc)
        )
    except httpx.TransportError as exc:
        message = transport_message(exc, reading.redact)
        return HttpOutcome(
            None, error_type=ErrorType.UNAVAILABLE, message=message, may_have_happened=_sent(exc)
        )
    except httpx.HTTPError as exc:
        message = transport_message(exc, reading.redact)
        return HttpOutcome(None, error_type=ErrorType.INTERNAL, message=message)
    except _BodyTooLarge:
        return HttpOutcome(
            response.status_code,
            error_type=ErrorType.INTERNAL,
            message=f"upstream answer is larger than {MAX_BODY_BYTES} bytes",
        )
    if before is not None:
        early = before(response.status_code, body)
        if early is not None:
            return early
    return map_response(response.status_code, response.headers, body, tool=tool, reading=reading)


def _sent(exc: httpx.TransportError) -> bool:
    """Whether the request may have reached the upstream before `exc` (conservative:
    anything but a connection that was never made)."""
    import httpx

    # Transport failures before any byte of the request left: the upstream cannot have acted.
    return not isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout))


def transport_message(exc: httpx.HTTPError, redact: Callable[[str], str] = lambda t: t) -> str:
    detail = clip(str(exc), redact)
    return f"no answer from upstream: {type(exc).__name__}" + (f" ({detail})" if detail else "")


class _HttpTool:
    """The handler of one configured tool: render, send, map, maybe honour Retry-After."""

    def __init__(
        self,
        spec: HttpToolConfig,
        config: ToolsConfig,
        client: httpx.AsyncClient,
        sleep: Callable[[float], Awaitable[None]],
        *,
        first: HttpToolConfig | None = None,
        customers: CustomerDirectory | None = None,
    ) -> None:
        self._spec = spec
        self._config = config
        self._client = client
        self._sleep = sleep
        self._customers = customers
        self._first = (
            _HttpTool(first, config, client, sleep, customers=customers)
            if first is not None
            else None
        )

    @property
    def spec(self) -> HttpToolConfig:
        return self._spec

    def __repr__(self) -> str:
        return f"<http tool {self._spec.name}: {self._spec.method} {self._spec.url}>"

    async def __call__(self, args: BaseModel, ctx: ToolContext) -> Any:
        values = args.model_dump(mode="json")
        if self._spec.customer_keyed or (self._first is not None and self._first.customer_keyed):
            values = {**values, **(await self._customer(ctx)).values()}
        if self._first is not None:
            fields = self._first.spec.spec.args_model.model_fields
            # Raises the read's failure (not found, not yours): then nothing is sent.
            try:
                await self._first.send(
                    {k: v for k, v in values.items() if k in fields or k.startswith("_")}, ctx
                )
            except ToolFailure as exc:
                # The change itself was never sent, whatever became of the read.
                exc.may_have_happened = False
                raise
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._spec.timeout_s
        lookup = self._spec.graphql.lookup if self._spec.graphql is not None else None
        if lookup is not None:
            # What the change needs and the customer cannot say (the order's global id);
            # it fails (not found, not yours) before anything is sent.
            values = {**values, **await self._lookup(lookup, values, ctx)}
        data = await self.send(values, ctx)
        if self._spec.note is not None:
            await self._note(values, ctx, deadline - loop.time())
        return data

    @property
    def customer_keyed(self) -> bool:
        return self._spec.customer_keyed

    async def _customer(self, ctx: ToolContext) -> Customer:
        """The asking customer at the shop; `ToolFailure` (`not_linked`, nothing sent) when
        the shop does not know them."""
        found = await self._customers.resolve(ctx) if self._customers is not None else None
        if found is None:
            raise ToolFailure(
                ErrorType.PERMISSION_DENIED,
                f"{self._spec.name}: the Telegram user is not linked to a customer at the shop",
                code=NOT_LINKED,
                may_have_happened=False,
            )
        return found

    async def _note(self, values: Mapping[str, Any], ctx: ToolContext, budget_s: float) -> None:
        """Leave the `note` at the backend; never raises (the change is done whatever it
        answers), and keeps within the call's budget (with less than a tenth of a second
        left it is skipped and logged)."""
        name = self._spec.name
        if budget_s < 0.15:
            log.warning("http tool %s: note skipped (no time left)", name)
            return
        request = build_note(self._client, self._config, self._spec, values, ctx, budget_s - 0.05)
        reading = Reading(redact=self._config.redact)
        outcome = await _exchange(self._client, request, f"{name} note", reading)
        if outcome.ok or outcome.error_type is ErrorType.EMPTY_RESULT:
            log.info("http tool %s: note POST %s", name, outcome.status)
        else:
            log.warning(
                "http tool %s: note not recorded: %s",
                name,
                self._config.redact(outcome.message),
                extra={"trace_id": ctx.trace_id},
            )

    def _graphql_request(
        self, operation: Operation, values: Mapping[str, Any], ctx: ToolContext, budget_s: float
    ) -> httpx.Request:
        """A GraphQL query of this tool's (its lookup, its reconcile read)."""
        import httpx

        headers = shop_headers(self._config, ctx.user_id, ctx.trace_id)
        body = operation.body({**values, IDEMPOTENCY_KEY: ctx.idempotency_key})
        return self._client.build_request(
            "POST", self._spec.url, json=body, headers=headers, timeout=httpx.Timeout(budget_s)
        )

    def _before(self, operation: Operation, values: Mapping[str, Any], *, writes: bool) -> Before:
        redact = self._config.redact

        def before(status: int, body: bytes) -> HttpOutcome | None:
            return read_answer(operation, status, body, values, writes=writes, redact=redact)

        return before

    async def _lookup(
        self, lookup: Lookup, values: Mapping[str, Any], ctx: ToolContext
    ) -> dict[str, Any]:
        """The lookup's bound values; `ToolFailure` (never sent) when it fails."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._spec.timeout_s
        reading = Reading(args=values, redact=self._config.redact)
        before = self._before(lookup, values, writes=False)
        name = f"{self._spec.name} lookup"
        for attempt in range(2):
            request = self._graphql_request(lookup, values, ctx, max(deadline - loop.time(), 0.001))
            outcome = await _exchange(self._client, request, name, reading, before)
            wait = outcome.retry_after_s
            if (
                attempt == 0
                and outcome.transient
                and wait is not None
                and self._fits(wait, deadline - loop.time())
            ):
                await self._sleep(wait)
                continue
            break
        bound: dict[str, Any] = {}
        if outcome.ok:
            bound, refused = lookup.bound(outcome.data, ctx.user_id)
            outcome = refused or outcome
        log.info(
            "http tool %s: lookup %s",
            self._spec.name,
            outcome.status if outcome.ok else f"{outcome.status} {outcome.error_type}",
            extra={"trace_id": ctx.trace_id},
        )
        if outcome.error_type is not None:
            raise ToolFailure(
                outcome.error_type,
                self._config.redact(f"{name}: {outcome.message}"),
                code=outcome.code,
                may_have_happened=False,
            )
        return bound

    def _resends(self, outcome: HttpOutcome) -> bool:
        """Whether a Retry-After may re-send within the attempt: not a change that may have
        arrived at an upstream that would make it again."""
        honoured = self._spec.idempotency is Idempotency.HONOURED
        return self._spec.risk is Risk.READ or honoured or not outcome.may_have_happened

    async def send(self, values: Mapping[str, Any], ctx: ToolContext) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._spec.timeout_s
        outcome = await self._attempt(values, ctx, deadline - loop.time())
        wait = outcome.retry_after_s
        if (
            outcome.transient
            and wait is not None
            and self._resends(outcome)
            and self._fits(wait, deadline - loop.time())
        ):
            await self._sleep(wait)
            outcome = await self._attempt(values, ctx, deadline - loop.time())
        if outcome.error_type is not None:
            raise ToolFailure(
                outcome.error_type,
                self._config.redact(outcome.message),
                code=outcome.code,
                may_have_happened=outcome.may_have_happened,
            )
        return _redacted(outcome.data, self._config.redact)

    async def reconcile(self, args: BaseModel, ctx: ToolContext) -> Any:
        """Whether this change happened: its `reconcile` GET, read like the change's own
        answer when an item matches (None when none does). Raises `ToolFailure` when the
        read gets no usable answer: then nobody can tell."""
        import httpx

        read = self._spec.reconcile
        assert read is not None
        values = args.model_dump(mode="json")
        graphql = self._spec.graphql.reconcile if self._spec.graphql is not None else None
        if graphql is not None:
            return await self._reconcile_graphql(graphql, read, values, ctx)
        url = read.url.format_map(
            {name: _encode(values[name]) for name in self._spec.reconcile_placeholders}
        )
        headers = shop_headers(self._config, ctx.user_id, ctx.trace_id)
        request = self._client.build_request(
            "GET",
            url,
            params=auth_params(self._config),
            headers=headers,
            timeout=httpx.Timeout(self._spec.timeout_s),
        )
        reading = Reading(errors=self._spec.errors, args=values, redact=self._config.redact)
        outcome = await _exchange(self._client, request, f"{self._spec.name} reconcile", reading)
        log.info(
            "http tool %s: reconcile GET %s",
            self._spec.name,
            outcome.status if outcome.ok else f"{outcome.status} {outcome.error_type}",
            extra={"trace_id": ctx.trace_id},
        )
        if outcome.error_type is ErrorType.EMPTY_RESULT:
            return None  # an empty list: nothing there, so not our change either
        if outcome.error_type is not None:
            raise ToolFailure(outcome.error_type, self._config.redact(outcome.message))
        texts = {k: str(v) for k, v in values.items() if v is not None}
        texts.update(address_values(self._spec, values))
        texts[IDEMPOTENCY_KEY] = ctx.idempotency_key
        found = read.find(outcome.data, texts)
        if found is None:
            return None
        mapped = self._spec.response.apply(found, values) if self._spec.response else found
        return _redacted(mapped, self._config.redact)

    async def _reconcile_graphql(
        self, query: Reconcile, read: ReconcileRead, values: dict[str, Any], ctx: ToolContext
    ) -> Any:
        """`reconcile` for a GraphQL change: its query, the match tried under its `root`."""
        request = self._graphql_request(query, values, ctx, self._spec.timeout_s)
        reading = Reading(args=values, redact=self._config.redact)
        before = self._before(query, values, writes=False)
        name = f"{self._spec.name} reconcile"
        outcome = await _exchange(self._client, request, name, reading, before)
        log.info(
            "http tool %s: reconcile query %s",
            self._spec.name,
            outcome.status if outcome.ok else f"{outcome.status} {outcome.error_type}",
            extra={"trace_id": ctx.trace_id},
        )
        if outcome.error_type in (ErrorType.EMPTY_RESULT, ErrorType.NOT_FOUND):
            return None
        if outcome.error_type is not None:
            raise ToolFailure(outcome.error_type, self._config.redact(outcome.message))
        texts = {k: str(v) for k, v in values.items() if v is not None}
        texts.update(address_values(self._spec, values))
        texts[IDEMPOTENCY_KEY] = ctx.idempotency_key
        found = query.find(outcome.data, read, texts)
        if found is None:
            return None
        mapping = query.response or self._spec.response
        mapped = mapping.apply(found, values) if mapping is not None else found
        return _redacted(mapped, self._config.redact)

    def _fits(self, wait: float, remaining: float) -> bool:
        """Wait in-attempt only if capped and the retried request keeps half the budget."""
        return wait <= RETRY_AFTER_CAP_S and wait + self._spec.timeout_s / 2 <= remaining

    async def _attempt(
        self, values: Mapping[str, Any], ctx: ToolContext, budget_s: float
    ) -> HttpOutcome:
        request = build_request(
            self._client, self._config, self._spec, values, ctx, max(budget_s, 0.001)
        )
        reading = Reading(
            spec=self._spec.spec,
            response=self._spec.response,
            errors=self._spec.errors,
            args=values,
            user_id=ctx.user_id,
            redact=self._config.redact,
            customer_id=values.get("_customer_id"),
        )
        started = time.perf_counter()
        graphql = self._spec.graphql
        before = (
            self._before(graphql, values, writes=self._spec.risk is Risk.HIGH)
            if graphql is not None
            else None
        )
        outcome = await _exchange(self._client, request, self._spec.name, reading, before)
        log.info(
            "http tool %s: %s %s in %.0f ms",
            self._spec.name,
            self._spec.method,
            outcome.status if outcome.ok else f"{outcome.status} {outcome.error_type}",
            (time.perf_counter() - started) * 1000,
            extra={"trace_id": ctx.trace_id},
        )
        return outcome


# A 4xx that says nothing about the token: our credentials, a proxy's, a timeout, a limit.
_NOT_ABOUT_TOKEN: Final = frozenset({401, 407, 408, 429})


class CustomerDirectory:
    """Who a Telegram user is at the shop: the `[customer]` lookup, each found customer
    remembered for its `ttl_s` (`agent_core.http.customer`)."""

    def __init__(
        self,
        lookup: CustomerLookup,
        config: ToolsConfig,
        client: httpx.AsyncClient,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lookup = lookup
        self._config = config
        self._client = client
        self.cache = CustomerCache(lookup.ttl_s, clock)

    async def resolve(self, ctx: ToolContext) -> Customer | None:
        """The customer, or None when the shop has nobody linked to this Telegram user.
        `ToolFailure` when the shop cannot say (its lookup failed): never "not linked"."""
        import httpx

        cached = self.cache.get(ctx.user_id)
        if cached is not None:
            return cached
        lookup = self._lookup
        method, params, body = lookup.request_parts(ctx.user_id)
        headers = shop_headers(self._config, ctx.user_id, ctx.trace_id)
        request = self._client.build_request(
            method,
            lookup.url,
            params={**(params or {}), **auth_params(self._config)},
            json=body,
            headers=headers,
            timeout=httpx.Timeout(lookup.timeout_s),
        )
        reading = Reading(redact=self._config.redact)
        outcome = await _exchange(self._client, request, "customer lookup", reading)
        log.info(
            "customer lookup: %s %s",
            method,
            outcome.status if outcome.ok else f"{outcome.status} {outcome.error_type}",
            extra={"trace_id": ctx.trace_id},
        )
        if outcome.error_type in (ErrorType.EMPTY_RESULT, ErrorType.NOT_FOUND):
            return None
        data = outcome.data
        if outcome.error_type is None and isinstance(data, dict) and data.get("errors"):
            # A GraphQL answer with errors says nothing about the customer.
            raise ToolFailure(
                ErrorType.BACKEND, "customer lookup: the query was refused", may_have_happened=False
            )
        if outcome.error_type is not None:
            raise ToolFailure(
                outcome.error_type,
                self._config.redact(f"customer lookup: {outcome.message}"),
                may_have_happened=False,
            )
        customer = lookup.find(data, ctx.user_id)
        if customer is not None:
            self.cache.put(ctx.user_id, customer)
        return customer

    @property
    def can_claim(self) -> bool:
        """Whether the file says where a deep link's token is handed over (`claim`)."""
        return self._lookup.claim is not None

    async def claim(self, user_id: int, token: str, trace_id: str) -> LinkOutcome:
        """Hand the token of the shop's "Link Telegram" deep link to its `claim` endpoint.

        Whatever comes of it, this user's cached customer is dropped: the next question
        looks them up afresh. Refused or unanswered, the lookup is asked whether the user
        is linked anyway (a double tap whose first claim used the token, an answer lost on
        the way): then it is LINKED too, so two presses never get contradicting answers.
        The token is never logged; the shop's answer is not read (it may echo it).
        """
        import httpx

        claim = self._lookup.claim
        if claim is None:
            raise ValueError("[customer] declares no claim")
        headers = shop_headers(self._config, user_id, trace_id)
        request = self._client.build_request(
            "POST",
            claim.url,
            params=auth_params(self._config) or None,
            json=claim.body_for(user_id, token),
            headers=headers,
            timeout=httpx.Timeout(claim.timeout_s),
        )
        status: int | None = None
        started = time.perf_counter()
        try:
            response = await self._client.send(request, stream=True)
            status = response.status_code
            await response.aclose()
            said = str(status)
        except httpx.HTTPError as exc:
            said = type(exc).__name__  # never str(exc): it could quote the request
        self.cache.forget(user_id)
        took = (time.perf_counter() - started) * 1000
        if status is not None and 200 <= status < 300:
            log.info("customer link: POST %s in %.0f ms", said, took, extra={"trace_id": trace_id})
            return LinkOutcome.LINKED
        refused = status is not None and 400 <= status < 500 and status not in _NOT_ABOUT_TOKEN
        ctx = ToolContext(user_id=user_id, trace_id=trace_id, run_id="link", step_id="link")
        try:
            linked = await self.resolve(ctx) is not None
        except ToolFailure:
            linked = False
        outcome = (
            LinkOutcome.LINKED
            if linked
            else LinkOutcome.REFUSED
            if refused
            else LinkOutcome.UNAVAILABLE
        )
        level = logging.WARNING if status in _NOT_ABOUT_TOKEN or not refused else logging.INFO
        log.log(
            level,
            "customer link: POST %s in %.0f ms: %s%s",
            said,
            took,
            outcome.value,
            " (the shop refused the credentials: check [http])" if status == 401 else "",
            extra={"trace_id": trace_id},
        )
        return outcome


def _redacted(data: Any, redact: Callable[[str], str]) -> Any:
    """An answer with every secret removed from its texts (an upstream that echoes a header
    into a field must not put it in front of a customer)."""
    if isinstance(data, str):
        return redact(data)
    if isinstance(data, list):
        return [_redacted(item, redact) for item in data]
    if isinstance(data, dict):
        return {key: _redacted(value, redact) for key, value in data.items()}
    return data
