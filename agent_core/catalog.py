"""The tools the agent knows, declared once: name, descriptions, arguments, risk, goals.

One frozen `ToolSpec` per tool. The demo shop (`shop.shop_tools`) binds a handler to each,
the HTTP adapter (`agent_core.http`) configures a request for each, the planner writes its
steps' goals from them and the answers key on their names, so a tool's name, wording and
risk are never written twice. It is data, not code: the declared tool catalog (issue 12)
grows these entries with result contracts, templates and rules, and loads more of them
from TOML.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints

from agent_core.models import Language, Risk

PolicyLang = Literal["zh", "en"]

OrderId = Annotated[
    str, StringConstraints(strip_whitespace=True, to_upper=True, min_length=1, max_length=32)
]


class OrderArgs(BaseModel):
    """Arguments of `get_order_status` and `cancel_order`."""

    model_config = ConfigDict(extra="forbid")

    order_id: OrderId


class PolicyArgs(BaseModel):
    """Arguments of `search_policy`."""

    model_config = ConfigDict(extra="forbid")

    query: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
    lang: PolicyLang = "en"


class Texts(BaseModel):
    """One text in each language the agent speaks."""

    model_config = ConfigDict(frozen=True)

    zh: str
    en: str

    def __getitem__(self, language: Language) -> str:
        return self.zh if language is Language.ZH else self.en


class ToolSpec(BaseModel):
    """What the agent knows about a tool, whoever serves it."""

    model_config = ConfigDict(frozen=True)

    name: str
    # What the tool does, for planners and staff. `en` is also the `Tool.description`.
    description: Texts
    args_model: type[BaseModel]
    # The risk a backend cannot lower: a high-risk tool always asks the customer first.
    risk: Risk
    # A plan step's goal, formatted with the step's arguments (`{order_id}`, `{query}`).
    goal: Texts
    # Arguments for `stepwise tools check --probe`; None: never probed (a probe must be
    # harmless, so a high-risk tool never has them).
    probe_args: Mapping[str, Any] | None = None

    def goal_for(self, language: Language, **args: str) -> str:
        return self.goal[language].format(**args)


GET_ORDER_STATUS: Final = ToolSpec(
    name="get_order_status",
    description=Texts(
        zh="查询顾客本人某个订单的状态、预计送达日期和商品。",
        en=(
            "Look up the status, estimated delivery date and items of one of the customer's "
            "own orders."
        ),
    ),
    args_model=OrderArgs,
    risk=Risk.READ,
    goal=Texts(zh="查询订单 {order_id} 的物流状态", en="Check the status of order {order_id}"),
    probe_args={"order_id": "A1001"},
)

SEARCH_POLICY: Final = ToolSpec(
    name="search_policy",
    description=Texts(
        zh="按主题查找店铺政策（延迟补偿、退货退款、配送、取消、换货），支持中文和英文。",
        en=(
            "Find the shop policies (delay compensation, returns and refunds, shipping, "
            "cancellation, exchanges) that match a topic, in Chinese or English."
        ),
    ),
    args_model=PolicyArgs,
    risk=Risk.READ,
    goal=Texts(zh="查询{query}政策", en="Look up the {query} policy"),
    probe_args={"query": "refund"},
)

CANCEL_ORDER: Final = ToolSpec(
    name="cancel_order",
    description=Texts(
        zh="在顾客确认后，取消顾客本人尚未签收的订单。",
        en=(
            "Cancel one of the customer's own orders that has not been delivered yet, "
            "after the customer has confirmed."
        ),
    ),
    args_model=OrderArgs,
    risk=Risk.HIGH,
    goal=Texts(zh="取消订单 {order_id}", en="Cancel order {order_id}"),
)

CATALOG: Final[Mapping[str, ToolSpec]] = MappingProxyType(
    {spec.name: spec for spec in (GET_ORDER_STATUS, SEARCH_POLICY, CANCEL_ORDER)}
)
