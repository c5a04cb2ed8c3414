"""The Bot API methods the stand-in implements, with Telegram's validation and errors.

Each method validates in roughly Telegram's order (parameters, markup, chat, message,
flood control) so the first error a bot sees is the one Telegram would report, and only
then changes state. Methods Telegram has but the stand-in lacks answer 404 like unknown
methods do, which shows up in the call log rather than passing silently.

One idea at about 500 lines: the method table and the message methods (send, copy,
edit, delete, answer). The lookups every method starts with (chat, topic) are in
lookups.py, shared with the chat-information and forum-topic methods (forum.py), whose
handlers join this table; the records, parsing, markup and flood rules live elsewhere.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any

from .changes import ChangeSignal
from .commands import command_list, language, scope_key
from .entities import checked_entities
from .errors import (
    NOT_MODIFIED,
    POLL_CONFLICT,
    QUERY_TOO_OLD,
    WEBHOOK_CONFLICT,
    ApiError,
    bad_request,
    can_t_parse_entities,
)
from .formatting import (
    MAX_TEXT_LENGTH,
    FormattedText,
    ParseError,
    UnsupportedParseMode,
    parse,
    utf16_len,
)
from .forum import ForumApi
from .lookups import chat_of, require_chat_id, thread_of, writable_chat
from .markup import inline_keyboard, parse_reply_markup
from .members import bot_member, has_right
from .params import Params
from .records import CallbackAnswer, Chat, ShownAction, StoredMessage
from .state import BotState
from .webhook import check_secret_token, check_webhook_url

JSON = dict[str, Any]
Handler = Callable[[Params], Awaitable[Any]]

CHAT_ACTIONS = frozenset(
    {
        "typing",
        "upload_photo",
        "record_video",
        "upload_video",
        "record_voice",
        "upload_voice",
        "upload_document",
        "choose_sticker",
        "find_location",
        "record_video_note",
        "upload_video_note",
    }
)
MAX_CALLBACK_ANSWER_LENGTH = 200
MAX_CAPTION_LENGTH = 1024
# Telegram accepts MarkdownV2 and Markdown; the stand-in refuses them rather than guess.
HTML_ONLY = "this stand-in supports parse_mode HTML only"


class BotApi:
    """Bot API method implementations over one BotState."""

    def __init__(self, state: BotState, changes: ChangeSignal, closing: Callable[[], bool]) -> None:
        self.state = state
        self.changes = changes
        self.closing = closing
        handlers: dict[str, Handler] = {
            "getMe": self.get_me,
            "getUpdates": self.get_updates,
            "setWebhook": self.set_webhook,
            "deleteWebhook": self.delete_webhook,
            "getWebhookInfo": self.get_webhook_info,
            "setMyCommands": self.set_my_commands,
            "getMyCommands": self.get_my_commands,
            "deleteMyCommands": self.delete_my_commands,
            "sendMessage": self.send_message,
            "editMessageText": self.edit_message_text,
            "editMessageCaption": self.edit_message_caption,
            "editMessageReplyMarkup": self.edit_message_reply_markup,
            "answerCallbackQuery": self.answer_callback_query,
            "sendChatAction": self.send_chat_action,
            "deleteMessage": self.delete_message,
            "getFile": self.get_file,
            "close": self.close,
            "logOut": self.log_out,
            "copyMessage": self.copy_message,
            **ForumApi(state).handlers(),
        }
        # Telegram matches method names case-insensitively.
        self._methods = {name.lower(): (name, handler) for name, handler in handlers.items()}

    def lookup(self, method: str) -> tuple[str, Handler] | None:
        """Canonical name and handler for a method, or None (Telegram answers 404)."""
        return self._methods.get(method.lower())

    # ----- bot identity and lifecycle --------------------------------------------------

    async def get_me(self, params: Params) -> JSON:
        """The bot's User object with the bot-only capability flags."""
        return {
            **self.state.bot.to_api(),
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
            "can_connect_to_business": False,
            "has_main_web_app": False,
        }

    async def close(self, params: Params) -> bool:
        """Accepted and ignored: there is no cloud instance to close."""
        return True

    async def log_out(self, params: Params) -> bool:
        """Accepted and ignored: there is no cloud session to end."""
        return True

    # ----- updates ---------------------------------------------------------------------

    async def get_updates(self, params: Params) -> list[JSON]:
        """Long polling: answer at once if updates are pending, else wait up to `timeout`.

        A newer getUpdates ends an older one with 409, as Telegram does when two bot
        instances poll the same token.
        """
        state = self.state
        if state.webhook_url:
            raise ApiError(409, WEBHOOK_CONFLICT)
        limit = min(max(params.integer("limit") or 100, 1), 100)
        timeout = max(params.number("timeout") or 0.0, 0.0)
        allowed = params.json_value("allowed_updates", "can't parse allowed_updates JSON array")
        state.confirm(params.integer("offset"))
        state.set_allowed_updates(allowed if isinstance(allowed, list) else None)
        state.poll_generation += 1
        generation = state.poll_generation
        if timeout > 0 and not state.has_deliverable():
            await self._long_poll(generation, timeout)
        else:
            await self.changes.notify()
        if generation != state.poll_generation:
            raise ApiError(409, POLL_CONFLICT)
        return [update.to_api() for update in state.deliverable(limit)]

    async def _long_poll(self, generation: int, within: float) -> None:
        state = self.state
        state.active_polls += 1
        await self.changes.notify()
        try:
            await self.changes.wait_until(
                lambda: (
                    self.closing() or generation != state.poll_generation or state.has_deliverable()
                ),
                within,
            )
        finally:
            state.active_polls -= 1

    async def set_webhook(self, params: Params) -> bool:
        """Set (or, with an empty url, remove) the webhook; updates are then POSTed to it.

        Checked as Telegram checks it: an HTTPS URL on port 443, 80, 88 or 8443, a secret
        token of at most 256 of `A-Z a-z 0-9 _ -`, and `max_connections` 1-100 (Telegram
        clamps it silently; the stand-in refuses what the spec rules out). One relaxation:
        plain http to a loopback address, so tests can receive updates without TLS.
        """
        url = params.text("url") or ""
        secret = params.text("secret_token") or ""
        if url:
            check_webhook_url(url)
        check_secret_token(secret)
        max_connections = params.integer("max_connections")
        if max_connections is not None and not 1 <= max_connections <= 100:
            raise bad_request("bad webhook: max_connections must be between 1 and 100")
        self._drop_pending(params)
        allowed = params.json_value("allowed_updates", "can't parse allowed_updates JSON array")
        state = self.state
        state.set_allowed_updates(allowed if isinstance(allowed, list) else None)
        state.webhook_url, state.webhook_secret = url, secret if url else ""
        state.webhook_max_connections = max_connections or 40
        state.webhook_error = None
        return True

    async def delete_webhook(self, params: Params) -> bool:
        """Back to getUpdates (delivery stops); optionally drop everything queued so far."""
        self._drop_pending(params)
        self.state.webhook_url, self.state.webhook_secret = "", ""
        return True

    def _drop_pending(self, params: Params) -> None:
        if params.flag("drop_pending_updates"):
            self.state.updates.clear()

    async def get_webhook_info(self, params: Params) -> JSON:
        """WebhookInfo: the URL, how many updates wait, and the last delivery failure."""
        state = self.state
        info: JSON = {
            "url": state.webhook_url,
            "has_custom_certificate": False,
            "pending_update_count": len(state.updates),
        }
        if state.webhook_url:
            info["max_connections"] = state.webhook_max_connections
            if state.webhook_error is not None:
                info["last_error_date"], info["last_error_message"] = state.webhook_error
        if state.allowed_updates is not None:
            info["allowed_updates"] = sorted(state.allowed_updates)
        return info

    # ----- commands --------------------------------------------------------------------

    async def set_my_commands(self, params: Params) -> bool:
        """Store the command list per (scope, language_code), validating like Telegram."""
        commands = params.json_value("commands", "can't parse commands JSON object")
        key = self._commands_key(params)
        self.state.commands[key] = command_list(commands)
        return True

    async def get_my_commands(self, params: Params) -> list[JSON]:
        """The list stored for exactly this scope and language ([] if none)."""
        return list(self.state.commands.get(self._commands_key(params), []))

    async def delete_my_commands(self, params: Params) -> bool:
        """Forget the list for this scope and language."""
        self.state.commands.pop(self._commands_key(params), None)
        return True

    def _commands_key(self, params: Params) -> tuple[str, str]:
        scope = params.json_value("scope", "can't parse BotCommandScope JSON object")
        key = scope_key(scope, self.state.find_chat)
        return key, language(params.text("language_code"))

    # ----- messages --------------------------------------------------------------------

    async def send_message(self, params: Params) -> JSON:
        """Send a text message, optionally with markup and as a reply."""
        require_chat_id(params)
        formatted = _formatted(params)
        markup = parse_reply_markup(params)
        chat = writable_chat(self.state, params)
        thread_id = thread_of(params, chat)
        _check_length(formatted)
        reply_to = self._reply_target(params, chat)
        self.state.flood.admit(chat.id, chat.is_group)
        message = self.state.add_message(
            chat,
            self.state.bot,
            text=formatted.text,
            entities=formatted.entities,
            reply_markup=markup,
            reply_to=reply_to,
            parse_mode=params.text("parse_mode"),
            thread_id=thread_id,
        )
        _update_reply_keyboard(chat, markup)
        return self.state.message_json(message)

    async def copy_message(self, params: Params) -> JSON:
        """Copy a message as a new bot message that keeps no link to the original.

        Text keeps its entities; media keeps its file ids and its caption unless a new
        `caption` (empty removes it) replaces it. Service messages can't be copied. As in
        tdlib/telegram-bot-api, the new caption is parsed first, then the source message
        is looked up, then the target chat and topic are checked. Answers a MessageId.
        """
        caption = _new_caption(params)
        markup = parse_reply_markup(params)
        source_chat = chat_of(self.state, params, "from_chat_id")
        source_id = params.integer("message_id") or 0
        source = self.state.find_message(source_chat.id, source_id) if source_id > 0 else None
        if source is None:
            raise bad_request("message to copy not found")
        if source.service:
            raise bad_request("message can't be copied")
        require_chat_id(params)
        chat = writable_chat(self.state, params)
        thread_id = thread_of(params, chat)
        reply_to = self._reply_target(params, chat)
        self.state.flood.admit(chat.id, chat.is_group)
        content: JSON = {"text": source.text, "entities": source.entities}
        if source.media:
            content = {"media": copy.deepcopy(source.media)}
            kept = FormattedText(source.caption or "", source.entities)
            shown = kept if caption is None or "sticker" in source.media else caption
            if shown.text:
                content.update(caption=shown.text, entities=shown.entities)
        message = self.state.add_message(
            chat,
            self.state.bot,
            **content,
            reply_markup=markup,
            reply_to=reply_to,
            thread_id=thread_id,
        )
        _update_reply_keyboard(chat, markup)
        return {"message_id": message.message_id}

    async def edit_message_text(self, params: Params) -> JSON:
        """Replace a bot message's text; omitting reply_markup removes its keyboard."""
        message_id = _message_ref(params)
        formatted = _formatted(params)
        markup = inline_keyboard(parse_reply_markup(params))
        chat = writable_chat(self.state, params)
        _check_length(formatted)
        message = self._editable(chat, message_id)
        if message.text is None:
            raise bad_request("there is no text in the message to edit")
        current = (message.text, message.entities, inline_keyboard(message.reply_markup))
        if current == (formatted.text, formatted.entities, markup):
            raise bad_request(NOT_MODIFIED)
        self.state.flood.admit(chat.id, chat.is_group)
        message.record_edit(self.state.date())
        message.text, message.entities = formatted.text, formatted.entities
        message.reply_markup = markup
        message.parse_mode = params.text("parse_mode")
        return self.state.message_json(message)

    async def edit_message_caption(self, params: Params) -> JSON:
        """Replace (or, when empty or omitted, remove) a bot media message's caption;
        omitting reply_markup removes its keyboard, as with editMessageText."""
        message_id = _message_ref(params)
        caption = _new_caption(params) or FormattedText("")
        markup = inline_keyboard(parse_reply_markup(params))
        chat = writable_chat(self.state, params)
        message = self._editable(chat, message_id)
        if not message.media:
            raise bad_request("there is no caption in the message to edit")
        current = (message.caption or "", message.entities, inline_keyboard(message.reply_markup))
        if current == (caption.text, caption.entities, markup):
            raise bad_request(NOT_MODIFIED)
        self.state.flood.admit(chat.id, chat.is_group)
        message.record_edit(self.state.date())
        message.caption, message.entities = caption.text or None, caption.entities
        message.reply_markup = markup
        message.parse_mode = params.text("parse_mode")
        return self.state.message_json(message)

    async def edit_message_reply_markup(self, params: Params) -> JSON:
        """Replace (or, when omitted, remove) a bot message's inline keyboard."""
        message_id = _message_ref(params)
        markup = inline_keyboard(parse_reply_markup(params))
        chat = writable_chat(self.state, params)
        message = self._editable(chat, message_id)
        if inline_keyboard(message.reply_markup) == markup:
            raise bad_request(NOT_MODIFIED)
        self.state.flood.admit(chat.id, chat.is_group)
        message.record_edit(self.state.date())
        message.reply_markup = markup
        return self.state.message_json(message)

    async def delete_message(self, params: Params) -> bool:
        """Delete a message; in groups the bot may delete others' messages only as an
        administrator with `can_delete_messages`, its own always."""
        require_chat_id(params)
        message_id = params.integer("message_id")
        if not message_id:
            raise bad_request("message identifier is not specified")
        chat = chat_of(self.state, params)
        message = self.state.find_message(chat.id, message_id)
        if message is None:
            raise bad_request("message to delete not found")
        may_delete = has_right(bot_member(chat), "can_delete_messages")
        if chat.is_group and not message.from_bot and not may_delete:
            raise bad_request("message can't be deleted")
        message.deleted = True
        return True

    async def send_chat_action(self, params: Params) -> bool:
        """Record the action ("typing", ...) the user would see for a few seconds."""
        require_chat_id(params)
        action = params.text("action") or ""
        chat = writable_chat(self.state, params)
        thread_of(params, chat)
        if action not in CHAT_ACTIONS:
            raise bad_request("wrong parameter action in request")
        chat.actions.append(action)
        chat.last_action = ShownAction(action, self.state.clock(), chat.next_message_id)
        return True

    async def answer_callback_query(self, params: Params) -> bool:
        """Answer a button press; each query accepts exactly one answer."""
        query_id = params.text("callback_query_id") or ""
        query = self.state.callback_queries.get(query_id)
        if query is None or query.answer is not None or self._expired(query.created):
            raise bad_request(QUERY_TOO_OLD)
        text = params.text("text")
        if text is not None and utf16_len(text) > MAX_CALLBACK_ANSWER_LENGTH:
            raise bad_request("MESSAGE_TOO_LONG")
        query.answer = CallbackAnswer(
            query_id=query_id,
            text=text,
            show_alert=params.flag("show_alert"),
            url=params.text("url"),
            cache_time=params.integer("cache_time") or 0,
            time=self.state.clock(),
        )
        return True

    def _expired(self, created: float) -> bool:
        ttl = self.state.callback_query_ttl
        return ttl is not None and self.state.clock() - created > ttl

    async def get_file(self, params: Params) -> JSON:
        """File metadata for media the test injected; download via base_file_url."""
        record = self.state.files.get(params.text("file_id") or "")
        if record is None:
            raise bad_request("invalid file_id")
        return dict(record)

    # ----- shared lookups --------------------------------------------------------------

    def _editable(self, chat: Chat, message_id: int) -> StoredMessage:
        message = self.state.find_message(chat.id, message_id)
        if message is None:
            raise bad_request("message to edit not found")
        if not message.from_bot:
            raise bad_request("message can't be edited")
        return message

    def _reply_target(self, params: Params, chat: Chat) -> int | None:
        """reply_parameters (what PTB v22 sends) or the older reply_to_message_id."""
        reply = params.json_value("reply_parameters", "can't parse reply parameters JSON object")
        reply_params = Params(reply) if isinstance(reply, dict) else params
        message_id = reply_params.integer(
            "message_id" if isinstance(reply, dict) else "reply_to_message_id"
        )
        if not message_id:
            return None
        if self.state.find_message(chat.id, message_id) is not None:
            return message_id
        if reply_params.flag("allow_sending_without_reply"):
            return None
        raise bad_request("message to be replied not found")


