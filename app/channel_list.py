"""The channel list as the window's sidebar and `hearth channels` show it: the public channels
and how each name shows, with my unread counts and mention marks. The counts are the ones the
sidebar, the window's title, the tray icon and `hearth channels` all show: a muted
conversation counts nothing but still marks a mention (app.notify_rules.badge)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import notify_settings
from .names import channel_names
from .notify_rules import badge, conversation_key, level
from .records import ChannelInfo, ChannelList, ChannelName

if TYPE_CHECKING:
    from .workspace import Workspace


def named_channels(ws: Workspace) -> tuple[list[ChannelInfo], dict[str, ChannelName]]:
    """The public channels, and how each name shows (a stream suffix, and a warning when
    another name looks like it)."""
    channels = ws.channels()
    return channels, channel_names(ws.id, [c.name for c in channels])


def channel_list(ws: Workspace) -> ChannelList:
    """The channels, with my unread counts and mention marks (the private channels' and direct
    messages' too) as notification levels make them, and how each name shows."""
    channels, names = named_channels(ws)
    settings = notify_settings.load(ws.paths.data, ws.id)
    now = ws.clock()
    levels: dict[str | bytes, str] = {}
    for name in (c.name for c in channels):
        levels[name] = level(settings, conversation_key(name), "channel", now)
    for private in ws.private.channels():
        levels[private.id] = level(settings, conversation_key(private.id),
                                   "dm" if private.dm else "private", now)
    unread = {name: badge(levels.get(name, "mentions"), *counts)
              for name, counts in ws.replica.unread(ws.key, ws.nickname()).items()}
    private_unread = {key: badge(levels.get(key, "mentions"), *counts)
                      for key, counts in ws.private.unread().items()}
    return ChannelList(channels, unread, names, private_unread,
                       muted=frozenset(k for k, shown in levels.items() if shown == "none"))
