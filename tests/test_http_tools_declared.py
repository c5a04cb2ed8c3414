"""A tool added only in a TOML file (issue 12's done-means): `request_invoice`, declared
next to its request mapping, against a local HTTP server, with no Python change.

It is planned from the phrases and order id the file declares (the planner reads the
catalog's `phrases`; `PhrasePlanner` below is the smallest planner that does, so this test
does not depend on the rule planner's own vocabulary), confirmed because it is high risk,
sent exactly once with its idempotency key, answered with its template, skipped by its own
observation rule, listed by `stepwise tools`, shown in the console, and refused with the
reason the file gives.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from agent_core.agent import Agent
from agent_core.catalog.spec import Approver, ToolSpec
from agent_core.execution.executor import Executor
from agent_core.execution.tools import ToolRegistry
from agent_core.http import (
    ToolsConfigError,
    build_http_tools,
    check_tools_file,
    load_tools_config,
)
from agent_core.models import Idempotency, Language, Risk, RunStatus, StepStatus, StepTag
from agent_core.understanding.planner import PlanDraft, PlanRequest, RuleBasedPlanner, StepDraft
from console.app import create_app
from stepwise.runtime import open_runtime
from stepwise.settings import Settings
from storage.runs.sqlite import SqliteRunStore
from tests.fakes import RecordingSleep
from tests.local_http import serve_app

TOKEN = "staff-token-for-tests-0123456789"
SECRET = "inv-token-2b7d9e41c0"
CUSTOMER = 10001

TOOLS_TOML = """
[http]
headers = { X-Api-Key = "${INVOICE_KEY}" }

[tools.get_order_status]
url = "@BASE@/orders/{order_id}"

[tools.request_invoice]
description = { zh = "为顾客本人的订单开具发票，发送到下单邮箱。", en = "Send an invoice for one of the customer's own orders to the email it was ordered with." }
goal = { zh = "为订单 {order_id} 开具发票", en = "Send an invoice for order {order_id}" }
risk = "high"
approval = "customer"
idempotency = "honoured"
confirm = { zh = "为订单 {order_id} 开具发票并发送到下单邮箱？", en = "Send an invoice for order {order_id} to the email you ordered with?" }
approve_label = { zh = "确认开票", en = "Yes, send it" }
decline_label = { zh = "不用了", en = "No, thanks" }
phrases = { zh = ["开发票", "发票"], en = ["invoice"] }
args.order_id = { type = "order_id" }
args.title = { type = "text", max_length = 60, required = false }
result.order_id = { type = "string" }
result.invoice_id = { type = "string" }
result.email = { type = "string" }
templates = [
  { zh = "订单 {order_id} 的发票 {invoice_id} 已发送到 {email}。", en = "Invoice {invoice_id} for order {order_id} is on its way to {email}." },
]
refusals = { not_paid = { zh = "订单 {order_id} 还没有付款，暂时不能开发票。", en = "Order {order_id} is not paid yet, so there is no invoice to send." } }
arg_hints = { title = { zh = "发票抬头最多 60 个字", en = "the invoice title can be at most 60 characters" } }
rules = [
  { name = "no_invoice_for_cancelled", after = "get_order_status", field = "status", values = ["cancelled"], reason = { zh = "订单 {order_id} 已取消，不能开发票。", en = "Order {order_id} is cancelled, so there is no invoice to send." } },
]
method = "POST"
url = "@BASE@/orders/{order_id}/invoice"

