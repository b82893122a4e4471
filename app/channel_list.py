"""The channel list as the window's sidebar and `hearth channels` show it: the public channels
and how each name shows, with (for the sidebar) my unread counts and mention marks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .names import channel_names
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
    messages' too), and how each name shows."""
    channels, names = named_channels(ws)
    return ChannelList(channels, ws.replica.unread(ws.key, ws.nickname()), names,
                       ws.private.unread())
