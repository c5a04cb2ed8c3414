"""What a 2xx answer of each tool must look like, as pydantic models.

- `get_order_status`: `{"order_id": str, "status": "pending|shipping|delivered|cancelled",
  "eta"?: str | null, ...}`; extra fields are passed through.
- `search_policy`: `[{"title": str, "text": str}, ...]` or `{"results": [...]}`; the tool
  returns the list of `{"title", "text"}`.
- `cancel_order`: `{"order_id": str, "status": "cancelled", ...}`. An empty 2xx breaks this
  contract instead of being an empty result: a write whose outcome is unknown must stop
  for staff, not degrade into an answer that leaves it out.

The models are strict (no coercion: `5` is not a string) and a broken contract is reported
as pydantic names it, field path first (`results.0.text: Field required`), never with the
offending value (an upstream may echo a secret).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, TypeAdapter, ValidationError

from agent_core.catalog import CANCEL_ORDER, GET_ORDER_STATUS, SEARCH_POLICY


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must be a non-empty string")
    return value


NonBlank = Annotated[str, AfterValidator(_not_blank)]


class OrderResult(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")

    order_id: NonBlank
    status: Literal["pending", "shipping", "delivered", "cancelled"]
    eta: str | None = None


class CancelResult(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")

    order_id: NonBlank
    status: Literal["cancelled"]


class PolicyEntry(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")

    title: str
    text: str


class PolicyResults(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")

    results: list[PolicyEntry]


# A broken answer of 10 000 entries is named by its first few problems, not all of them.
MAX_PROBLEMS: Final = 3


class ContractBroken(Exception):
    """A 2xx answer that does not keep its tool's contract; `str()` names the field(s)."""


_ORDER: Final = TypeAdapter(OrderResult)
_CANCEL: Final = TypeAdapter(CancelResult)
_POLICIES: Final = TypeAdapter(PolicyResults)


def _order(data: Any) -> Any:
    _ORDER.validate_python(data)
    return data  # passed through as the upstream sent it, extra fields included


def _cancel(data: Any) -> Any:
    _CANCEL.validate_python(data)
    return data


def _policies(data: Any) -> list[dict[str, str]]:
    # A bare list is read as `{"results": [...]}`, so a bad entry is always `results.N`.
    wrapped = data if isinstance(data, dict) else {"results": data}
    return [entry.model_dump() for entry in _POLICIES.validate_python(wrapped).results]


_CONTRACTS: Final[Mapping[str, Callable[[Any], Any]]] = MappingProxyType(
    {
        GET_ORDER_STATUS.name: _order,
        SEARCH_POLICY.name: _policies,
        CANCEL_ORDER.name: _cancel,
    }
)


def has_contract(tool: str | None) -> bool:
    return tool in _CONTRACTS


def check_contract(tool: str, data: Any) -> Any:
    """The tool's result from a parsed 2xx body; `ContractBroken` if it breaks the contract."""
    try:
        return _CONTRACTS[tool](data)
    except ValidationError as exc:
        raise ContractBroken(describe(exc)) from None
    except RecursionError:
        raise ContractBroken("response: nested too deeply") from None


def describe(exc: ValidationError, limit: int = MAX_PROBLEMS) -> str:
    """`field.path: message; ...` for the first `limit` problems, never the input values."""
    errors = exc.errors(include_url=False, include_input=False)
    parts = []
    for err in errors[:limit]:
        where = ".".join(str(p) for p in err["loc"]) or "response"
        parts.append(f"{where}: {err['msg']}")
    if len(errors) > limit:
        parts.append(f"and {len(errors) - limit} more")
    return "; ".join(parts)