[tools.request_invoice.errors]
map = { unpaid = "invalid_arguments:not_paid" }
"""


@dataclass
class Billing:
    base: str = ""
    orders: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "A1001": {"order_id": "A1001", "status": "shipping", "owner": CUSTOMER},
            "A1004": {"order_id": "A1004", "status": "cancelled", "owner": CUSTOMER},
            "A1009": {"order_id": "A1009", "status": "pending", "owner": CUSTOMER},
        }
    )
    invoices: dict[str, str] = field(default_factory=dict)  # idempotency key -> invoice id
    posts: list[dict[str, str]] = field(default_factory=list)


@pytest.fixture
async def billing() -> AsyncIterator[Billing]:
    shop = Billing()

    async def order(request: web.Request) -> web.Response:
        found = shop.orders.get(request.match_info["id"])
        if found is None or int(request.headers["X-Stepwise-User"]) != found["owner"]:
            return web.json_response({"error": "no such order"}, status=404)
        return web.json_response({k: v for k, v in found.items() if k != "owner"})

    async def invoice(request: web.Request) -> web.Response:
        shop.posts.append(dict(request.headers))
        if request.headers.get("X-Api-Key") != SECRET:
            return web.json_response({"error": "bad key"}, status=401)
        order_id = request.match_info["id"]
        if order_id == "A1009":
            return web.json_response({"code": "unpaid", "message": "order unpaid"}, status=409)
        key = request.headers["Idempotency-Key"]
        number = shop.invoices.setdefault(key, f"INV-{len(shop.invoices) + 1}")
        return web.json_response(
            {"order_id": order_id, "invoice_id": number, "email": "li@example.com"}
        )

    app = web.Application()
    app.router.add_get("/orders/{id}", order)
    app.router.add_post("/orders/{id}/invoice", invoice)
    runner, shop.base = await serve_app(app)
    yield shop
    await runner.cleanup()


class PhrasePlanner:
    """Plans a catalog tool when the text says one of its phrases and names an order:
    the order's status first (its observation rules need it), then the tool."""

    def __init__(self, catalog: Mapping[str, ToolSpec]) -> None:
        self._catalog = catalog
        self._rules = RuleBasedPlanner()

    async def plan(self, request: PlanRequest) -> PlanDraft:
        fallback = self._rules.draft(request)
        ids = self._rules.find_order_ids(request.text)
        text = request.text.casefold()
        for spec in self._catalog.values():
            phrases = spec.phrases
            if phrases is None or not ids:
                continue
            if any(p.casefold() in text for p in (*phrases.zh, *phrases.en)):
                lang = fallback.language
                status = self._catalog["get_order_status"]
                return PlanDraft(
                    language=lang,
                    steps=[
                        StepDraft(
                            goal=status.goal_for(lang, order_id=ids[0]),
                            tool=status.name,
                            args={"order_id": ids[0]},
                            tag=StepTag.ORDER_STATUS,
                        ),
                        StepDraft(
                            goal=spec.goal_for(lang, order_id=ids[0]),
                            tool=spec.name,
                            args={"order_id": ids[0]},
                            tag=StepTag.ACTION,
                        ),
                    ],
                )
        return fallback


def write(tmp_path: Path, billing: Billing) -> Path:
    path = tmp_path / "tools.toml"
    path.write_text(TOOLS_TOML.replace("@BASE@", billing.base), encoding="utf-8")
    return path


@pytest.fixture
async def agent(billing: Billing, tmp_path: Path) -> AsyncIterator[tuple[Agent, SqliteRunStore]]:
    config = load_tools_config(write(tmp_path, billing), env={"INVOICE_KEY": SECRET})
    store = await SqliteRunStore.open(tmp_path / "runs.db")
    async with httpx.AsyncClient() as client:
        registry = ToolRegistry(build_http_tools(config, client, sleep=RecordingSleep()))
        executor = Executor(registry, journal=store, sleep=RecordingSleep())
        yield Agent(PhrasePlanner(registry.catalog()), executor, store), store
    await store.close()


async def test_planned_confirmed_sent_once_and_shown_with_its_template(
    agent: tuple[Agent, SqliteRunStore], billing: Billing
) -> None:
    ask, store = agent
    paused = await ask.ask("please send me an invoice for A1001", user_id=CUSTOMER, chat_id=1)
    assert [s.tool for s in paused.steps] == ["get_order_status", "request_invoice"]
    assert paused.status is RunStatus.PAUSED and billing.posts == []
    assert paused.answer == (
        "Order A1001 is on its way.\n"
        "Send an invoice for order A1001 to the email you ordered with?\n"
        'Please press "Yes, send it" or "No, thanks" below.'
    )
    assert paused.pause is not None
    outcome = await ask.decide(paused.id, user_id=CUSTOMER, approved=True, nonce=paused.pause.nonce)
    assert outcome.run is not None and outcome.run.status is RunStatus.COMPLETED
    assert outcome.run.answer == (
        "Order A1001 is on its way.\nInvoice INV-1 for order A1001 is on its way to li@example.com."
    )
    again = await ask.decide(paused.id, user_id=CUSTOMER, approved=True, nonce=paused.pause.nonce)
    assert again.result.value == "already_handled"
    assert len(billing.posts) == 1
    assert billing.posts[0]["Idempotency-Key"] == f"{paused.id}:s2"

    # Recovery after a crash right after the POST resends the same key: still one invoice.
    reloaded = await store.load_run(paused.id)
    assert reloaded is not None
    reloaded.steps[1].status = StepStatus.RUNNING
    reloaded.status = RunStatus.RUNNING
    await ask.executor.drive(reloaded)
    assert len(billing.invoices) == 1


