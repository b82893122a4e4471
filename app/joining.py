"""Inviting people and joining a workspace (app.membership holds the rules, sync.service the
join session).

`hearth invite` makes an invite: a code for the person and its signed half for the members'
nodes. `hearth join-workspace CODE --peer HOST:PORT` creates this computer's replica and opens
a join session with a member's node, which checks the invite and admits: it signs my admission
and seals the workspace secret to my key; the session then syncs like any other, and the
secret that arrived sealed is kept (0600). If no member admits me, the new replica is removed:
nothing half-joined stays behind. A personal code (`hearth invite --for KEY`) holds the secret
sealed to my key already, so joining with it needs no one online.

When no member's node on this network admits me and the code names relays, I knock at them
(core.relay_knock): a member's node connected to one admits me as a join session would and
answers with the newest epoch's secret sealed to my key; I then sync through that relay until
my admission's seals arrive.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import aiohttp

from core.identity import Identity, IdentityError
from core.relay_knock import KnockError, open_answer, seal_knock
from core.relay_seal import space_id
from sync.relay_client import RelayAddress, knock

from . import relays
from .errors import WorkspaceError
from .invite import Invite
from .membership import invite_tag, join_key
from .paths import Paths
from .workspace import Workspace, load_or_create_identity

JOIN_TIMEOUT_S = 60.0
KNOCK_TIMEOUT_S = 40.0  # a relay holds a knock KNOCK_WAIT_S (30 s) for a member's answer
NOT_ADMITTED = "not admitted"  # sync.service.NOT_ADMITTED, without importing sync


def invite(paths: Paths, *, uses: int = 0, expires_ms: int = 0) -> tuple[str, bytes]:
    """A new invite of the workspace: its code and its signed half's id."""
    with Workspace.open(paths) as ws:
        return ws.members.invite(uses=uses, expires_ms=expires_ms)


def invite_for(paths: Paths, key: bytes) -> str:
    """A personal code for the person whose identity key is `key`."""
    with Workspace.open(paths) as ws:
        return ws.members.invite_for(key)


def join_workspace(paths: Paths, code: str, *, nick: str | None = None,
                   peers: Iterable[tuple[str, int]] = (), mdns: bool = True,
                   interfaces: list[str] | None = None,
                   timeout: float = JOIN_TIMEOUT_S) -> bytes:
    """Create this computer's replica of the workspace an invite code names; returns its id.
    An invite's code is proven to a member's node: the first of `peers`, then of the nodes
    mDNS finds on this network (on `interfaces`), that admits me; a personal code needs
    none. Raises WorkspaceError (InviteError for a bad code)."""
    invitation = Invite.decode(code)
    if invitation.sealed is not None:
        secret = _open_personal(paths, invitation.sealed)
        Workspace.create(paths, nick, secret=secret, workspace=invitation.workspace,
                         root=invitation.root).close()
        relays.remember_from_code(paths.workspace_dir, _addresses(invitation))
        return invitation.workspace
    seed = invitation.seed
    assert seed is not None  # an invite holds a seed when it holds no sealed secret
    existed = paths.workspace_dir.exists()
    ws = Workspace.create(paths, nick, secret=None, workspace=invitation.workspace,
                          root=invitation.root)
    try:
        reasons: list[str] = []
        tried: list[tuple[str, int]] = []
        for found in (list(peers), _browse(mdns, interfaces)):
            for host, port in found:
                if (host, port) in tried:
                    continue
                tried.append((host, port))
                reason = _join_over(ws, seed, host, port, timeout)
                if reason is None and ws.keep_secret():
                    relays.remember_from_code(paths.workspace_dir, _addresses(invitation))
                    return invitation.workspace
                reasons.append(reason or f"{host}:{port} did not admit this computer")
        if invitation.relays and _join_through_relays(ws, seed, _addresses(invitation),
                                                      reasons, timeout):
            relays.remember_from_code(paths.workspace_dir, _addresses(invitation))
            return invitation.workspace
        if not tried and not invitation.relays:
            raise WorkspaceError("found no member's computer on this network; ask a member "
                                 "for its address and add --peer HOST:PORT")
        raise WorkspaceError(_refusal(reasons))
    except BaseException:
        ws.close()
        if existed:  # a folder that held something else already: only what this made goes
            for made in (paths.replica, *_sidecars(paths.replica)):
                made.unlink(missing_ok=True)
        else:
            shutil.rmtree(paths.workspace_dir, ignore_errors=True)
        raise
    finally:
        ws.close()


