"""Who may do what in a chat: ChatMember objects, administrator rights, ChatFullInfo.

Telegram answers `getChatMember` and `getChat` from one picture of the chat (who is in
it, with which status and rights), and refuses forum-topic calls from that same picture
("not enough rights to create a topic"). This module is that picture's one definition:
the rights a status carries by default, the ChatMember JSON for a status (with the
optional rights Telegram adds per chat type, as tdlib/telegram-bot-api's
`json_store_administrator_rights` does), and the ChatFullInfo of a chat. Pure functions
over the records, so methods, events and controls agree on them.
"""

from __future__ import annotations

from typing import Any

from .records import Chat, Member, User

JSON = dict[str, Any]

STATUSES = ("creator", "administrator", "member", "left", "kicked")
# What an administrator may do unless told otherwise: enough to read and moderate
# messages, nothing that changes the chat itself (ChatMemberAdministrator's required
# flags first, then the optional rights Telegram sends per chat type).
DEFAULT_ADMIN_RIGHTS: dict[str, bool] = {
    "can_manage_chat": True,
    "can_delete_messages": True,
    "can_manage_video_chats": False,
    "can_restrict_members": False,
    "can_promote_members": False,
    "can_change_info": False,
    "can_invite_users": True,
    "can_post_stories": False,
    "can_edit_stories": False,
    "can_delete_stories": False,
    "can_post_messages": False,
    "can_edit_messages": False,
    "can_pin_messages": False,
    "can_manage_topics": False,
    "can_manage_direct_messages": False,
    "can_manage_tags": False,
}
_OPTIONAL_RIGHTS = {
    "channel": ("can_post_messages", "can_edit_messages", "can_manage_direct_messages"),
    "group": ("can_pin_messages", "can_manage_tags"),
    "supergroup": ("can_pin_messages", "can_manage_topics", "can_manage_tags"),
}
_ALL_OPTIONAL = frozenset(name for names in _OPTIONAL_RIGHTS.values() for name in names)
# A group's default member permissions (ChatPermissions), as a new group starts out.
_GROUP_PERMISSIONS: JSON = {
    "can_send_messages": True,
    "can_send_audios": True,
    "can_send_documents": True,
    "can_send_photos": True,
    "can_send_videos": True,
    "can_send_video_notes": True,
    "can_send_voice_notes": True,
    "can_send_polls": True,
    "can_send_other_messages": True,
    "can_add_web_page_previews": True,
    "can_react_to_messages": True,
    "can_change_info": False,
    "can_invite_users": True,
    "can_pin_messages": False,
    "can_manage_topics": False,
}
_GIFTS = ("unlimited_gifts", "limited_gifts", "unique_gifts", "premium_subscription")
MAX_REACTION_COUNT = 11  # Telegram's limit for chats without boosts
ACCENT_COLORS = 7  # a chat's default accent colour is its id modulo the seven base colours


def checked_rights(rights: dict[str, bool]) -> dict[str, bool]:
    """Administrator rights by name; unknown names are a test's typo, refused."""
    unknown = sorted(set(rights) - set(DEFAULT_ADMIN_RIGHTS))
    if unknown:
        raise ValueError(
            f"unknown administrator rights {unknown}; known: {sorted(DEFAULT_ADMIN_RIGHTS)}"
        )
    if not all(isinstance(value, bool) for value in rights.values()):
        raise ValueError("administrator rights are true or false")
    return dict(rights)


def has_right(member: Member, right: str) -> bool:
    """Whether this member may do what `right` names (the creator may do everything)."""
    if member.status == "creator":
        return True
    if member.status != "administrator":
        return False
    return member.rights.get(right, DEFAULT_ADMIN_RIGHTS[right])


def bot_member(chat: Chat) -> Member:
    """The bot's own standing in `chat`."""
    return Member(chat.bot_status, chat.bot_rights)


def member_of(chat: Chat, user_id: int, bot_id: int) -> Member | None:
    """Someone's standing in `chat`, or None for a user the chat has never shown.

    In a private chat both sides are members; in a group, the bot's own status, then
    what the test set or the chat showed.
    """
    if user_id == bot_id:
        return bot_member(chat)
    if chat.type == "private":
        return Member("member") if user_id == chat.id else None
    return chat.members.get(user_id)


def member_json(user: User, member: Member, chat_type: str) -> JSON:
    """Bot API ChatMember object for `user` with `member`'s status and rights."""
    data: JSON = {"status": member.status, "user": user.to_api()}
    if member.status == "creator":
        data["is_anonymous"] = False
    elif member.status == "administrator":
        data["can_be_edited"] = False
        data["is_anonymous"] = False
        shown = _OPTIONAL_RIGHTS.get(chat_type, ())
        for name, default in DEFAULT_ADMIN_RIGHTS.items():
            if name not in _ALL_OPTIONAL or name in shown:
                data[name] = member.rights.get(name, default)
    elif member.status == "kicked":
        data["until_date"] = 0  # forever
    return data


def chat_full_info(chat: Chat) -> JSON:
    """Bot API ChatFullInfo: the Chat fields plus the few full-info fields the spec
    requires (accent colour, reaction limit, accepted gifts) and a group's permissions."""
    data = chat.to_api()
    data["accent_color_id"] = abs(chat.id) % ACCENT_COLORS
    data["max_reaction_count"] = MAX_REACTION_COUNT
    private = chat.type == "private"
    # Users accept gifts by default; groups and channels accept none unless they enable it.
    data["accepted_gift_types"] = {
        **dict.fromkeys(_GIFTS, private),
        "gifts_from_channels": private,
    }
    if chat.is_group:
        data["permissions"] = dict(_GROUP_PERMISSIONS)
    return data
