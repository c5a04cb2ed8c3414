"""StandIn: a local Telegram Bot API served over real HTTP, with the test-side controls.

The bot under test talks to it exactly as to Telegram, through python-telegram-bot's
`base_url`, so the real request layer (form encoding, timeouts, retries, error
mapping) is exercised. Tests drive the other side of the conversation in-process
through the inherited `Controls` (inject messages, press buttons, inject faults, wait
for the bot) or over the `/_test/...` JSON endpoints (`testapi`) from another process.
This module is the HTTP side only: routing, tokens, fault application, the call log.
"""

from __future__ import annotations

import asyncio
import json
import re
from types import TracebackType
from typing import Any

from aiohttp import web

from .changes import ChangeSignal
from .clock import Clock, SystemClock
from .controls import Controls
from .errors import ApiError, bad_request, not_found, unauthorized
from .flood import FloodLimits
from .methods import BotApi, Handler
from .params import Params
from .records import CallRecord, User
from .state import BotState
from .testapi import add_test_routes
from .validation import validate_call
from .webhook import WebhookRetry, WebhookSender

JSON = dict[str, Any]

DEFAULT_TOKEN = "123456789:AAStandInTokenForLocalTests_0123456789"
_BOT_PATH = re.compile(r"/bot(?P<token>[^/]*)/(?P<method>[^/]*)")
_FILE_PATH = re.compile(r"/file/bot(?P<token>[^/]*)/(?P<path>.+)")
_TOKEN_SHAPE = re.compile(r"(?P<bot_id>\d+):[A-Za-z0-9_-]+")
_CLIENT_GONE = 499  # nginx's "client closed request": logged for calls abandoned mid-way