async def test_chinese_phrases_rules_and_refusals(
    agent: tuple[Agent, SqliteRunStore], billing: Billing
) -> None:
    ask, _ = agent
    skipped = await ask.ask("订单 A1004 帮我开发票", user_id=CUSTOMER, chat_id=1)
    assert skipped.status is RunStatus.COMPLETED
    assert skipped.answer == "订单 A1004：已取消。\n订单 A1004 已取消，不能开发票。"

    refused = await ask.ask("invoice for A1009 please", user_id=CUSTOMER, chat_id=1)
    assert refused.pause is not None
    done = await ask.decide(refused.id, user_id=CUSTOMER, approved=True, nonce=refused.pause.nonce)
    assert done.run is not None and done.run.status is RunStatus.FAILED
    assert done.run.steps[1].error is not None and done.run.steps[1].error.code == "not_paid"
    assert "Order A1009 is not paid yet, so there is no invoice to send." in (done.run.answer or "")

    declined = await ask.ask("invoice for A1001", user_id=CUSTOMER, chat_id=1)
    assert declined.pause is not None
    no = await ask.decide(declined.id, user_id=CUSTOMER, approved=False, nonce=declined.pause.nonce)
    assert no.run is not None and no.run.status is RunStatus.DECLINED
    assert len(billing.posts) == 1  # only A1009's refused POST


async def test_a_bad_argument_from_the_plan_is_explained_and_never_sent(
    agent: tuple[Agent, SqliteRunStore], billing: Billing
) -> None:
    ask, _ = agent
    run = await ask.plan("invoice for A1001", user_id=CUSTOMER, chat_id=1)
    run.steps[1].args["title"] = "x" * 61
    finished = await ask.executor.start(run)
    assert finished.status is RunStatus.FAILED and billing.posts == []
    assert [s.status for s in finished.steps] == [StepStatus.CANCELLED, StepStatus.FAILED]
    assert finished.answer == (
        "Check the status of order A1001: not done.\n"
        "Send an invoice for order A1001: the invoice title can be at most 60 characters.\n"
        "If you need more help, please contact a human agent."
    )


async def test_listed_by_stepwise_tools_and_checked(billing: Billing, tmp_path: Path) -> None:
    path = write(tmp_path, billing)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPWISE_", "TELEGRAM_"))}
    env.update(STEPWISE_DB=str(tmp_path / "cli.db"), STEPWISE_TOOLS=str(path), INVOICE_KEY=SECRET)
    for args in (("tools",), ("tools", "check")):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "stepwise", *args, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await proc.communicate()
        assert proc.returncode == 0, err
        text = out.decode()
        assert SECRET not in text
        if args == ("tools",):
            assert "request_invoice  [high risk approved by the customer]  POST" in text
            assert "Send an invoice for one of the customer's own orders" in text
            assert "arguments: order_id: string, title: string/null (optional)" in text
            assert "phrases: invoice, 开发票, 发票" in text
            assert "cancel_order  [high risk approved by the customer]  not configured" in text
        else:
            assert "request_invoice: POST" in text and "risk=high" in text


async def test_shown_in_the_console(agent: tuple[Agent, SqliteRunStore]) -> None:
    ask, store = agent
    paused = await ask.ask("invoice for A1001", user_id=CUSTOMER, chat_id=1)
    assert paused.pause is not None
    await ask.decide(paused.id, user_id=CUSTOMER, approved=True, nonce=paused.pause.nonce)
    app = create_app(store, staff_token=TOKEN)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://console") as client:
        form = await client.get("/login")
        csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert csrf is not None
        await client.post("/login", data={"csrf": csrf[1], "token": TOKEN, "next": "/runs"})
        listed = await client.get("/runs", params={"tool": "request_invoice"})
        assert paused.id in listed.text
        page = await client.get(f"/runs/{paused.id}")
        assert "request_invoice" in page.text and "INV-1" in page.text


