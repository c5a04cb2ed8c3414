"""The catalog's tools served by a real HTTP API instead of the built-in demo shop.

`STEPWISE_TOOLS=path/to/tools.toml` replaces the demo shop's tools with the ones built here.
The names, arguments and risks come from `agent_core.catalog.builtin` and the failure types stay
the same, so the planner, the policy and the answers do not know which backend they talk to.

- `config`: the tools file (TOML), validated completely; secrets and redaction.
- `declare`: a tool the catalog does not know, declared in the file (its `ToolSpec`).
- `mapping`: a shop's own API shapes (request bodies, JMESPath responses, error bodies).
- `graphql`: a tool whose request is a GraphQL operation (Shopify's Admin API): variables,
  top-level errors and throttling, user errors, a lookup before a change, reconcile queries.
- `responses`: what one answer means (status → error type, Retry-After, contract). Pure.
- `client`: the connection pool, request building, and the tools' handlers.
- `check`: `stepwise tools check [--probe]` as typed records (the CLI prints them).
"""

from agent_core.http.check import (
    ConfiguredTool,
    MissingTool,
    ProbeResult,
    ToolCheck,
    all_passed,
    check_tools,
)
from agent_core.http.client import (
    RETRY_AFTER_CAP_S,
    CustomerDirectory,
    build_http_tools,
    customer_directory,
    new_client,
)
from agent_core.http.config import (
    HttpToolConfig,
    ToolsConfig,
    ToolsConfigError,
    check_tools_file,
    load_tools_config,
)
from agent_core.http.responses import HttpOutcome, Reading, map_response, parse_retry_after

__all__ = [
    "RETRY_AFTER_CAP_S",
    "ConfiguredTool",
    "CustomerDirectory",
    "HttpOutcome",
    "HttpToolConfig",
    "MissingTool",
    "ProbeResult",
    "Reading",
    "ToolCheck",
    "ToolsConfig",
    "ToolsConfigError",
    "all_passed",
    "build_http_tools",
    "check_tools",
    "check_tools_file",
    "customer_directory",
    "load_tools_config",
    "map_response",
    "new_client",
    "parse_retry_after",
]