class StandIn(Controls):
    """A fake Telegram for one bot token, reachable at `base_url` once started."""

    def __init__(
        self,
        token: str = DEFAULT_TOKEN,
        *,
        bot_username: str = "stepwise_test_bot",
        bot_first_name: str = "Stepwise Test Bot",
        flood: FloodLimits | None = None,
        callback_query_ttl: float | None = None,
        first_update_id: int = 1,
        clock: Clock | None = None,
        webhook_retry: WebhookRetry | None = None,
        patience: float = 1.0,
    ) -> None:
        """`flood` defaults to Telegram's guidance; `clock` to the system's Unix time;
        `webhook_retry` to Telegram's patience with a failing webhook; `patience` multiplies
        every `wait_for…` timeout (a test suite on a busy machine gives its waits more time:
        a wait still ends as soon as its condition holds).

        One clock serves message dates, flood windows, callback query expiry and the call
        log, so a fake clock moves all of them together.
        """
        shape = _TOKEN_SHAPE.fullmatch(token)
        if shape is None:
            raise ValueError("token must look like a Telegram token: '<digits>:<secret>'")
        self.token = token
        bot = User(
            id=int(shape["bot_id"]), first_name=bot_first_name, is_bot=True, username=bot_username
        )
        self.clock: Clock = clock or SystemClock()
        state = BotState(
            bot,
            limits=flood or FloodLimits(),
            clock=self.clock,
            callback_query_ttl=callback_query_ttl,
            first_update_id=first_update_id,
        )
        super().__init__(state, ChangeSignal())
        self.patience = patience
        self.api = BotApi(self.state, self.changes, lambda: self._closing)
        self.webhook = WebhookSender(
            self.state, self.changes, lambda: self._closing, webhook_retry or WebhookRetry()
        )
        self._closing = False
        self._runner: web.AppRunner | None = None
        self._url: str | None = None

    # ----- lifecycle -------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on host:port (0 picks a free port) and return `base_url`."""
        if self._runner is not None:
            raise RuntimeError("StandIn is already running")
        app = web.Application(client_max_size=64 * 1024 * 1024)
        add_test_routes(app, self)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # Waiting handlers are released before cleanup, so a short shutdown grace suffices;
        # handler cancellation ends a long poll whose client went away, as Telegram does.
        runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=1.0
        )
        await runner.setup()
        await web.TCPSite(runner, host, port).start()
        bound_port = runner.addresses[0][1]
        shown_host = f"[{host}]" if ":" in host else host
        self._closing = False
        self._runner = runner
        self._url = f"http://{shown_host}:{bound_port}"
        self.webhook.start()
        return self.base_url

    async def stop(self) -> None:
        """Answer waiting long polls (with no updates), end webhook delivery, then close."""
        if self._runner is None:
            return
        self._closing = True
        await self.changes.notify()
        await self.webhook.stop()
        runner, self._runner = self._runner, None
        await runner.cleanup()

    async def __aenter__(self) -> StandIn:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    @property
    def url(self) -> str:
        """Server root, e.g. http://127.0.0.1:PORT (the /_test API lives under it)."""
        if self._url is None:
            raise RuntimeError("StandIn is not running; await start() first")
        return self._url

    @property
    def base_url(self) -> str:
        """What to pass as PTB's `base_url` (PTB appends the token)."""
        return f"{self.url}/bot"

    @property
    def base_file_url(self) -> str:
        """What to pass as PTB's `base_file_url`."""
        return f"{self.url}/file/bot"

    @property
    def bot(self) -> JSON:
        """The bot's User object, as getMe returns it."""
        return self.state.bot.to_api()

    @property
    def flood(self) -> FloodLimits:
        """The flood limits this stand-in applies (what a bot talking to it must pace by)."""
        return self.state.limits

    # ----- HTTP ------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        bot_call = _BOT_PATH.fullmatch(request.path)
        if bot_call is not None:
            return await self._bot_call(request, bot_call["token"], bot_call["method"])
        file_call = _FILE_PATH.fullmatch(request.path)
        if file_call is not None:
            return self._file(file_call["token"], file_call["path"])
        return _error_response(not_found())

    def _token_error(self, token: str) -> ApiError | None:
        """Telegram: 401 for a well-formed unknown token, 404 for a malformed one."""
        if token == self.token:
            return None
        return unauthorized() if _TOKEN_SHAPE.fullmatch(token) else not_found()

    async def _bot_call(self, request: web.Request, token: str, method: str) -> web.Response:
        entry = self.api.lookup(method)
        name = entry[0] if entry is not None else method
        params, problem = await _read_params(request)
        problem = self._token_error(token) or problem
        if problem is None and entry is None:
            problem = not_found()
        record = self.state.begin_call(name, params, Params(params).integer("chat_id"))
        try:
            if problem is not None:
                raise problem
            assert entry is not None
            result = await self._run(entry[1], params, record)
        except ApiError as exc:
            self.state.end_call(record, exc.status, exc.description)
            await self.changes.notify()
            return _error_response(exc)
        except asyncio.CancelledError:
            self.state.end_call(record, _CLIENT_GONE, "client closed the connection")
            self.changes.poke()
            raise
        record.result = result
        self.state.end_call(record, 200, None)
        await self.changes.notify()
        return web.json_response({"ok": True, "result": result})

    async def _run(self, handler: Handler, params: JSON, record: CallRecord) -> Any:
        """Check the call against the spec, then call the method, applying an injected
        fault if one matches (a fault that fails the call wins: nothing was processed)."""
        fault = self.state.take_fault(record.method, record.chat_id)
        if fault is None:
            validate_call(record.method, params)
            return await handler(Params(params))
        error = fault.error()
        if error is None:  # the call takes effect; only the answer is late
            validate_call(record.method, params)
            result = await handler(Params(params))
            await self.changes.notify()
            await asyncio.sleep(fault.delay)
            return result
        await asyncio.sleep(fault.delay)
        raise error

    def _file(self, token: str, path: str) -> web.Response:
        problem = self._token_error(token)
        known = any(record["file_path"] == path for record in self.state.files.values())
        if problem is None and not known:
            problem = not_found()
        if problem is not None:
            return _error_response(problem)
        return web.Response(
            body=f"standin file {path}".encode(), content_type="application/octet-stream"
        )


def _error_response(error: ApiError) -> web.Response:
    if error.body is not None:
        return web.Response(status=error.status, text=error.body, content_type="text/html")
    return web.json_response(error.payload(), status=error.status)


async def _read_params(request: web.Request) -> tuple[JSON, ApiError | None]:
    """Query string plus a JSON, urlencoded or multipart body, as Telegram accepts them."""
    params: JSON = dict(request.query)
    if not request.body_exists:
        return params, None
    if request.content_type == "application/json":
        try:
            body = json.loads(await request.text())
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return params, bad_request("can't parse JSON object")
        params.update(body)
    elif request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        form = await request.post()
        for key, value in form.items():
            params[key] = value if isinstance(value, str) else f"<upload {key}>"
    return params, None
