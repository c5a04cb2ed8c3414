"""A "/word" from a customer that is no command of the bot's (issue 20 #5).

Telegram marks any "/word" at the start of a message as a bot command, so "/cancel order
P0002" arrived as a command nobody handled: no answer, and during a handoff nothing
reached staff. Known commands (/start, /help, /human, the staff ones) have their handlers;
everything else that starts with a slash comes here as text:

* during a handoff it is relayed like any message (staff read what was written);
* with words after it, it is a request: "/cancel order P0002" is asked as "cancel order
  P0002" (what a customer means by it; the agent's usual checks and Confirm apply);
* alone ("/settings", "/refund") there is nothing to act on, so the customer is told
  which commands exist and that plain words work — in a group only when it was addressed
  to this bot ("/settings@our_bot"): a bare "/settings" there is likely another bot's;
* addressed to another bot ("/start@other_bot") it is not ours at all: ignored.

Pure: the handlers give the text, the length of its leading command entity and the bot's
username.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Slash:
    """A leading "/word" (`command`, as written, without "@bot") and what follows it."""

    command: str
    rest: str
    addressed: bool  # "/word@this_bot": meant for this bot even in a group
    other_bot: bool  # "/word@another_bot": not for this bot

    @property
    def request(self) -> str:
        """What the customer asks, slash dropped: "/cancel order P0002" → "cancel order
        P0002" (empty for a "/word" alone)."""
        return f"{self.command[1:]} {self.rest}" if self.rest else ""


def read_slash(text: str, command_units: int, bot_username: str | None) -> Slash:
    """`text` starts with a bot_command entity `command_units` UTF-16 units long."""
    encoded = text.encode("utf-16-le", "surrogatepass")
    word = encoded[: command_units * 2].decode("utf-16-le", "surrogatepass")
    rest = encoded[command_units * 2 :].decode("utf-16-le", "surrogatepass").strip()
    command, _, mention = word.partition("@")
    ours = bool(mention) and bot_username is not None and mention.lower() == bot_username.lower()
    return Slash(command, rest, addressed=ours, other_bot=bool(mention) and not ours)
