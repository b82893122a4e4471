"""The workspaces of a data folder, and changing which one the running Node holds: listing them
by the name their creator gave them, joining one by invite code, leaving one (removing this
computer's replica of it), and switching.

Everything here may block (disk, sockets, a Node's start and stop): the window runs it on a
worker thread, never on the GUI thread (docs/ARCHITECTURE.md "Desktop application and
threading"). `hearth leave-workspace` calls `leave_workspace`.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from storage import Replica, StorageError

from .errors import NodeError
from .invite import Invite
from .names import lookalike_keys
from .paths import DEFAULT_WORKSPACE, WELCOME_PENDING, PathError, Paths, workspaces
from .records import WorkspaceEntry
from .workspace import Workspace, WorkspaceError, default_nick, genesis_name

if TYPE_CHECKING:
    from .node import Node

NodeFactory = Callable[[Paths], "Node"]
PEERS_TIMEOUT_S = 60.0  # how long joining waits for the running Node's peers
JOINED_PREFIX = "ws-"  # a joined workspace's folder: ws- and the first 8 hex digits of its id


# Names ------------------------------------------------------------------------------------------

def display_name(paths: Paths) -> str | None:
    """genesis_name of the workspace at `paths` (None if it cannot be read)."""
    try:
        with Replica(paths.replica) as replica:
            return genesis_name(replica)
    except (StorageError, sqlite3.Error, OSError):
        return None


def workspace_entries(data: Path, *, current: str | None = None,
                      replica: Replica | None = None) -> list[WorkspaceEntry]:
    """The data folder's workspaces for a list: each with its creator's name, and the folder
    next to it where two names look alike ("default" made here and "default" joined).
    `replica` is the open replica of `current`, read instead of opening it again."""
    named = []
    for folder in workspaces(data):
        if folder == current and replica is not None:
            name = genesis_name(replica)
        else:
            name = display_name(Paths(Path(data), folder))
        named.append((folder, name))
    seen: dict[str, int] = {}
    for _, name in named:
        for key in lookalike_keys(name) if name else ():
            seen[key] = seen.get(key, 0) + 1
    entries = []
    for folder, name in named:
        clash = name is not None and any(seen[key] > 1 for key in lookalike_keys(name))
        label = f"{name} ({folder})" if clash and name != folder else (name or folder)
        entries.append(WorkspaceEntry(folder, name, folder == current, label))
    return entries


def folder_entries(ws: Workspace) -> list[WorkspaceEntry]:
    """The workspaces of `ws`'s data folder (workspace_entries), `ws` read as it is open."""
    return workspace_entries(ws.paths.data, current=ws.paths.workspace, replica=ws.replica)


def joined_folder(workspace_id: bytes) -> str:
    """The folder a workspace joined by invite gets in the data folder."""
    return f"{JOINED_PREFIX}{workspace_id.hex()[:8]}"


# Joining and leaving ----------------------------------------------------------------------------

def join_by_invite(data: Path, code: str, nick: str | None = None, *,
                   peers: Iterable[tuple[str, int]] = (), mdns: bool = True) -> str:
    """This computer's replica of the workspace an invite code names, in its own folder (made
    unless it is there already); returns the folder. An invite's code is proven to a member's
    node among `peers`, then among those mDNS finds. Raises InviteError (a ValueError) for a
    code that cannot be used, WorkspaceError for what else goes wrong."""
    folder = joined_folder(Invite.decode(code).workspace)
    target = Paths(Path(data), folder)
    if not target.replica.exists():
        from . import sharing

        sharing.join_workspace(target, code, nick=nick or None, peers=peers, mdns=mdns)
    return folder


