"""`stepwise tools check [--probe]` as data: what is configured, and what each probe saw.

`check_tools` returns typed records in the order a report lists them; the CLI words them
(`stepwise.tools_check`). A probe GETs a read tool once with its example arguments and
passes on 2xx or 404 (the example order may not exist upstream). High-risk and non-GET
tools are never probed: a probe must not change anything.
"""

from __future__ import annotations

import secrets
import time
from typing import Literal

import httpx
from pydantic import BaseModel, ConfigDict

from agent_core.catalog import CATALOG
from agent_core.http.client import build_request, new_client, transport_message
from agent_core.http.config import HttpToolConfig, ToolsConfig
from agent_core.models import Risk
from agent_core.tools import ToolContext


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
        await response.aclose()
    except httpx.HTTPError as exc:
        error = config.redact(transport_message(exc, config.redact))
        return result.model_copy(update={"probed": True, "passed": False, "error": error})
    status = response.status_code
    return result.model_copy(
        update={
            "probed": True,
            "passed": 200 <= status < 300 or status == 404,
            "status": status,
            "latency_ms": (time.perf_counter() - started) * 1000,
        }
    )
