"""The test side of a stand-in: the other half of every conversation, and faults.

These are the controls a test holds: users write, edit and press buttons, groups get
service messages, channels get posts, forum topics get messages, the bot gets added,
blocked or kicked, and any update shape can be injected (`inject_update`); plus
injected failures (`fail_next`). Observing and waiting come from `Observation`. They
work on the stand-in's state and change signal only, never on HTTP, so `StandIn` (the
server) inherits them and `testapi` (the same controls as /_test endpoints) depends on
them without depending on the server.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .changes import ChangeSignal
from .events import Events
from .members import STATUSES, bot_member, checked_rights, member_json
from .observe import Observation
from .records import Fault, Member, User
from .state import BotState

JSON = dict[str, Any]


class Controls(Observation):
    """What a test can do to (and, inherited, see of) one bot's Telegram."""

    def __init__(self, state: BotState, changes: ChangeSignal) -> None:
        super().__init__(state, changes)
        self.events = Events(state)

    # ----- chats, users and their messages ---------------------------------------------

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
        is_forum: bool = False,
    ) -> JSON:
        """Make a chat known without a message (so the bot can write first).

        `is_forum` makes a forum supergroup (chat ids from -10**12 down), whose topics
        `add_topic` creates and `inject_message(..., message_thread_id=N)` writes into.
        The user of a new group is its creator (getChatMember says "creator"); the bot is
        a plain member until `set_bot_rights` promotes it.
        """
        user = self._user(chat_id, user_id, first_name, last_name, username, language_code)
        chat = self.state.ensure_chat(chat_id, user, title)
        if chat.is_group and not chat.members:
            chat.members[user.id] = Member("creator")  # whoever made the group owns it
        if is_forum:
            if chat.type != "supergroup":
                raise ValueError(f"only supergroups (ids from -10**12 down) are forums: {chat_id}")
            chat.is_forum = True
            # Message 1 created the chat (and is General's id); the bot never saw it.
            chat.next_message_id = max(chat.next_message_id, 2)
        return chat.to_api()

    def add_topic(self, chat_id: int, name: str = "Topic", user_id: int | None = None) -> int:
        """Someone opens a topic in a forum; returns its `message_thread_id`.

        Like Telegram, this sends the bot a `forum_topic_created` service message.
        """
        user = self.state.ensure_user(self._sender_id(chat_id, user_id))
        thread_id = self.events.add_topic(chat_id, user, name)
        self.changes.poke()
        return thread_id

    def inject_message(
        self,
        chat_id: int,
        user_id: int | None = None,
        text: str | None = None,
        *,
        sticker: bool = False,
        photo: bool = False,
        voice: bool = False,
        document: bool = False,
        caption: str | None = None,
        language_code: str | None = "en",
        first_name: str | None = None,
        last_name: str | None = None,
        username: str | None = None,
        title: str | None = None,
        reply_to_message_id: int | None = None,
        message_thread_id: int | None = None,
    ) -> JSON:
        """A user sends a message; returns the Message JSON the bot will receive.

        Private chats use the user's id as chat id (user_id defaults to chat_id); any
        other chat_id makes a group ("supergroup" from -10**12 down). For media, `text`
        becomes the caption. "/commands" get bot_command entities as on Telegram. With
        `message_thread_id` (a forum chat only) the message is in that topic and carries
        `is_topic_message`, as on Telegram; a topic not created with `add_topic` is
        created silently.
        """
        text, caption, media = self._content(text, caption, sticker, photo, voice, document)
        user = self._user(chat_id, user_id, first_name, last_name, username, language_code)
        payload = self.events.message(
            chat_id,
            user,
            text=text,
            media=media,
            caption=caption,
            reply_to=reply_to_message_id,
            title=title,
            thread_id=message_thread_id,
        )
        self.changes.poke()
        return payload

    def inject_edited_message(
        self, chat_id: int, user_id: int | None, message_id: int, text: str
    ) -> JSON:
        """The author edits an earlier message (its caption, for media): Telegram sends an
        `edited_message` update with the whole message, `edit_date` set. Returns it."""
        chat = self.state.chat(chat_id)
        user = None
        if not chat.is_channel:
            user = self.state.ensure_user(self._sender_id(chat_id, user_id))
        payload = self.events.edit(chat_id, user, message_id, text)
        self.changes.poke()
        return payload

    def inject_service_message(
        self,
        chat_id: int,
        kind: str,
        *,
        user_id: int | None = None,
        members: Sequence[int] = (),
        title: str | None = None,
        pinned_message_id: int | None = None,
    ) -> JSON:
        """A group's service message, sent by `user_id`; returns the Message JSON.

        `kind` is "new_chat_members" (`members`, default the sender), "left_chat_member"
        (one member, default the sender), "new_chat_title" (`title`) or "pinned_message"
        (`pinned_message_id`, any chat). When the bot's own id joins or leaves, a
        `my_chat_member` update follows.
        """
        sender = self.state.ensure_user(self._sender_id(chat_id, user_id))
        people = [self._member(member) for member in members]
        payload = self.events.service(
            chat_id,
            sender,
            kind,
            members=people,
            title=title,
            pinned_message_id=pinned_message_id,
        )
        self.changes.poke()
        return payload

    def inject_channel_post(
        self,
        chat_id: int,
        text: str | None = None,
        photo: bool = False,
        *,
        caption: str | None = None,
        title: str | None = None,
    ) -> JSON:
        """A post in a channel (chat ids from -10**12 down): no `from`, `sender_chat` is the
        channel. For a photo, `text` becomes the caption. Returns the Message JSON."""
        text, caption, media = self._content(text, caption, False, photo, False, False)
        payload = self.events.channel_post(
            chat_id, text=text, media=media, caption=caption, title=title
        )
        self.changes.poke()
        return payload

    def _content(
        self,
        text: str | None,
        caption: str | None,
        sticker: bool,
        photo: bool,
        voice: bool,
        document: bool,
    ) -> tuple[str | None, str | None, JSON]:
        media = self._media(sticker=sticker, photo=photo, voice=voice, document=document)
        if text is None and not media:
            raise ValueError("a message needs text, sticker, photo, document or voice")
        if media and text is not None:
            if sticker:
                raise ValueError("stickers carry no text or caption")
            caption, text = caption or text, None
        return text, caption, media

    def _user(
        self,
        chat_id: int,
        user_id: int | None,
        first_name: str | None,
        last_name: str | None,
        username: str | None,
        language_code: str | None,
    ) -> User:
        return self.state.ensure_user(
            self._sender_id(chat_id, user_id),
            first_name=first_name,
            last_name=last_name,
            username=username,
            language_code=language_code,
        )

    def _member(self, user_id: int) -> User:
        if user_id == self.state.bot.id:
            return self.state.bot
        return self.state.ensure_user(user_id)

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

    def _media(self, *, sticker: bool, photo: bool, voice: bool, document: bool) -> JSON:
        kinds = (("sticker", sticker), ("photo", photo), ("voice", voice), ("document", document))
        chosen = [kind for kind, wanted in kinds if wanted]
        if len(chosen) > 1:
            raise ValueError("pick one of sticker, photo, voice, document")
        return self.events.new_media(chosen[0]) if chosen else {}

    # ----- buttons -----------------------------------------------------------------------

    def press_button(
        self,
        chat_id: int,
        message_id: int,
        callback_data: str,
        user_id: int | None = None,
        *,
        forge: bool = False,
        inaccessible: bool = False,
    ) -> str:
        """Tap the inline button carrying `callback_data`; returns the callback query id.

        Refuses (ValueError/LookupError) unless that button is on that message, because
        real users can only tap what is shown. `forge=True` sends any data, even for a
        message that no longer exists. The bot sees an InaccessibleMessage (`date` 0) for
        a message that is gone, older than 48 h on the stand-in's clock, or when
        `inaccessible=True`.
        """
        chat = self.state.chat(chat_id)
        user = self.state.ensure_user(self._sender_id(chat.id, user_id))
        query_id = self.events.press(
            chat_id, message_id, callback_data, user, forge=forge, inaccessible=inaccessible
        )
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

    # ----- the bot's membership, and any other update ----------------------------------

    def block_chat(self, chat_id: int, *, notify: bool = True) -> None:
        """The user blocks the bot (groups: the bot is kicked); sends then answer 403.

        With `notify`, the bot gets the my_chat_member update Telegram would send.
        """
        self._set_blocked(chat_id, True, notify=notify)

    def unblock_chat(self, chat_id: int, *, notify: bool = True) -> None:
        """Undo block_chat."""
        self._set_blocked(chat_id, False, notify=notify)

    def _set_blocked(self, chat_id: int, blocked: bool, *, notify: bool) -> None:
        chat = self.state.chat(chat_id)
        if chat.blocked == blocked:
            return
        by = None
        if notify and chat.last_user_id is not None:
            by = self.state.users[chat.last_user_id]
        self.events.member_status(chat, "kicked" if blocked else "member", by=by)
        self.changes.poke()

    def inject_my_chat_member(
        self,
        chat_id: int,
        status: str,
        *,
        user_id: int | None = None,
        title: str | None = None,
    ) -> JSON:
        """The bot's own membership changes; returns the `my_chat_member` update sent.

        `status` is "member" (added, or unblocked), "administrator" (promoted), "left"
        (removed from a group) or "kicked" (banned from a group, or blocked in a private
        chat); `user_id` is who did it (default: the chat's user). Sends to the chat then
        succeed or answer 403 as on Telegram. A group that does not exist yet is created
        (the bot being added to it).
        """
        by = self.state.ensure_user(self._sender_id(chat_id, user_id))
        new = chat_id not in self.state.chats
        chat = self.state.ensure_chat(chat_id, by, title)
        if new and chat.is_group:
            chat.bot_status = "left"  # it was not in the group before being added
        payload = self.events.member_status(chat, status, by=by)
        assert payload is not None
        self.changes.poke()
        return payload

    def set_bot_rights(
        self,
        chat_id: int,
        status: str = "administrator",
        *,
        user_id: int | None = None,
        **rights: bool,
    ) -> JSON:
        """Set the bot's standing in a group, e.g. `set_bot_rights(forum, can_manage_topics=
        True)` makes it an administrator that may manage topics. Returns its ChatMember.

        Administrators get the default rights (read and moderate messages) with `rights`
        overriding them; other statuses take none. With `user_id` (who changed it), the
        bot gets Telegram's my_chat_member update; without, the change is silent.
        """
        chat = self.state.chat(chat_id)
        if not chat.is_group:
            raise ValueError(f"chat {chat_id} is {chat.type}: rights exist in groups only")
        if rights and status != "administrator":
            raise ValueError("only administrators have rights")
        chat.bot_rights = checked_rights(rights)
        by = None if user_id is None else self.state.ensure_user(user_id)
        if by is not None or chat.bot_status != status:
            self.events.member_status(chat, status, by=by)
        self.changes.poke()
        return member_json(self.state.bot, bot_member(chat), chat.type)

    def set_member(
        self,
        chat_id: int,
        user_id: int,
        status: str = "member",
        *,
        first_name: str | None = None,
        **rights: bool,
    ) -> JSON:
        """Set someone's standing in a group ("creator", "administrator" with `rights`,
        "member", "left", "kicked"), as getChatMember will report it; returns it."""
        chat = self.state.chat(chat_id)
        if not chat.is_group:
            raise ValueError(f"chat {chat_id} is {chat.type}: members exist in groups only")
        if status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, not {status!r}")
        if rights and status != "administrator":
            raise ValueError("only administrators have rights")
        if user_id == self.state.bot.id:
            raise ValueError("the bot's own standing is set with set_bot_rights")
        user = self.state.ensure_user(user_id, first_name=first_name)
        member = Member(status, checked_rights(rights))
        chat.members[user_id] = member
        self.changes.poke()
        return member_json(user, member, chat.type)

    def inject_update(self, kind: str, payload: JSON) -> JSON:
        """Queue any update (`kind` is the Update field, e.g. "message_reaction") with a
        payload written by the test: the escape hatch for shapes without a helper."""
        queued = self.events.update(kind, payload)
        self.changes.poke()
        return queued

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