def leave_workspace(data: Path, name: str) -> None:
    """Remove this computer's replica of workspace `name` (its messages, documents, secret
    and peers; the other members keep theirs). Refuses the one a running Node holds."""
    from .data_lock import DataLock
    from .errors import NodeLocked

    try:
        paths = Paths.resolve(data, name)
    except PathError as exc:
        raise WorkspaceError(str(exc)) from None
    if not paths.workspace_dir.is_dir():
        raise WorkspaceError(f"no workspace {name!r} in {paths.data}")
    lock = DataLock(paths.data / "node.lock", f"(leaving {name})")
    try:
        lock.acquire()  # no Node can start on it while it goes
    except NodeLocked as exc:
        if exc.workspace in (name, ""):  # "": an older Hearth, which does not say
            raise WorkspaceError(
                f"workspace {name!r} is open in a running Hearth (pid {exc.pid}); switch that "
                "to another workspace or close it first") from None
        shutil.rmtree(paths.workspace_dir)  # the running Node holds another one
        return
    try:
        shutil.rmtree(paths.workspace_dir)
    finally:
        lock.release()


def opening(paths: Paths, *, default: bool) -> tuple[Paths, bool]:
    """The workspace a window opens at a start (`default`: none was named), and whether it
    is a first run. The first start makes an identity and the default workspace, and marks the
    welcome as pending (WELCOME_PENDING): until the window clears it, every start is a first
    run again, so a start that failed before the welcome was answered uses nothing up."""
    first_run = default and not workspaces(paths.data)
    if first_run:
        Workspace.init(paths, default_nick()).close()
        (paths.data / WELCOME_PENDING).touch()
    elif default and not paths.replica.exists():
        paths = Paths(paths.data, workspaces(paths.data)[0])  # the default one was left
    return paths, first_run or (paths.data / WELCOME_PENDING).exists()


# Changing the running Node ----------------------------------------------------------------------

@dataclass(frozen=True)
class Opened:
    """The Node running after a switch, join or leave, and what the person should be told."""

    node: Node
    paths: Paths
    first_run: bool = False  # nothing was left: a new workspace was made, as on a first run
    problem: str | None = None  # why what was asked for was not done (None: it was)


def switch(node: Node | None, make_node: NodeFactory, target: Paths) -> Opened:
    """Stop `node` and start one on `target`; if that fails, `node`'s workspace again."""
    if node is not None:
        node.stop()
    try:
        return Opened(make_node(target).start(), target)
    except NodeError as exc:
        if node is None:
            raise
        problem = f"Cannot open {target.workspace}: {exc}"
    return Opened(make_node(node.paths).start(), node.paths, problem=problem)


def join(node: Node, make_node: NodeFactory, code: str, nick: str | None,
         peers: Iterable[tuple[str, int]] = ()) -> Opened:
    """Join the workspace an invite code names (a new replica here, unless it is here
    already) and switch to it; a code that cannot be used leaves `node` running. An invite's
    code is proven to a member's node: of `peers` (addresses the person gave), of the peers
    `node` knows, or found by mDNS."""
    try:
        Invite.decode(code)
    except ValueError as exc:
        return Opened(node, node.paths, problem=f"That invite code cannot be used: {exc}")
    # A member's node to be admitted by: one this computer already syncs with, or any on
    # this network (mDNS; unless the running Node was told not to browse).
    known = [*peers, *((p["host"], p["port"]) for p in node.peers().result(PEERS_TIMEOUT_S))]
    try:
        folder = join_by_invite(node.paths.data, code, nick, peers=known, mdns=node.mdns)
    except (WorkspaceError, ValueError) as exc:
        return Opened(node, node.paths, problem=str(exc))
    return switch(node, make_node, Paths(node.paths.data, folder))


def leave(node: Node, make_node: NodeFactory, name: str) -> Opened:
    """Leave workspace `name`. Leaving the one `node` holds stops it and opens another (or,
    when none is left, a new default workspace, as on a first run)."""
    data = node.paths.data
    if name != node.paths.workspace:
        try:
            leave_workspace(data, name)
        except WorkspaceError as exc:
            return Opened(node, node.paths, problem=str(exc))
        return Opened(node, node.paths)
    others = [folder for folder in workspaces(data) if folder != name]
    node.stop()
    try:
        leave_workspace(data, name)
    except WorkspaceError as exc:
        return Opened(make_node(node.paths).start(), node.paths, problem=str(exc))
    first_run = not others
    if first_run:
        target = Paths(data, DEFAULT_WORKSPACE)
        Workspace.init(target, default_nick()).close()
    else:
        target = Paths(data, others[0])
    return Opened(make_node(target).start(), target, first_run=first_run)
