"""The test-side API over HTTP, under /_test/..., for tests running in another process.

Every endpoint mirrors a `Controls` method and answers `{"ok": true, "result": ...}`, or
`{"ok": false, "description": ...}` with 400 for a bad request, 404 for an unknown
chat/message/query and 408 when a wait times out. Parameters may come as query string
or JSON body; numbers may be strings, as with the Bot API itself.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from .controls import Controls
from .errors import ApiError
from .params import Params

JSON = dict[str, Any]
Endpoint = Callable[[Params], Awaitable[Any]]


def add_test_routes(app: web.Application, controls: Controls) -> None:
    """Register the /_test endpoints for `controls` on `app`."""
    endpoints = _Endpoints(controls)
    routes: dict[str, tuple[str, Endpoint]] = {
        "chats": ("POST", endpoints.add_chat),
        "topics": ("POST", endpoints.add_topic),
        "inject_message": ("POST", endpoints.inject_message),
        "inject_edited_message": ("POST", endpoints.inject_edited_message),
        "inject_service_message": ("POST", endpoints.inject_service_message),
        "inject_channel_post": ("POST", endpoints.inject_channel_post),
        "inject_my_chat_member": ("POST", endpoints.inject_my_chat_member),
        "bot_rights": ("POST", endpoints.set_bot_rights),
        "members": ("POST", endpoints.set_member),
        "forum_topics": ("GET", endpoints.topics),
        "inject_update": ("POST", endpoints.inject_update),
        "press_button": ("POST", endpoints.press_button),
        "press_button_by_text": ("POST", endpoints.press_button_by_text),
        "block_chat": ("POST", endpoints.block_chat),
        "unblock_chat": ("POST", endpoints.unblock_chat),
        "fail_next": ("POST", endpoints.fail_next),
        "clear_faults": ("POST", endpoints.clear_faults),
        "reset": ("POST", endpoints.reset),
        "wait_for_call": ("POST", endpoints.wait_for_call),
        "wait_for_bot_messages": ("POST", endpoints.wait_for_bot_messages),
        "chat_messages": ("GET", endpoints.chat_messages),
        "callback_answers": ("GET", endpoints.callback_answers),
        "chat_actions": ("GET", endpoints.chat_actions),
        "calls": ("GET", endpoints.calls),
        "commands": ("GET", endpoints.commands),
        "webhook_deliveries": ("GET", endpoints.webhook_deliveries),
        "updates": ("GET", endpoints.updates),
        "stats": ("GET", endpoints.stats),
    }
    for name, (verb, endpoint) in routes.items():
        app.router.add_route(verb, f"/_test/{name}", _wrap(endpoint, controls))


def _wrap(
    endpoint: Endpoint, controls: Controls
) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handle(request: web.Request) -> web.Response:
        try:
            params = await _params(request)
            result = await endpoint(params)
        except LookupError as exc:
            return _fail(404, exc)
        except TimeoutError as exc:
            return _fail(408, exc)
        except (ValueError, TypeError, ApiError) as exc:
            return _fail(400, exc)
        await controls.changes.notify()
        return web.json_response({"ok": True, "result": result})

    return handle


def _fail(status: int, exc: Exception) -> web.Response:
    description = exc.args[0] if exc.args else type(exc).__name__
    return web.json_response({"ok": False, "description": str(description)}, status=status)


async def _params(request: web.Request) -> Params:
    raw: JSON = dict(request.query)
    if request.body_exists:
        body = json.loads(await request.text())
        if not isinstance(body, dict):
            raise ValueError("JSON object expected")
        raw.update(body)
    return Params(raw)


def _required_int(params: Params, name: str) -> int:
    value = params.integer(name)
    if value is None:
        raise ValueError(f"{name} (integer) is required")
    return value


def _required_text(params: Params, name: str) -> str:
    value = params.text(name)
    if value is None:
        raise ValueError(f"{name} is required")
    return value


def _rights(params: Params) -> dict[str, bool]:
    """Administrator rights given as `rights` (a JSON object of name: true/false)."""
    rights = params.json_value("rights", "rights must be a JSON object")
    if rights is None:
        return {}
    if not isinstance(rights, dict):
        raise ValueError("rights must be a JSON object of name: true/false")
    return rights


class _Endpoints:
    """Adapters from Params to Controls methods; JSON-ready results."""

    def __init__(self, controls: Controls) -> None:
        self.controls = controls

    async def add_chat(self, p: Params) -> JSON:
        return self.controls.add_chat(
            _required_int(p, "chat_id"),
            p.integer("user_id"),
            first_name=p.text("first_name"),
            last_name=p.text("last_name"),
            username=p.text("username"),
            language_code=p.text("language_code") or "en",
            title=p.text("title"),
            is_forum=p.flag("is_forum"),
        )

    async def add_topic(self, p: Params) -> JSON:
        thread_id = self.controls.add_topic(
            _required_int(p, "chat_id"), p.text("name") or "Topic", p.integer("user_id")
        )
        return {"message_thread_id": thread_id}

    async def inject_message(self, p: Params) -> JSON:
        return self.controls.inject_message(
            _required_int(p, "chat_id"),
            p.integer("user_id"),
            p.text("text"),
            sticker=p.flag("sticker"),
            photo=p.flag("photo"),
            voice=p.flag("voice"),
            document=p.flag("document"),
            caption=p.text("caption"),
            language_code=p.text("language_code") or "en",
            first_name=p.text("first_name"),
            last_name=p.text("last_name"),
            username=p.text("username"),
            title=p.text("title"),
            reply_to_message_id=p.integer("reply_to_message_id"),
            message_thread_id=p.integer("message_thread_id"),
        )

    async def inject_edited_message(self, p: Params) -> JSON:
        return self.controls.inject_edited_message(
            _required_int(p, "chat_id"),
            p.integer("user_id"),
            _required_int(p, "message_id"),
            _required_text(p, "text"),
        )

    async def inject_service_message(self, p: Params) -> JSON:
        members = p.json_value("members", "members must be a JSON array of user ids")
        if members is not None and not (
            isinstance(members, list) and all(isinstance(m, int) for m in members)
        ):
            raise ValueError("members must be a JSON array of user ids")
        return self.controls.inject_service_message(
            _required_int(p, "chat_id"),
            _required_text(p, "kind"),
            user_id=p.integer("user_id"),
            members=members or (),
            title=p.text("title"),
            pinned_message_id=p.integer("pinned_message_id"),
        )

    async def inject_channel_post(self, p: Params) -> JSON:
        return self.controls.inject_channel_post(
            _required_int(p, "chat_id"),
            p.text("text"),
            p.flag("photo"),
            caption=p.text("caption"),
            title=p.text("title"),
        )

    async def inject_my_chat_member(self, p: Params) -> JSON:
        return self.controls.inject_my_chat_member(
            _required_int(p, "chat_id"),
            _required_text(p, "status"),
            user_id=p.integer("user_id"),
            title=p.text("title"),
        )

    async def set_bot_rights(self, p: Params) -> JSON:
        return self.controls.set_bot_rights(
            _required_int(p, "chat_id"),
            p.text("status") or "administrator",
            user_id=p.integer("user_id"),
            **_rights(p),
        )

    async def set_member(self, p: Params) -> JSON:
        return self.controls.set_member(
            _required_int(p, "chat_id"),
            _required_int(p, "user_id"),
            p.text("status") or "member",
            first_name=p.text("first_name"),
            **_rights(p),
        )

    async def topics(self, p: Params) -> list[JSON]:
        return self.controls.topics(_required_int(p, "chat_id"))

    async def inject_update(self, p: Params) -> JSON:
        payload = p.json_value("payload", "payload must be a JSON object")
        if not isinstance(payload, dict):
            raise ValueError("payload must be a JSON object")
        return self.controls.inject_update(_required_text(p, "kind"), payload)

    async def press_button(self, p: Params) -> JSON:
        query_id = self.controls.press_button(
            _required_int(p, "chat_id"),
            _required_int(p, "message_id"),
            _required_text(p, "callback_data"),
            p.integer("user_id"),
            forge=p.flag("forge"),
            inaccessible=p.flag("inaccessible"),
        )
        return {"callback_query_id": query_id}

    async def press_button_by_text(self, p: Params) -> JSON:
        query_id = self.controls.press_button_by_text(
            _required_int(p, "chat_id"),
            _required_text(p, "text"),
            message_id=p.integer("message_id"),
            user_id=p.integer("user_id"),
        )
        return {"callback_query_id": query_id}

    async def block_chat(self, p: Params) -> bool:
        notify = p.flag("notify") if p.present("notify") else True
        self.controls.block_chat(_required_int(p, "chat_id"), notify=notify)
        return True

    async def unblock_chat(self, p: Params) -> bool:
        notify = p.flag("notify") if p.present("notify") else True
        self.controls.unblock_chat(_required_int(p, "chat_id"), notify=notify)
        return True

    async def fail_next(self, p: Params) -> bool:
        status: int | None = 500
        if "status" in p.raw:  # null selects a delay-only fault
            status = p.integer("status")
        self.controls.fail_next(
            _required_text(p, "method"),
            p.integer("times") or 1,
            status=status,
            description=p.text("description"),
            delay=p.number("delay") or 0.0,
            retry_after=p.integer("retry_after"),
            chat_id=p.integer("chat_id"),
            body=p.text("body"),
        )
        return True

    async def clear_faults(self, p: Params) -> bool:
        self.controls.clear_faults()
        return True

    async def reset(self, p: Params) -> bool:
        self.controls.reset()
        return True

    async def wait_for_call(self, p: Params) -> JSON:
        record = await self.controls.wait_for_call(
            _required_text(p, "method"),
            chat_id=p.integer("chat_id"),
            count=p.integer("count") or 1,
            timeout=p.number("timeout") or 5.0,
        )
        return record.as_dict()

    async def wait_for_bot_messages(self, p: Params) -> list[JSON]:
        shown = await self.controls.wait_for_bot_messages(
            _required_int(p, "chat_id"),
            count=p.integer("count") or 1,
            timeout=p.number("timeout") or 5.0,
        )
        return [message.as_dict() for message in shown]

    async def chat_messages(self, p: Params) -> list[JSON]:
        shown = self.controls.chat_messages(_required_int(p, "chat_id"))
        return [message.as_dict() for message in shown]

    async def callback_answers(self, p: Params) -> list[JSON]:
        answers = self.controls.callback_answers(_required_text(p, "query_id"))
        return [answer.as_dict() for answer in answers]

    async def chat_actions(self, p: Params) -> list[str]:
        return self.controls.chat_actions(_required_int(p, "chat_id"))

    async def calls(self, p: Params) -> list[JSON]:
        records = self.controls.calls(p.text("method"), p.integer("chat_id"))
        return [record.as_dict() for record in records]

    async def commands(self, p: Params) -> list[JSON]:
        scope = p.json_value("scope", "scope must be a JSON object")
        return self.controls.commands(scope, p.text("language_code") or "")

    async def webhook_deliveries(self, p: Params) -> list[JSON]:
        return [delivery.as_dict() for delivery in self.controls.webhook_deliveries()]

    async def updates(self, p: Params) -> list[JSON]:
        return self.controls.pending_updates()

    async def stats(self, p: Params) -> JSON:
        state = self.controls.state
        return {
            "calls": len(state.calls),
            "served_429": self.controls.served_429,
            "flood_refusals": {str(chat): n for chat, n in state.flood.refused.items()},
            "pending_updates": len(state.updates),
            "active_polls": self.controls.active_polls,
            "chats": sorted(state.chats),
        }
