"""`stepwise tools check [--probe]` as data: what is configured, and what each probe saw.

`check_tools` returns typed records in the order a report lists them; the CLI words them
(`stepwise.tools_check`). A probe GETs a read tool once with its example arguments and
passes on a JSON 2xx, or on a JSON 404 that is the API saying "no such order" (the
example order may not exist upstream). It fails, naming what to fix (`probe_problem`), on:

- a 404 of the route itself, not of the order: WordPress's `rest_no_route`, an HTML 404
  page, or any answer that is not JSON: the `url` (its base address) is wrong;
- 401 or 403, or an error code the tool's `errors.map` calls `backend`: the shop refused
  the credentials in `[http]` (a revoked or mistyped key);
- anything else that is not a 2xx.

High-risk and non-GET tools are never probed: a probe must not change anything.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ConfigDict

from agent_core.catalog.builtin import CATALOG
from agent_core.execution.tools import ToolContext
from agent_core.http.client import build_request, new_client, transport_message
from agent_core.http.config import HttpToolConfig, ToolsConfig
from agent_core.http.mapping import ErrorMapping, search
from agent_core.http.responses import clip
from agent_core.models import ErrorType, Risk

# httpx is imported where it is used: importing it costs ~0.1 s at every start (the
# package loads its own command line), and only a shop with a tools file needs it.
if TYPE_CHECKING:
    import httpx


class ConfiguredTool(BaseModel):
    """A tool the file configures."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["configured"] = "configured"
    tool: HttpToolConfig


class MissingTool(BaseModel):
    """A catalog tool the file leaves out: plans that need it stop with `unknown_tool`."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["missing"] = "missing"
    name: str


class ProbeResult(BaseModel):
    """One probe: skipped (never probed), or the answer (or transport failure) it got."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["probe"] = "probe"
    name: str
    risk: Risk
    method: str
    probed: bool
    passed: bool
    status: int | None = None
    latency_ms: float | None = None
    # Why no answer came (redacted); None when one did.
    error: str | None = None
    # What the answer says is misconfigured and what to fix (redacted); None when nothing.
    problem: str | None = None


ToolCheck = ConfiguredTool | MissingTool | ProbeResult


def all_passed(checks: list[ToolCheck]) -> bool:
    return all(check.passed for check in checks if isinstance(check, ProbeResult))


async def check_tools(
    config: ToolsConfig, *, probe: bool, client: httpx.AsyncClient | None = None
) -> list[ToolCheck]:
    """The configured tools, the catalog's tools left out and, with `probe`, each probe."""
    checks: list[ToolCheck] = [ConfiguredTool(tool=spec) for spec in config.tools]
    configured = {spec.name for spec in config.tools}
    checks += [MissingTool(name=name) for name in sorted(set(CATALOG) - configured)]
    if not probe:
        return checks
    pool = new_client(config) if client is None else client
    try:
        for spec in config.tools:
            checks.append(await _probe(pool, config, spec))
    finally:
        if client is None:
            await pool.aclose()
    return checks


async def _probe(
    client: httpx.AsyncClient, config: ToolsConfig, spec: HttpToolConfig
) -> ProbeResult:
    import httpx

    result = ProbeResult(
        name=spec.name, risk=spec.risk, method=spec.method, probed=False, passed=True
    )
    if spec.risk is Risk.HIGH or spec.method != "GET" or spec.probe_args is None:
        return result
    args = spec.spec.args_model.model_validate(spec.probe_args)
    ctx = ToolContext(
        user_id=config.probe_user_id,
        trace_id=f"probe-{secrets.token_hex(4)}",
        run_id="probe",
        step_id=spec.name,
    )
    request = build_request(client, config, spec, args.model_dump(mode="json"), ctx, spec.timeout_s)
    started = time.perf_counter()
    try:
        response = await client.send(request, stream=True)
        try:
            body = b""
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > PROBE_BODY_BYTES:
                    break
        finally:
            await response.aclose()
    except httpx.HTTPError as exc:
        error = config.redact(transport_message(exc, config.redact))
        return result.model_copy(update={"probed": True, "passed": False, "error": error})
    status = response.status_code
    problem = probe_problem(status, response.headers.get("content-type", ""), body, spec.errors)
    return result.model_copy(
        update={
            "probed": True,
            "passed": problem is None,
            "status": status,
            "latency_ms": (time.perf_counter() - started) * 1000,
            "problem": None if problem is None else config.redact(problem),
        }
    )


# Error codes that say the route does not exist (the base url is wrong), not the order.
ROUTE_CODES: Final = frozenset({"rest_no_route", "rest_no_route_found"})
# A probe reads this much of an answer: enough for an error body, never a whole page.
PROBE_BODY_BYTES: Final = 64 * 1024


def probe_problem(
    status: int, content_type: str, body: bytes, errors: ErrorMapping | None = None
) -> str | None:
    """What a probe's answer says is misconfigured, as "what is wrong; what to fix"; None
    when the answer is one the tool can read (a JSON 2xx, or the API's own "no such
    order"). Pure."""
    data = _json(body) if "json" in content_type.lower() else None
    code, message = _error_code(data, errors)
    meaning = _mapped(code, errors)
    said = f" ({clip(code + (': ' + message if message else ''))})" if code else ""
    if status in (401, 403) or meaning is ErrorType.BACKEND:
        return (
            f"the shop refused the credentials{said}; check the key in [http] "
            "(revoked, mistyped, or without read/write access)"
        )
    if data is None:
        kind = content_type.split(";")[0].strip() or "no content type"
        return (
            f"the answer is not JSON ({kind}); the url's base address looks wrong "
            "(a web page, not the API), fix `url`"
        )
    if code in ROUTE_CODES:
        return f"no such route{said}; the url's base address looks wrong, fix `url`"
    if 200 <= status < 300 or status == 404:
        return None
    return f"the API answered HTTP {status}{said}"


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def _error_code(data: Any, errors: ErrorMapping | None) -> tuple[str | None, str | None]:
    if not isinstance(data, dict):
        return None, None
    errors = errors or ErrorMapping()
    code, text = search(errors.code, data), search(errors.message, data)
    return (
        str(code) if isinstance(code, str | int) else None,
        text if isinstance(text, str) else None,
    )


def _mapped(code: str | None, errors: ErrorMapping | None) -> ErrorType | None:
    if code is None or errors is None:
        return None
    meaning = errors.map.get(code)
    return ErrorType(meaning.partition(":")[0]) if meaning else None
