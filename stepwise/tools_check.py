"""`stepwise tools` and `stepwise tools check [--probe]`: print the catalog in use and what
`agent_core.http.check_tools` found.

`stepwise tools` lists every tool the agent can use (name, risk, who approves, who serves
it, what it does, its arguments, the phrases a planner reads); `tools check` prints one
line per configured tool, per catalog tool left out and per probe (exit status 1 when a
probe failed), or, for a bad file, one line per problem (file, tool, field).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from agent_core.catalog.spec import ToolSpec
from agent_core.http import (
    ConfiguredTool,
    MissingTool,
    ToolCheck,
    ToolsConfig,
    all_passed,
    check_tools,
)
from agent_core.models import Risk

if TYPE_CHECKING:  # httpx: only where a client is made (agent_core.http.client)
    import httpx


def check_line(check: ToolCheck) -> str:
    """The report line of one record."""
    if isinstance(check, ConfiguredTool):
        spec = check.tool
        line = (
            f"  {spec.name}: {spec.method} {spec.url} risk={spec.risk.value} "
            f"timeout={spec.timeout_s:g}s max_retries={spec.max_retries}"
        )
        if spec.risk is Risk.HIGH:
            # What a lost answer leads to: a retry (honoured) or a reconcile read.
            line += f" idempotency={spec.idempotency.value}"
            if spec.reconcile is not None:
                how = "query" if spec.graphql is not None else "GET"  # a GraphQL read is a POST
                line += f" reconcile={how} {spec.reconcile.url}"
        return line
    if isinstance(check, MissingTool):
        return f"  {check.name}: not configured (plans that need it stop with unknown_tool)"
    if not check.probed:
        return f"  {check.name}: not probed ({check.risk.value} risk, {check.method})"
    if check.status is None:
        return f"  {check.name}: probe FAILED: {check.error}"
    verdict = "ok" if check.passed else "FAILED"
    line = (
        f"  {check.name}: probe HTTP {check.status} in {check.latency_ms or 0.0:.0f} ms {verdict}"
    )
    return line + (f": {check.problem}" if check.problem else "")


async def print_tools_check(
    config: ToolsConfig,
    *,
    probe: bool,
    out: Callable[[str], None],
    client: httpx.AsyncClient | None = None,
) -> int:
    """Check the tools (`--probe`: GET each read tool once), print the report; 0 if all is well."""
    checks = await check_tools(config, probe=probe, client=client)
    out(f"tools from {config.source}:")
    for check in checks:
        out(check_line(check))
    return 0 if all_passed(checks) else 1


def catalog_lines(catalog: Mapping[str, ToolSpec], served_by: Mapping[str, str]) -> list[str]:
    """The catalog in use, tool by tool; `served_by` says who serves each (absent: nobody)."""
    lines: list[str] = []
    for name in sorted(catalog):
        spec = catalog[name]
        approval = f" approved by the {spec.approval.value}" if spec.approval else ""
        backend = served_by.get(name, "not configured")
        lines.append(f"{name}  [{spec.risk.value} risk{approval}]  {backend}")
        lines.append(f"    {spec.description.en}")
        lines.append(f"    {spec.description.zh}")
        lines.append(f"    arguments: {_arguments(spec)}")
        if spec.phrases is not None:
            lines.append(f"    phrases: {', '.join((*spec.phrases.en, *spec.phrases.zh)) or '-'}")
    return lines


def _arguments(spec: ToolSpec) -> str:
    schema = spec.args_schema()
    required = set(schema.get("required", []))
    parts = []
    for arg, field in schema.get("properties", {}).items():
        kind = field.get("type") or "/".join(
            str(option.get("type")) for option in field.get("anyOf", []) if option.get("type")
        )
        parts.append(f"{arg}: {kind or 'any'}" + ("" if arg in required else " (optional)"))
    return ", ".join(parts) or "none"