def _join_through_relays(ws: Workspace, seed: bytes, addresses: list[RelayAddress],
                         reasons: list[str], timeout: float) -> bool:
    """Knock at each relay the code names until a member's node there admits this computer
    (core.relay_knock); then sync through that relay under the epoch it answered until the
    seals to me arrive (`keep_secret`). Whether that happened; `reasons` gets why not."""
    tag, key = invite_tag(seed), join_key(seed)
    blob = seal_knock(key, tag, ws.identity)
    for address in addresses:
        where = f"relay {address.hostport}"
        try:
            answer = asyncio.run(knock(address, space_id(ws.id), tag, blob,
                                       timeout=min(timeout, KNOCK_TIMEOUT_S)))
            epoch, secret = open_answer(key, ws.identity, answer)
        except KnockError as exc:
            reasons.append(f"{where} {exc}")
            continue
        except (OSError, TimeoutError, aiohttp.ClientError) as exc:
            said = str(exc) or "no answer"
            reasons.append(f"{where}: " + ("it does not know this workspace yet (no member "
                                           "has synced through it)" if said == "refused"
                                           else said))
            continue
        if asyncio.run(_sync_until_sealed(ws, address, epoch, secret, timeout)):
            return True
        reasons.append(f"{where}: admitted, but the workspace's keys did not arrive in time")
    return False


async def _sync_until_sealed(ws: Workspace, address: RelayAddress, epoch: int, secret: bytes,
                             timeout: float) -> bool:
    """Sync through the relay under the epoch a member's answer gave until the seals to me
    (my admission's) are here."""
    link = relays.link_for(ws, lambda: [address], secrets=lambda: (epoch, secret))
    await link.start()
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ws.keep_secret():
                return True
            await asyncio.sleep(0.1)
        return ws.keep_secret()
    finally:
        await link.close()


def _addresses(invitation: Invite) -> list[RelayAddress]:
    return [RelayAddress(host, port, key) for host, port, key in invitation.relays]


def _sidecars(replica: Path) -> list[Path]:
    return [replica.with_name(replica.name + suffix) for suffix in ("-wal", "-shm")]


def _open_personal(paths: Paths, sealed: bytes) -> bytes:
    if not paths.identity.exists():
        raise WorkspaceError("this code was made for someone's key, and this data folder has "
                             "no identity yet; run `hearth identity show` here, send that key to "
                             "the member, and ask for a code again")
    identity = Identity.load(paths.identity)
    try:
        return identity.unseal(sealed)
    except IdentityError:
        raise WorkspaceError("this code was made for another person's key (see "
                             "`hearth identity show` for this computer's)") from None


def _browse(mdns: bool, interfaces: list[str] | None) -> Iterator[tuple[str, int]]:
    """The addresses Hearth nodes advertise on this network (looked for only when needed)."""
    if mdns:
        from sync.discovery import async_browse

        yield from asyncio.run(async_browse(interfaces=interfaces))


def _refusal(reasons: list[str]) -> str:
    """What to tell the person: a member's refusal (expired, used up...) before the rest."""
    said = [r.split(f"{NOT_ADMITTED}: ", 1)[1] for r in reasons if NOT_ADMITTED in r] \
        or reasons
    return "; ".join(dict.fromkeys(said))


def _join_over(ws: Workspace, seed: bytes, host: str, port: int, timeout: float) -> str | None:
    """One join session with the node at host:port; None when it ran, else why it failed."""
    from sync.peers import PeerBook
    from sync.service import SyncFailed, SyncService, join_path

    service = SyncService(ws.replica, ws.identity, join_key(seed), mdns=False,
                          peers=PeerBook(ws.paths.workspace_dir / "peers.json"),
                          reconcile_interval=None)
    try:
        asyncio.run(service.async_sync_once(host, port, timeout=timeout,
                                            path=join_path(invite_tag(seed))))
    except SyncFailed as exc:
        said = str(exc)
        if f"{NOT_ADMITTED}: " in said:  # a member's node refused: say its reason alone
            return f"{host}:{port} {NOT_ADMITTED}: {said.split(f'{NOT_ADMITTED}: ', 1)[1]}"
        return said
    return None


def identity_key(paths: Paths) -> bytes:
    """This data folder's identity key (made now if there is none): what a personal code is
    made for."""
    return load_or_create_identity(paths).public_key


def parse_peer(text: str) -> tuple[str, int]:
    """HOST:PORT as a person types it (a member's address to join through); WorkspaceError
    with a one-line reason otherwise."""
    from sync.peers import AddressError, parse_address

    try:
        return parse_address(text.strip())
    except AddressError as exc:
        raise WorkspaceError(str(exc)) from None