BAD_DECLARATIONS = [
    ('goal = { zh = "x", en = "for {customer}" }', "goal.en: {customer} is not one of"),
    ('args.order_id = { type = "uuid" }', "args.order_id.type: Input should be"),
    ('templates = [{ zh = "{secret}", en = "x" }]', "templates.0.zh: {secret} is not one of"),
    (
        'rules = [{ name = "r", after = "nope", field = "status", values = ["x"], reason = { zh = "x", en = "x" } }]',
        "rules.0.after: no tool named 'nope'",
    ),
    ('approval = "staff"', "approval: Input should be 'customer'"),
    ('description = "just text"', "description: Input should be a valid dictionary"),
]


@pytest.mark.parametrize(("line", "problem"), BAD_DECLARATIONS)
def test_a_bad_declaration_is_one_line_naming_file_tool_and_field(
    line: str, problem: str, tmp_path: Path
) -> None:
    key = line.split("=", 1)[0].strip()
    base_lines = [
        "[tools.send_note]",
        'description = { zh = "发备注", en = "Send a note." }',
        'goal = { zh = "备注 {order_id}", en = "Note on {order_id}" }',
        'args.order_id = { type = "order_id" }',
        'method = "POST"',
        'risk = "read"',
        'url = "https://s.example/notes/{order_id}"',
    ]
    lines = [ln for ln in base_lines if not ln.startswith(key)] + [line]
    path = tmp_path / "tools.toml"
    path.write_text(
        "\n".join(lines)
        + "\n[tools.get_order_status]\nurl = 'https://s.example/o/{order_id}'\nbogus = 1\n"
    )
    config, problems = check_tools_file(path, env={})
    assert config is None
    mine = [p for p in problems if p.startswith(f"{path}: tool send_note: ")]
    assert len(mine) == 1 and problem in mine[0], problems
    # The whole file is checked: the second tool's problem is reported too.
    assert any(p.startswith(f"{path}: tool get_order_status: bogus") for p in problems), problems
    assert all("\n" not in p for p in problems)


def test_a_catalog_tool_cannot_be_redeclared(tmp_path: Path) -> None:
    path = tmp_path / "tools.toml"
    path.write_text(
        '[tools.cancel_order]\nmethod = "POST"\nurl = "https://s.example/c/{order_id}"\n'
        'confirm = { zh = "x", en = "Cancel?" }\n'
    )
    _, problems = check_tools_file(path, env={})
    assert problems == [
        f"{path}: tool cancel_order: confirm: cancel_order is declared by stepwise; "
        "only its request belongs here"
    ]
    assert Language.EN  # the catalog's wording stays the one the answers use


