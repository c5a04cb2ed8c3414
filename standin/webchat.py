"""A browser chat window onto the stand-in: the demo customer's side of a Telegram chat,
and, when a staff group is configured, the staff's side: a forum with one topic per case.

The page shows exactly what the stand-in's chats show (the state the bot built through
real Bot API calls): the plan, one message per step edited in place, inline buttons.
Typing sends a message and pressing a button sends a callback query, through the same
primitives the tests use (`inject_message`, `press_button`), so the bot receives them
through `getUpdates` like any Telegram update. The staff panel lists the forum's topics,
shows the selected topic's messages, and writes and presses buttons there as the one
demo staff member (`StaffDesk`), again as injected updates.

The page long-polls `/api/state`: the server answers when the chat's fingerprint differs
from the one the page has (or after `wait` seconds), waking on the stand-in's change
signal, so edits show up at once without a busy poll. POSTs must be JSON from this origin:
a cross-site form cannot send them, and a cross-site script would need a CORS preflight
that is never granted.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from .records import ShownMessage
from .server import StandIn

JSON = dict[str, Any]
ASSETS = Path(__file__).parent / "webchat"
MAX_TEXT = 4096
MAX_WAIT_S = 25.0
SUGGESTIONS = (
    "where is my order A1001?",
    "cancel order A1003",
    "A1002 如果还没送达，看看延迟补偿",
    "what is your refund policy?",
    "保修政策是什么",
)
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self';"
    " img-src 'self' data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
)


GENERAL = 0  # the page's id for a forum's General topic (its messages have no thread id)
# How the staff panel words a service message, after the name of who caused it.
_SERVICE_LINES = {
    "forum_topic_created": "created the topic",
    "forum_topic_edited": "edited the topic",
    "forum_topic_closed": "closed the topic",
    "forum_topic_reopened": "reopened the topic",
    "new_chat_members": "added members",
    "left_chat_member": "left the group",
    "new_chat_title": "renamed the group",
    "pinned_message": "pinned a message",
}


@dataclass(frozen=True)
class StaffDesk:
    """The staff group the page's second panel shows, and the staff member it writes as."""

    chat_id: int
    user_id: int
    first_name: str = "Demo staff"
    title: str = "Support staff"


def prepare_staff_group(standin: StandIn, desk: StaffDesk) -> None:
    """Make the desk's forum, owned by its staff member, with the bot an administrator
    that may manage and delete topics (what a support team sets up in Telegram)."""
    if desk.chat_id in standin.state.chats:
        return
    standin.add_chat(
        desk.chat_id, desk.user_id, title=desk.title, first_name=desk.first_name, is_forum=True
    )
    standin.set_bot_rights(desk.chat_id, can_manage_topics=True, can_pin_messages=True)