def _message_ref(params: Params) -> int:
    """chat_id + message_id of a message to edit (inline messages are not modelled)."""
    if params.present("inline_message_id"):
        raise bad_request("MESSAGE_ID_INVALID")
    require_chat_id(params)
    message_id = params.integer("message_id")
    if not message_id:
        raise bad_request("message identifier is not specified")
    return message_id


def _formatted(params: Params) -> FormattedText:
    """`text` parsed under `parse_mode`, or with explicit `entities` when there is none."""
    text = params.text("text")
    if not text:
        raise bad_request("message text is empty")
    parse_mode = params.text("parse_mode")
    try:
        formatted = parse(text, parse_mode)
    except ParseError as exc:
        raise can_t_parse_entities(str(exc)) from None
    except UnsupportedParseMode as exc:
        detail = HTML_ONLY if exc.known else "unsupported parse_mode"
        raise bad_request(detail) from None
    if not parse_mode and params.present("entities"):
        entities = params.json_value("entities", "can't parse entities JSON object")
        if isinstance(entities, list):
            formatted = FormattedText(formatted.text, checked_entities(formatted.text, entities))
    return formatted


def _new_caption(params: Params) -> FormattedText | None:
    """copyMessage's replacement `caption` (None when absent: keep the original), parsed
    under `parse_mode` or with `caption_entities`, at most 1024 UTF-16 units."""
    if "caption" not in params.raw or params.raw["caption"] is None:
        return None
    text = params.text("caption") or ""
    parse_mode = params.text("parse_mode")
    try:
        formatted = parse(text, parse_mode)
    except ParseError as exc:
        raise can_t_parse_entities(str(exc)) from None
    except UnsupportedParseMode as exc:
        raise bad_request(HTML_ONLY if exc.known else "unsupported parse_mode") from None
    if not parse_mode and params.present("caption_entities"):
        entities = params.json_value("caption_entities", "can't parse entities JSON object")
        if isinstance(entities, list):
            formatted = FormattedText(formatted.text, checked_entities(formatted.text, entities))
    if formatted.length > MAX_CAPTION_LENGTH:
        raise bad_request("message caption is too long")
    return formatted


def _check_length(formatted: FormattedText) -> None:
    """Telegram's limits apply to the text after markup parsing, in UTF-16 units."""
    if not formatted.text.strip():
        raise bad_request("message must be non-empty")
    if formatted.length > MAX_TEXT_LENGTH:
        raise bad_request("message is too long")


def _update_reply_keyboard(chat: Chat, markup: JSON | None) -> None:
    """Custom keyboards belong to the chat, not the message: remember the current one."""
    if markup is None:
        return
    if "keyboard" in markup:
        chat.reply_keyboard = markup
    elif markup.get("remove_keyboard"):
        chat.reply_keyboard = None
