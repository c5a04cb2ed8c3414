"""`stepwise tools check [--probe]`: print what `agent_core.http.check_tools` found.

One line per configured tool, per catalog tool left out, and per probe; exit status 1 when
a probe failed, else 0.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx

from agent_core.http import (
    ConfiguredTool,
    MissingTool,
    ToolCheck,
    ToolsConfig,
    all_passed,
    check_tools,
)


def check_line(check: ToolCheck) -> str:
    """The report line of one record."""
    if isinstance(check, ConfiguredTool):
        spec = check.tool
        return (
            f"  {spec.name}: {spec.method} {spec.url} risk={spec.risk.value} "
            f"timeout={spec.timeout_s:g}s max_retries={spec.max_retries}"
        )
    if isinstance(check, MissingTool):
        return f"  {check.name}: not configured (plans that need it stop with unknown_tool)"
    if not check.probed:
        return f"  {check.name}: not probed ({check.risk.value} risk, {check.method})"
    if check.status is None:
        return f"  {check.name}: probe FAILED: {check.error}"
    verdict = "ok" if check.passed else "FAILED"
    return (
        f"  {check.name}: probe HTTP {check.status} in {check.latency_ms or 0.0:.0f} ms {verdict}"
    )


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
