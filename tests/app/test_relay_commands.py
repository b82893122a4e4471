"""`hearth relay add/list/remove/sync/status` (app/relay_commands.py, app/relays.py)."""

from __future__ import annotations

from pathlib import Path

from relay.server import RelayServer
from relay.store import RelayStore

from .conftest import Hearth

KEY = "ab" * 32


def test_admins_name_relays_and_everyone_lists_them(hearth: Hearth, alice, bob) -> None:
    assert "no relays" in hearth("relay", "list", data=alice.data).stdout
    added = hearth("relay", "add", "relay.example.org:7655", KEY, data=alice.data)
    assert "relay.example.org:7655 added" in added.stdout
    hearth("relay", "add", "[fe80::1]:9000", "cd" * 32, data=alice.data)
    listed = hearth("relay", "list", "--json", data=alice.data).json()
    assert [(r["address"], r["key"]) for r in listed] == [
        ("relay.example.org:7655", KEY), ("[fe80::1]:9000", "cd" * 32)]
    line = hearth.fails("relay", "add", "relay.example.org:7655", KEY, data=bob.data)
    assert "only admins" in line
    assert "64 hex digits" in hearth.fails("relay", "add", "h:1", "abc", data=alice.data)
    assert "HOST:PORT" in hearth.fails("relay", "add", "nope", KEY, data=alice.data)
    assert "removed" in hearth("relay", "remove", "ab", data=alice.data).stdout
    listed = hearth("relay", "list", "--json", data=alice.data).json()
    assert [r["address"] for r in listed] == ["[fe80::1]:9000"]
    assert "no relay" in hearth.fails("relay", "remove", "ab", data=alice.data)
    hearth("relay", "remove", "[fe80::1]:9000", data=alice.data)
    assert hearth("relay", "list", "--json", data=alice.data).json() == []


def test_sync_without_a_relay_or_a_reachable_one_says_so(hearth: Hearth, alice) -> None:
    assert "no relays" in hearth.fails("relay", "sync", data=alice.data)
    line = hearth.fails("relay", "sync", "127.0.0.1:9", KEY, "--timeout", "3", data=alice.data)
    assert "did not sync" in line


def test_status_reads_the_relays_folder(hearth: Hearth, tmp_path: Path) -> None:
    assert "no relay" in hearth.fails("relay", "status", data=tmp_path / "none")
    folder = tmp_path / "relay"
    RelayServer(folder).store.close()  # made as `relay serve` makes it, then stopped
    assert "no workspaces" in hearth("relay", "status", data=folder).stdout
    store = RelayStore(folder / "relay.db")
    store.register(bytes(32), bytes(32), 2, [bytes(32)])
    store.close()
    [row] = hearth("relay", "status", "--json", data=folder).json()
    assert (row["epoch"], row["envelopes"], row["connected"]) == (2, 0, 0)
    assert "epoch 2" in hearth("relay", "status", data=folder).stdout
