"""StandIn: a local Telegram Bot API served over real HTTP, plus the test-side controls.

The bot under test talks to it exactly as to Telegram, through python-telegram-bot's
`base_url`, so the real request layer (form encoding, timeouts, retries, error
mapping) is exercised. Tests drive the other side of the conversation in-process
(inject messages, press buttons, inject faults, wait for the bot) or over the
`/_test/...` JSON endpoints from another process.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from types import TracebackType
from typing import Any

from aiohttp import web

from .changes import ChangeSignal
from .clock import Clock, SystemClock
from .errors import ApiError, bad_request, not_found, unauthorized
from .flood import FloodLimits
from .methods import BotApi, Handler
from .params import Params
from .state import BotState, CallbackAnswer, CallRecord, Fault, ShownMessage, User
from .testapi import add_test_routes

JSON = dict[str, Any]

DEFAULT_TOKEN = "123456789:AAStandInTokenForLocalTests_0123456789"
_BOT_PATH = re.compile(r"/bot(?P<token>[^/]*)/(?P<method>[^/]*)")
_FILE_PATH = re.compile(r"/file/bot(?P<token>[^/]*)/(?P<path>.+)")
_TOKEN_SHAPE = re.compile(r"(?P<bot_id>\d+):[A-Za-z0-9_-]+")
_CLIENT_GONE = 499  # nginx's "client closed request": logged for calls abandoned mid-way


class StandIn:
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
    ) -> None:
        """`flood` defaults to Telegram's guidance; `clock` to the system's Unix time.

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
        self.state = BotState(
            bot,
            limits=flood or FloodLimits(),
            clock=self.clock,
            callback_query_ttl=callback_query_ttl,
            first_update_id=first_update_id,
        )
        self.changes = ChangeSignal()
        self.api = BotApi(self.state, self.changes, lambda: self._closing)
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
        return self.base_url

    async def stop(self) -> None:
        """Answer waiting long polls (with no updates), then close the server."""
        if self._runner is None:
            return
        self._closing = True
        await self.changes.notify()
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
        self.state.end_call(record, 200, None)
        await self.changes.notify()
        return web.json_response({"ok": True, "result": result})

    async def _run(self, handler: Handler, params: JSON, record: CallRecord) -> Any:
        """Call the method, applying an injected fault if one matches."""
        fault = self.state.take_fault(record.method, record.chat_id)
        if fault is None:
            return await handler(Params(params))
        error = fault.error()
        if error is None:  # the call takes effect; only the answer is late
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

    # ----- test side: the user's half of the conversation ------------------------------

    def add_chat(
        self,
        chat_id: int,
        user_id: int | None = None,
        *,
        first_name: str | None = None,
        last_name: str | None = None,
        username: str | None = None,
        language_code: str | None = "en",
        title: str | None = None,
    ) -> JSON:
        """Make a chat known without a message (so the bot can write first)."""
        user = self.state.ensure_user(
            self._sender_id(chat_id, user_id),
            first_name=first_name,
            last_name=last_name,
            username=username,
            language_code=language_code,
        )
        return self.state.ensure_chat(chat_id, user, title).to_api()

    def inject_message(
        self,
        chat_id: int,
        user_id: int | None = None,
        text: str | None = None,
        *,
        sticker: bool = False,
        photo: bool = False,
        voice: bool = False,
        caption: str | None = None,
        language_code: str | None = "en",
        first_name: str | None = None,
        last_name: str | None = None,
        username: str | None = None,
        title: str | None = None,
        reply_to_message_id: int | None = None,
    ) -> JSON:
        """A user sends a message; returns the Message JSON the bot will receive.

        Private chats use the user's id as chat id (user_id defaults to chat_id); any
        other chat_id makes a group ("supergroup" from -10**12 down). For media, `text`
        becomes the caption. "/commands" get bot_command entities as on Telegram.
        """
        media = self._media(sticker=sticker, photo=photo, voice=voice)
        if text is None and not media:
            raise ValueError("inject_message needs text, sticker, photo or voice")
        if media and text is not None:
            if sticker:
                raise ValueError("stickers carry no text or caption")
            caption, text = caption or text, None
        user = self.state.ensure_user(
            self._sender_id(chat_id, user_id),
            first_name=first_name,
            last_name=last_name,
            username=username,
            language_code=language_code,
        )
        payload = self.state.inject_message(
            chat_id,
            user,
            text=text,
            media=media,
            caption=caption,
            reply_to=reply_to_message_id,
            title=title,
        )
        self.changes.poke()
        return payload

    def _sender_id(self, chat_id: int, user_id: int | None) -> int:
        if user_id is not None:
            return user_id
        chat = self.state.chats.get(chat_id)
        if chat is not None and chat.is_group:
            if chat.last_user_id is None:
                raise ValueError(f"chat {chat_id} is a group: pass user_id")
            return chat.last_user_id
        if chat_id < 0:
            raise ValueError(f"chat {chat_id} is a group: pass user_id")
        return chat_id

    def _media(self, *, sticker: bool, photo: bool, voice: bool) -> JSON:
        chosen = [
            kind
            for kind, wanted in (("sticker", sticker), ("photo", photo), ("voice", voice))
            if wanted
        ]
        if len(chosen) > 1:
            raise ValueError("pick one of sticker, photo, voice")
        return self.state.new_media(chosen[0]) if chosen else {}

    def press_button(
        self,
        chat_id: int,
        message_id: int,
        callback_data: str,
        user_id: int | None = None,
        *,
        forge: bool = False,
    ) -> str:
        """Tap the inline button carrying `callback_data`; returns the callback query id.

        Refuses (ValueError/LookupError) unless that button is on that message, because
        real users can only tap what is shown. `forge=True` sends any data, even for a
        message that no longer exists (the bot then sees an inaccessible message).
        """
        chat = self.state.chat(chat_id)
        user = self.state.ensure_user(self._sender_id(chat.id, user_id))
        query_id = self.state.press_button(chat_id, message_id, callback_data, user, forge=forge)
        self.changes.poke()
        return query_id

    def press_button_by_text(
        self,
        chat_id: int,
        text: str,
        *,
        message_id: int | None = None,
        user_id: int | None = None,
    ) -> str:
        """Tap the button labelled `text` (on `message_id`, or the newest message with it)."""
        candidates = [
            shown
            for shown in reversed(self.chat_messages(chat_id))
            if message_id is None or shown.message_id == message_id
        ]
        for shown in candidates:
            for row in shown.buttons:
                for button in row:
                    if button.text == text and button.callback_data is not None:
                        return self.press_button(
                            chat_id, shown.message_id, button.callback_data, user_id
                        )
        raise LookupError(f"no callback button labelled {text!r} in chat {chat_id}")

    def block_chat(self, chat_id: int, *, notify: bool = True) -> None:
        """The user blocks the bot (groups: the bot is kicked); sends then answer 403.

        With `notify`, the bot gets the my_chat_member update Telegram would send.
        """
        self.state.set_blocked(chat_id, True, notify=notify)
        self.changes.poke()

    def unblock_chat(self, chat_id: int, *, notify: bool = True) -> None:
        """Undo block_chat."""
        self.state.set_blocked(chat_id, False, notify=notify)
        self.changes.poke()

    # ----- test side: faults -----------------------------------------------------------

    def fail_next(
        self,
        method: str,
        times: int = 1,
        *,
        status: int | None = 500,
        description: str | None = None,
        delay: float = 0.0,
        retry_after: int | None = None,
        chat_id: int | None = None,
        body: str | None = None,
    ) -> None:
        """Make the next `times` calls of `method` (optionally only to `chat_id`) fail.

        The call fails with `status` and `description` (default: the status phrase)
        after `delay` seconds and has no effect. With `status=None` the call succeeds
        but its answer is delayed, to model "Telegram sent it, the client timed out".
        `body` replaces the JSON envelope (e.g. an HTML 502 page).
        """
        if times < 1:
            raise ValueError("times must be at least 1")
        self.state.faults.append(
            Fault(method.lower(), times, status, description, delay, retry_after, chat_id, body)
        )

    def clear_faults(self) -> None:
        """Drop all injected faults that have not fired yet."""
        self.state.faults.clear()

    def reset(self) -> None:
        """Forget chats, messages, updates, calls and faults (for a long-running server)."""
        self.state.reset()
        self.changes.poke()

    # ----- test side: observing --------------------------------------------------------

    def chat_messages(self, chat_id: int) -> list[ShownMessage]:
        """What the chat currently shows, oldest first (both directions, not deleted)."""
        return self.state.chat_messages(chat_id)

    def bot_messages(self, chat_id: int) -> list[ShownMessage]:
        """Only the bot's messages in the chat."""
        return [shown for shown in self.chat_messages(chat_id) if shown.from_bot]

    def last_bot_message(self, chat_id: int) -> ShownMessage | None:
        """The bot's newest message in the chat, if any."""
        sent = self.bot_messages(chat_id)
        return sent[-1] if sent else None

    def callback_answers(self, query_id: str) -> list[CallbackAnswer]:
        """The accepted answer to a button press ([] while unanswered)."""
        query = self.state.callback_queries.get(query_id)
        if query is None:
            raise LookupError(f"unknown callback query {query_id!r}")
        return [] if query.answer is None else [query.answer]

    def chat_actions(self, chat_id: int) -> list[str]:
        """Every sendChatAction the bot made in the chat, in order."""
        return list(self.state.chat(chat_id).actions)

    def reply_keyboard(self, chat_id: int) -> JSON | None:
        """The custom (reply) keyboard the chat currently shows, if any."""
        return self.state.chat(chat_id).reply_keyboard

    def commands(self, scope: JSON | None = None, language_code: str = "") -> list[JSON]:
        """The command list set with setMyCommands for that scope and language."""
        key = json.dumps(scope or {"type": "default"}, sort_keys=True), language_code
        return list(self.state.commands.get(key, []))

    def pending_updates(self) -> list[JSON]:
        """Updates queued and not yet confirmed by an offset."""
        return [update.to_api() for update in self.state.updates]

    def calls(self, method: str | None = None, chat_id: int | None = None) -> list[CallRecord]:
        """The Bot API call log (in-flight calls have status None), oldest first."""
        return [
            record
            for record in self.state.calls
            if (method is None or record.method.lower() == method.lower())
            and (chat_id is None or record.chat_id == chat_id)
        ]

    def count_calls(self, method: str | None = None, chat_id: int | None = None) -> int:
        """How many Bot API calls were made (e.g. per chat, to check rate behaviour)."""
        return len(self.calls(method, chat_id))

    @property
    def served_429(self) -> int:
        """How many 429 answers were served (flood control and injected)."""
        return self.state.served_429

    def flood_refusals(self, chat_id: int | None = None) -> int:
        """How many calls flood control refused, overall or for one chat."""
        refused = self.state.flood.refused
        return sum(refused.values()) if chat_id is None else refused[chat_id]

    @property
    def active_polls(self) -> int:
        """getUpdates calls currently waiting (lets tests know the bot is listening)."""
        return self.state.active_polls

    # ----- test side: waiting ----------------------------------------------------------

    # The waits take `timeout` (ASYNC109) on purpose: a test wants one number that both
    # bounds the wait and ends up in the TimeoutError, not an outer asyncio.timeout().
    async def wait_for(
        self,
        predicate: Callable[[], bool],
        timeout: float = 5.0,  # noqa: ASYNC109
    ) -> None:
        """Wait until `predicate()` holds, re-checking on every change; TimeoutError if not."""
        if not await self.changes.wait_until(predicate, timeout):
            recent = [f"{c.method}->{c.status}" for c in self.state.calls[-8:]]
            raise TimeoutError(f"condition not met within {timeout}s; recent calls: {recent}")

    async def wait_for_call(
        self,
        method: str,
        *,
        chat_id: int | None = None,
        count: int = 1,
        timeout: float = 5.0,  # noqa: ASYNC109
    ) -> CallRecord:
        """Wait until `count` calls of `method` have completed; returns the count-th."""

        def done() -> list[CallRecord]:
            return [c for c in self.calls(method, chat_id) if c.status is not None]

        await self.wait_for(lambda: len(done()) >= count, timeout)
        return done()[count - 1]

    async def wait_for_bot_messages(
        self,
        chat_id: int,
        count: int = 1,
        timeout: float = 5.0,  # noqa: ASYNC109
    ) -> list[ShownMessage]:
        """Wait until the bot has at least `count` messages showing in the chat."""
        await self.wait_for(lambda: len(self._bot_messages_if_any(chat_id)) >= count, timeout)
        return self.bot_messages(chat_id)

    def _bot_messages_if_any(self, chat_id: int) -> list[ShownMessage]:
        return self.bot_messages(chat_id) if chat_id in self.state.chats else []


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