async def test_the_production_runtime_plans_it_from_the_files_phrases(
    billing: Billing, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No test planner: `open_runtime` gives the rule planner the catalog in use."""
    tools_file = tmp_path / "tools.toml"
    tools_file.write_text(TOOLS_TOML.replace("@BASE@", billing.base), encoding="utf-8")
    monkeypatch.setenv("INVOICE_KEY", SECRET)
    settings = Settings.model_validate(
        {"STEPWISE_DB": str(tmp_path / "runs.db"), "STEPWISE_TOOLS": str(tools_file)}
    )
    runtime = await open_runtime(settings)
    try:
        run = await runtime.agent.ask(
            "please send me an invoice for A1001", user_id=CUSTOMER, chat_id=CUSTOMER
        )
        assert [(s.tool, s.args.get("order_id")) for s in run.steps] == [
            ("get_order_status", "A1001"),
            ("request_invoice", "A1001"),
        ]
        assert run.status is RunStatus.PAUSED and run.pause is not None
        assert billing.posts == []  # high risk: nothing is sent before the customer confirms
        outcome = await runtime.agent.decide(
            run.id, user_id=CUSTOMER, approved=True, nonce=run.pause.nonce
        )
        assert outcome.run is not None and outcome.run.status is RunStatus.COMPLETED
        assert len(billing.posts) == 1
        assert billing.posts[0]["Idempotency-Key"] == f"{run.id}:s2"
    finally:
        await runtime.close()


# -- issue 20 item 3: nothing that changes data rests on a default -------------------------

DELETE_ORDER = [
    "[tools.delete_order]",
    'description = { zh = "删除订单", en = "Delete an order." }',
    'goal = { zh = "删除订单 {order_id}", en = "Delete order {order_id}" }',
    'args.order_id = { type = "order_id" }',
    'phrases = { zh = ["删除订单"], en = ["delete order"] }',
    'method = "DELETE"',
    'url = "https://s.example/orders/{order_id}"',
]


@pytest.mark.parametrize(
    ("lines", "tool", "missing"),
    [
        (DELETE_ORDER, "delete_order", "risk"),
        ([*DELETE_ORDER, 'risk = "high"'], "delete_order", "approval"),
        ([*DELETE_ORDER, 'risk = "high"', 'approval = "customer"'], "delete_order", "idempotency"),
        (
            [
                "[tools.cancel_order]",
                'method = "PUT"',
                'url = "https://s.example/orders/{order_id}"',
            ],
            "cancel_order",
            "idempotency",
        ),
    ],
)
def test_a_change_missing_its_risk_approval_or_idempotency_is_refused_in_one_line(
    lines: list[str], tool: str, missing: str, tmp_path: Path
) -> None:
    path = tmp_path / "tools.toml"
    path.write_text("\n".join(lines) + "\n")
    config, problems = check_tools_file(path, env={})
    assert config is None
    (line,) = problems
    assert line.startswith(f"{path}: tool {tool}: {missing}: missing"), line
    with pytest.raises(ToolsConfigError) as refused:
        load_tools_config(path, env={})
    assert str(refused.value) == line and "\n" not in line


def test_a_change_declaring_all_three_waits_for_the_customer(tmp_path: Path) -> None:
    path = tmp_path / "tools.toml"
    declared = [*DELETE_ORDER, 'risk = "high"', 'approval = "customer"', 'idempotency = "ignored"']
    path.write_text("\n".join(declared) + "\n")
    (tool,) = load_tools_config(path, env={}).tools
    assert tool.risk is Risk.HIGH and tool.spec.approval is Approver.CUSTOMER
    assert tool.idempotency is Idempotency.IGNORED and tool.reconcile is None
    # A read declared as one, by a POST, needs neither approval nor idempotency.
    reads = [ln.replace('"DELETE"', '"POST"') for ln in DELETE_ORDER] + ['risk = "read"']
    path.write_text("\n".join(reads) + "\n")
    (read,) = load_tools_config(path, env={}).tools
    assert read.risk is Risk.READ


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        (
            'idempotency = "honoured"\nreconcile = { url = "https://s.example/o/{order_id}", '
            'match = { status = "cancelled" } }',
            'reconcile: only a change whose backend ignores the key (idempotency = "ignored")',
        ),
        (
            'idempotency = "ignored"\nreconcile = { url = "https://s.example/o/{id}", '
            'match = { status = "cancelled" } }',
            "reconcile.url: placeholder {id} is not an argument of cancel_order",
        ),
        (
            'idempotency = "ignored"\nreconcile = { url = "https://s.example/o/{order_id}", '
            'match = { note = "{secret}" } }',
            "reconcile.match: {secret} is neither an argument of cancel_order nor "
            "{idempotency_key}",
        ),
        ('idempotency = "sometimes"', "idempotency: Input should be 'honoured' or 'ignored'"),
    ],
)
def test_a_bad_idempotency_or_reconcile_line_is_one_line(
    extra: str, problem: str, tmp_path: Path
) -> None:
    path = tmp_path / "tools.toml"
    path.write_text(
        '[tools.cancel_order]\nmethod = "PUT"\nurl = "https://s.example/o/{order_id}"\n'
        + extra
        + "\n"
    )
    _, problems = check_tools_file(path, env={})
    (line,) = problems
    assert line.startswith(f"{path}: tool cancel_order: {problem}"), line