class WebChat:
    """Serves the chat page for one customer (a private chat: chat id = user id) and,
    with a `staff` desk, the staff group beside it."""

    def __init__(
        self,
        standin: StandIn,
        *,
        user_id: int,
        first_name: str = "Demo customer",
        language_code: str = "en",
        console_url: str | None = None,
        staff: StaffDesk | None = None,
    ) -> None:
        self.standin = standin
        self.user_id = user_id
        self.first_name = first_name
        self.language_code = language_code
        self.console_url = console_url
        self.staff = staff
        self._queries: list[tuple[str, str]] = []  # (callback query id, panel pressed in)
        self._closing = False
        self._runner: web.AppRunner | None = None
        self._url: str | None = None

    # ----- lifecycle -------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024, middlewares=[_security_headers])
        app.router.add_get("/", self._index)
        # Browsers ask for /favicon.ico on their own; a 404 there is noise in every console.
        app.router.add_get("/favicon.ico", self._favicon)
        app.router.add_get("/api/config", self._config)
        app.router.add_get("/api/state", self._state)
        app.router.add_post("/api/send", self._send)
        app.router.add_post("/api/press", self._press)
        app.router.add_post("/api/staff/send", self._staff_send)
        app.router.add_post("/api/staff/press", self._staff_press)
        app.router.add_static("/static/", ASSETS, show_index=False)
        return app

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on host:port (0 picks a free port); returns the page's URL."""
        runner = web.AppRunner(
            self.app(), access_log=None, handler_cancellation=True, shutdown_timeout=1.0
        )
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port).start()
        except OSError:
            await runner.cleanup()
            raise
        shown_host = f"[{host}]" if ":" in host else host
        self._runner = runner
        self._url = f"http://{shown_host}:{runner.addresses[0][1]}/"
        return self._url

    async def stop(self) -> None:
        """Release waiting long polls, then close the server."""
        if self._runner is None:
            return
        self._closing = True
        await self.standin.changes.notify()
        runner, self._runner = self._runner, None
        await runner.cleanup()

    @property
    def url(self) -> str:
        if self._url is None:
            raise RuntimeError("WebChat is not running; await start() first")
        return self._url

    # ----- what the page sees ----------------------------------------------------------

    def snapshot(self) -> JSON:
        """The chat as the page renders it, plus answered button presses (toasts, each
        with the panel it was pressed in: "chat" for the customer, "staff")."""
        chat_id = self.user_id
        messages = (
            self.standin.chat_messages(chat_id) if chat_id in self.standin.state.chats else []
        )
        toasts = []
        for query_id, panel in self._queries:
            for answer in self.standin.callback_answers(query_id):
                if answer.text:
                    toasts.append(
                        {
                            "id": query_id,
                            "text": answer.text,
                            "alert": answer.show_alert,
                            "panel": panel,
                        }
                    )
        body: JSON = {
            "messages": [_message(m) for m in messages],
            "toasts": toasts,
            # From the bot's sendChatAction, as Telegram shows it: never inferred from the
            # customer having written last (during a handoff nobody is typing).
            "typing": self._typing(chat_id),
            "staff": self.staff_snapshot(),
        }
        body["version"] = _fingerprint(body)
        return body

    def _typing(self, chat_id: int) -> bool:
        shown = self.standin.shown_action(chat_id)
        return shown is not None and shown[0] == "typing"

    def staff_snapshot(self) -> JSON | None:
        """The staff group as its panel renders it: General and the topics, and every
        message with the topic it is in (GENERAL for none) and who wrote it."""
        desk = self.staff
        if desk is None:
            return None
        standin = self.standin
        if desk.chat_id not in standin.state.chats:
            return {"topics": [], "messages": []}
        topics = [{"id": GENERAL, "name": "General", "closed": False}] + [
            {"id": t["message_thread_id"], "name": t["name"], "closed": t["closed"]}
            for t in standin.topics(desk.chat_id)
        ]
        messages = []
        for shown in standin.chat_messages(desk.chat_id):
            sender = self._name(shown)
            entry = _message(shown)
            entry["topic"] = shown.message_thread_id or GENERAL
            entry["sender"] = sender
            entry["mine"] = shown.sender_id == desk.user_id
            line = _SERVICE_LINES.get(shown.kind)
            entry["service"] = f"{sender} {line}" if line else None
            messages.append(entry)
        return {"topics": topics, "messages": messages}

    def _name(self, shown: ShownMessage) -> str:
        if shown.from_bot:
            return str(self.standin.bot.get("first_name", "bot"))
        user = self.standin.state.users.get(shown.sender_id)
        return user.first_name if user is not None else str(shown.sender_id)

    async def _state(self, request: web.Request) -> web.Response:
        since = request.query.get("since", "")
        try:
            wait = min(max(float(request.query.get("wait", "0")), 0.0), MAX_WAIT_S)
        except ValueError:
            wait = 0.0
        if since and wait:
            # A shown "typing…" ends on its own after a few seconds, with no change to wake
            # on: the poll answers by then, so the page clears it on time.
            shown = self.standin.shown_action(self.user_id)
            if shown is not None:
                wait = min(wait, shown[1] + 0.05)
            await self.standin.changes.wait_until(
                lambda: self._closing or self.snapshot()["version"] != since, wait
            )
        return web.json_response(self.snapshot())

    async def _index(self, request: web.Request) -> web.StreamResponse:
        return web.FileResponse(ASSETS / "index.html")

    async def _favicon(self, request: web.Request) -> web.StreamResponse:
        return web.FileResponse(ASSETS / "favicon.svg", headers={"Content-Type": "image/svg+xml"})

    async def _config(self, request: web.Request) -> web.Response:
        bot = self.standin.bot
        return web.json_response(
            {
                "user_id": self.user_id,
                "bot_name": bot.get("first_name", "bot"),
                "bot_username": bot.get("username", ""),
                "console_url": self.console_url,
                "suggestions": list(SUGGESTIONS),
                "max_text": MAX_TEXT,
                "staff": None
                if self.staff is None
                else {
                    "chat_id": self.staff.chat_id,
                    "user_id": self.staff.user_id,
                    "name": self.staff.first_name,
                    "title": self.staff.title,
                },
            }
        )

    # ----- what the customer does ------------------------------------------------------

    async def _send(self, request: web.Request) -> web.Response:
        text = _text(await _json_body(request))
        sent = self.standin.inject_message(
            self.user_id,
            self.user_id,
            text,
            first_name=self.first_name,
            language_code=self.language_code,
        )
        return web.json_response({"ok": True, "message_id": sent["message_id"]})

    async def _press(self, request: web.Request) -> web.Response:
        message_id, data = await _button(request)
        try:
            query_id = self.standin.press_button(self.user_id, message_id, data, self.user_id)
        except (LookupError, ValueError) as exc:
            raise _bad("that button is no longer there") from exc
        self._queries.append((query_id, "chat"))
        return web.json_response({"ok": True, "query_id": query_id})

    # ----- what the staff member does --------------------------------------------------

    async def _staff_send(self, request: web.Request) -> web.Response:
        desk = self._desk()
        body = await _json_body(request)
        text = _text(body)
        topic = body.get("topic", GENERAL)
        if not isinstance(topic, int) or isinstance(topic, bool):
            raise _bad("topic (number) is required")
        try:
            sent = self.standin.inject_message(
                desk.chat_id,
                desk.user_id,
                text,
                first_name=desk.first_name,
                message_thread_id=topic or None,
            )
        except (LookupError, ValueError) as exc:
            raise _bad(str(exc)) from exc
        return web.json_response({"ok": True, "message_id": sent["message_id"]})

    async def _staff_press(self, request: web.Request) -> web.Response:
        desk = self._desk()
        message_id, data = await _button(request)
        try:
            query_id = self.standin.press_button(desk.chat_id, message_id, data, desk.user_id)
        except (LookupError, ValueError) as exc:
            raise _bad("that button is no longer there") from exc
        self._queries.append((query_id, "staff"))
        return web.json_response({"ok": True, "query_id": query_id})

    def _desk(self) -> StaffDesk:
        if self.staff is None:
            raise web.HTTPNotFound(text="this demo has no staff group")
        return self.staff


