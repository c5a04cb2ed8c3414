"""Issue 23 #7: answers in the customer's language, and "what I can help with" from the
catalog in use."""

from __future__ import annotations

from agent_core.answers.compose import can_help
from agent_core.answers.render import render_result
from agent_core.catalog.builtin import CATALOG, TRACK_PARCEL
from agent_core.catalog.spec import Texts, catalog_of
from agent_core.models import Language

ZH, EN = Language.ZH, Language.EN
PARCEL = {"order_id": "A1001", "carrier": "SF Express", "tracking_number": "SF1"}


def test_7_carrier_events_in_chinese_where_offered_else_marked_as_the_carriers_words() -> None:
    offered = {
        **PARCEL,
        "events": [
            {"at": "11-29 18:40", "place": "Hangzhou", "text": "In transit", "text_zh": "运输中",
             "place_zh": "杭州"},
        ],
    }  # fmt: skip
    shown = render_result(TRACK_PARCEL, offered, {"order_id": "A1001"}, ZH) or ""
    assert "• 11-29 18:40 杭州：运输中" in shown and "In transit" not in shown
    carriers_own = {**PARCEL, "events": [{"at": "11-29 18:40", "place": "Hangzhou",
                                          "text": "In transit"}]}  # fmt: skip
    shown = render_result(TRACK_PARCEL, carriers_own, {"order_id": "A1001"}, ZH) or ""
    assert "• 11-29 18:40 Hangzhou：In transit（承运商原文）" in shown
    english = render_result(TRACK_PARCEL, offered, {"order_id": "A1001"}, EN) or ""
    assert "• 11-29 18:40, Hangzhou: In transit" in english and "承运商" not in english


def test_7_the_cant_help_answer_names_every_tool_in_use() -> None:
    for lang in (ZH, EN):
        text = can_help(lang)
        for spec in CATALOG.values():
            assert spec.offer is not None and spec.offer[lang] in text
    invoice = CATALOG["cancel_order"].model_copy(
        update={
            "name": "send_invoice",
            "offer": None,
            "description": Texts(zh="为订单开具发票。", en="Send an invoice for an order."),
        }
    )
    declared = catalog_of([*CATALOG.values(), invoice])
    assert "send an invoice for an order" in can_help(EN, declared)
    assert "为订单开具发票" in can_help(ZH, declared)