def _text(body: JSON) -> str:
    """The message text of a send request, within Telegram's limit."""
    text = str(body.get("text", "")).strip()
    if not text:
        raise _bad("type a message first")
    if len(text) > MAX_TEXT:
        raise _bad(f"a message has at most {MAX_TEXT} characters")
    return text


async def _button(request: web.Request) -> tuple[int, str]:
    """The message id and callback data of a press request."""
    body = await _json_body(request)
    message_id, data = body.get("message_id"), body.get("callback_data")
    if not isinstance(message_id, int) or not isinstance(data, str):
        raise _bad("message_id (number) and callback_data (text) are required")
    return message_id, data


def _message(shown: ShownMessage) -> JSON:
    return {
        "id": shown.message_id,
        "from_bot": shown.from_bot,
        "kind": shown.kind,
        "text": shown.text if shown.text is not None else shown.caption,
        "entities": list(shown.entities),
        "buttons": [
            [
                {"text": b.text, "callback_data": b.callback_data, "url": b.url}
                for b in row
                if b.callback_data is not None or b.url is not None
            ]
            for row in shown.buttons
        ],
        "date": shown.date,
        "edited": shown.edit_count > 0,
    }


def _fingerprint(body: JSON) -> str:
    encoded = json.dumps(body, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(encoded).hexdigest()[:16]


def _bad(description: str) -> web.HTTPBadRequest:
    return web.HTTPBadRequest(
        text=json.dumps({"ok": False, "description": description}),
        content_type="application/json",
    )


async def _json_body(request: web.Request) -> JSON:
    """The request's JSON object; only same-origin JSON POSTs are accepted."""
    origin = request.headers.get("Origin")
    if origin is not None and origin != f"{request.scheme}://{request.host}":
        raise web.HTTPForbidden(text="cross-origin request refused")
    if request.content_type != "application/json":
        raise web.HTTPUnsupportedMediaType(text="send application/json")
    try:
        body = json.loads(await request.text())
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise _bad("a JSON object is expected")
    return body


@web.middleware
async def _security_headers(request: web.Request, handler: Any) -> web.StreamResponse:
    response: web.StreamResponse = await handler(request)
    response.headers.setdefault("Content-Security-Policy", _CSP)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
    response.headers.setdefault("Cache-Control", "no-store")
    return response
