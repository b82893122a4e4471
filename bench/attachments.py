"""Attached files between Nodes on loopback (issues #19 and #34): every Node a process of its own.

- chat_posts_idle_s: 1,000 posts made on the sender (one after another) before any file moves;
  seconds from the first post to the last one stored on the receiver: chat's baseline (made
  again once the files below have moved: `chat_posts_idle_after_s`).
- one_to_one: a 500 MB file (`--size-mb`) from one Node to another, alone: MB/s, its ratio to
  one core's ChaCha20-Poly1305 rate measured in this run (what the transport encrypts with:
  cryptography's ChaCha20Poly1305, 64 KiB messages), and `app_vs_bare`, its ratio to the bare
  pipeline with hash and write (below). Target: >= 100 MB/s and >= 0.6x the bare pipeline.
  `cpu_s_per_100_mb`: the CPU seconds (user, system) the sender and the receiver spent on it.
- chat during a transfer: another file of the same size, with the same 1,000 posts made while
  it moves: `chat_posts_s` as above, and `chat_vs_idle`, its ratio to the mean of the two
  baselines (a post takes 1 to 4 ms here as the machine's load comes and goes). Target:
  <= 1.5x. `posting_s` / `posting_idle_s` are the sender's own time to make the posts (one
  after another, as a person would, faster). `one_to_one_with_chat_mb_s`: that file's rate
  (chat goes first: the file moves at one chunk every 100 ms while the posts are made).
- swarm: the first file from three seeders to a fourth Node, against the one-seeder figure.
- peak RSS (VmHWM) of every Node process. Target: <= 300 MB each.
- blake2b_mb_s: one core hashing 256 KiB chunks (every received byte is hashed once, to check
  it against its id), and that as a ratio to ChaCha20-Poly1305.
- bare_*: the same number of bytes through the issue's primitives alone, with no protocol, no
  asyncio and no Nodes: a sending process encrypts the file in 65,535-byte messages onto a TCP
  socket on 127.0.0.1 and this process decrypts them (`bare_transport`), also hashes each
  256 KiB chunk with the chunk id function (`bare_with_hash`), and also appends it to one file
  in the bench's folder (`bare_with_hash_and_write`, run again right after one_to_one:
  `..._after`; `app_vs_bare` takes the mean of the two, as the machine's load moves); each with
  its ratio to ChaCha20-Poly1305. Sender and receiver share the machine's cores, as the Nodes
  do, so these are the ceilings of one_to_one's ratio here.

Usage: python bench/attachments.py [--size-mb N] [--dir FOLDER] [--profile FOLDER]. The Nodes'
folders go in a temporary folder under FOLDER (default: the system's temporary folder). With
`--profile`, every thread of the sender and the receiver runs under cProfile (CPU time), one
.prof a Node and thread kind in that folder, and the run stops after one_to_one (no posts), so
the profiles are of that transfer. The Nodes append chunks to pack files with a SQLite index
(storage/chunks.py), as the bare pipeline appends to one file; until issue #34 they stored
every chunk as a file of its own, and creating one cost 0.02 ms of kernel time at quiet moments
and 0.3 to 0.9 ms at busy ones on the 2-core VM these figures were taken on (ext4 without a
journal). one_to_one and the bare pipeline both move with what else the machine does (other
test suites and benchmarks), so compare versions in paired runs, one straight after the other,
by app_vs_bare and cpu_s_per_100_mb. A child (`--node DATA`) runs
one Node and takes one JSON command a line on stdin, answering one JSON line on stdout;
`--bare-send` is the bare pipeline's sender.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import Target, options, report  # noqa: E402

MB = 1 << 20
POSTS = 1000
TINY_MB, TINY_POSTS = 2, 50
CHANNEL = "general"
WAIT_S = 1800.0


# The child: one Node --------------------------------------------------------------------------

def _peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _profile_threads(folder: Path, name: str) -> list:
    """Run every thread started from now on under cProfile; returns the list of (thread name,
    profile) that `_dump_profiles` writes, as each thread ends."""
    import cProfile

    done: list = []
    run = threading.Thread.run

    def profiled(self: threading.Thread) -> None:
        prof = cProfile.Profile(time.thread_time)  # CPU time: two cores shared by four threads
        prof.enable()
        try:
            run(self)
        finally:
            prof.disable()
            done.append((self.name, prof))

    threading.Thread.run = profiled  # type: ignore[method-assign]
    return done


def _dump_profiles(done: list, folder: Path, name: str) -> None:
    """One .prof file per thread kind (hearth-node, hearth-chunks, ...), merged."""
    import pstats

    kinds: dict[str, pstats.Stats] = {}
    for thread, prof in list(done):
        kind = thread.split("_")[0].rstrip("-0123456789") or "thread"
        prof.create_stats()
        if kind in kinds:
            kinds[kind].add(prof)
        else:
            kinds[kind] = pstats.Stats(prof)
    for kind, stats in kinds.items():
        stats.dump_stats(str(folder / f"{name}-{kind}.prof"))


def child(data: str, peers: list[str], profile: str | None = None) -> None:
    if profile:
        profiled = _profile_threads(Path(profile), Path(data).name)
    from app import preferences
    from app.events import ObjectsStored
    from app.node import Node
    from app.paths import Paths

    paths = Paths.resolve(Path(data), "default")
    preferences.save(paths.data, auto_download_mb=0)
    node = Node(paths, port=0, interfaces=["127.0.0.1"], mdns=False,
                peers=[(p.split(":")[0], int(p.split(":")[1])) for p in peers],
                reconcile_interval=None).start()
    arrived: dict[bytes, float] = {}
    lock = threading.Lock()

    def seen(event) -> None:
        if isinstance(event, ObjectsStored):
            now = time.time()
            with lock:
                for oid in event.ids:
                    arrived.setdefault(oid, now)

    node.subscribe(seen)
    fetching = None
    started = 0.0
    out = sys.stdout
    print(json.dumps({"port": node.port}), file=out, flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        op = cmd["op"]
        answer: dict = {}
        if op == "attach":
            path = Path(cmd["path"])
            answer["id"] = node.run(lambda ws, p=path: ws.files.attach(CHANNEL, [p]).id.hex()).result(WAIT_S)
        elif op == "has":
            oid = bytes.fromhex(cmd["id"])
            deadline = time.monotonic() + WAIT_S
            while (not node.run(lambda ws, o=oid: ws.replica.has(o)).result(WAIT_S)
                   and time.monotonic() < deadline):
                time.sleep(0.05)
        elif op == "online":
            while len(node.online().result(WAIT_S)) < cmd["count"]:
                time.sleep(0.05)
        elif op == "download":
            started = time.perf_counter()
            fetching = node.download(bytes.fromhex(cmd["id"]), 0)
        elif op == "wait_download":
            fetching.result(WAIT_S)
            answer["seconds"] = time.perf_counter() - started
        elif op == "post":
            answer["start"] = time.time()
            texts = [f"chat {n} while a file moves" for n in range(cmd["count"])]
            answer["ids"] = [node.facade.run(lambda ws, t=t: ws.post(CHANNEL, t).id)
                             .result(WAIT_S).hex() for t in texts]
            answer["end"] = time.time()
        elif op == "arrived":
            ids = [bytes.fromhex(i) for i in cmd["ids"]]
            deadline = time.monotonic() + WAIT_S
            while time.monotonic() < deadline:
                with lock:
                    if all(i in arrived for i in ids):
                        answer["last"] = max((arrived[i] for i in ids), default=time.time())
                        break
                time.sleep(0.01)
        elif op == "cpu":
            times = os.times()
            answer["user"], answer["system"] = times.user, times.system
        elif op == "rss":
            answer["rss_mb"] = round(_peak_rss_mb(), 1)
        elif op == "stop":
            node.stop()
            if profile:
                _dump_profiles(profiled, Path(profile), Path(data).name)
            print(json.dumps({}), file=out, flush=True)
            return
        print(json.dumps(answer), file=out, flush=True)


# The parent -------------------------------------------------------------------------------------

class Proc:
    def __init__(self, data: Path, peers: list[int] = (), profile: str | None = None):
        args = [sys.executable, __file__, "--node", str(data)]
        if profile:
            args += ["--profile", str(Path(profile).resolve())]
        for port in peers:
            args += ["--peer", f"127.0.0.1:{port}"]
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, bufsize=1)
        self.port = self._read()["port"]

    def _read(self) -> dict:
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("a node process ended early")
        return json.loads(line)

    def ask(self, op: str, **kw) -> dict:
        self.p.stdin.write(json.dumps({"op": op, **kw}) + "\n")
        self.p.stdin.flush()
        return self._read()

    def stop(self) -> None:
        self.ask("stop")
        self.p.wait(60)


def chacha_rate() -> float:
    """MB/s of one core encrypting 64 KiB messages with ChaCha20-Poly1305 (the transport's)."""
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

    aead, message, nonce = ChaCha20Poly1305(os.urandom(32)), os.urandom(65535), bytes(12)
    count, started = 0, time.perf_counter()
    while time.perf_counter() - started < 1.0:
        for _ in range(100):
            aead.encrypt(nonce, message, None)
        count += 100
    return count * len(message) / (time.perf_counter() - started) / 1e6


def blake2b_rate() -> float:
    """MB/s of one core hashing 256 KiB chunks with BLAKE2b-256 (every chunk's id): the
    receiver hashes every byte once, so this bounds one transfer's rate on one core."""
    from core.attachments import CHUNK_SIZE, chunk_id

    chunk = os.urandom(CHUNK_SIZE)
    count, started = 0, time.perf_counter()
    while time.perf_counter() - started < 1.0:
        for _ in range(20):
            chunk_id(chunk)
        count += 20
    return count * len(chunk) / (time.perf_counter() - started) / 1e6


# The bare pipeline: what the primitives cost with no protocol around them -----------

BARE_MESSAGE = 65535  # a Noise transport message at its largest: ciphertext and tag
BARE_STAGES = ("transport", "hash", "write")  # each also does what those before it do


def bare_send(port: int, source: str, size: int) -> None:
    """The sending process: `size` bytes of `source`, encrypted in 65,535-byte messages (a
    2-byte length before each) onto a TCP socket to 127.0.0.1:`port`."""
    import socket

    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

    aead, plain, counter = ChaCha20Poly1305(bytes(32)), BARE_MESSAGE - 16, 0
    with socket.create_connection(("127.0.0.1", port)) as sock, open(source, "rb") as f:
        left = size
        while left:
            data = f.read(min(left, plain * 16))
            left -= len(data)
            out = []
            for start in range(0, len(data), plain):
                sealed = aead.encrypt(counter.to_bytes(12, "little"),
                                      data[start:start + plain], None)
                counter += 1
                out += (len(sealed).to_bytes(2, "big"), sealed)
            sock.sendall(b"".join(out))


def bare_rate(source: Path, size: int, stage: str, folder: Path) -> float:
    """MB/s of `size` bytes from a sending process to this one: decrypted (every stage), each
    256 KiB chunk hashed with the chunk id function (`hash` and `write`) and appended to one
    file in `folder` (`write`). The rate is taken from the first byte received to the last."""
    import socket

    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

    from core.attachments import CHUNK_SIZE, chunk_id

    aead = ChaCha20Poly1305(bytes(32))
    hashing, writing = stage in ("hash", "write"), stage == "write"
    with socket.create_server(("127.0.0.1", 0)) as server:
        sender = subprocess.Popen([sys.executable, __file__, "--bare-send",
                                   str(server.getsockname()[1]), str(source), str(size)])
        server.settimeout(60)
        conn, _ = server.accept()
        conn.settimeout(None)
    target = folder / "bare.bin"
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600) if writing else None
    try:
        with conn, conn.makefile("rb", buffering=4 * MB) as stream:
            got, counter, chunk = 0, 0, bytearray()
            head = stream.read(2)
            started = time.perf_counter()
            while got < size:
                sealed = stream.read(int.from_bytes(head, "big"))
                plain = aead.decrypt(counter.to_bytes(12, "little"), sealed, None)
                counter += 1
                got += len(plain)
                chunk += plain
                if len(chunk) >= CHUNK_SIZE or got >= size:
                    if hashing:
                        chunk_id(chunk)
                    if writing:
                        os.write(fd, chunk)
                    chunk = bytearray()
                if got < size:
                    head = stream.read(2)
            seconds = time.perf_counter() - started
    finally:
        if fd is not None:
            os.close(fd)
            target.unlink()
        sender.wait(60)
    return size / seconds / 1e6


def write_random(path: Path, size: int) -> None:
    with open(path, "wb") as f:
        left = size
        while left:
            piece = os.urandom(min(left, 8 * MB))
            f.write(piece)
            left -= len(piece)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=500)
    parser.add_argument("--node")
    parser.add_argument("--peer", action="append", default=[])
    parser.add_argument("--dir", help="where the Nodes' folders go (default: the system's temp)")
    parser.add_argument("--bare-send", nargs=3, metavar=("PORT", "SOURCE", "SIZE"))
    parser.add_argument("--profile", metavar="FOLDER",
                        help="run every Node thread under cProfile; one .prof a Node and thread")
    args = options(__doc__, parser)
    posts = TINY_POSTS if args.tiny else POSTS
    if args.tiny:
        args.size_mb = TINY_MB
    if args.bare_send:
        bare_send(int(args.bare_send[0]), args.bare_send[1], int(args.bare_send[2]))
        return
    if args.node:
        child(args.node, args.peer, args.profile)
        return
    from tests.support import make_members

    size = args.size_mb * MB
    root = Path(tempfile.mkdtemp(prefix="hearth-bench-files-", dir=args.dir))
    procs: list[Proc] = []
    try:
        paths = make_members(root, 5)
        source = root / "file.bin"
        source2 = root / "file2.bin"
        write_random(source, size)
        write_random(source2, size)
        rate, hashing = chacha_rate(), blake2b_rate()
        bare = {stage: bare_rate(source, size, stage, root) for stage in BARE_STAGES}
        if args.profile:
            Path(args.profile).mkdir(parents=True, exist_ok=True)

        seeder = Proc(paths[0].data, profile=args.profile)
        procs.append(seeder)
        mid = seeder.ask("attach", path=str(source))["id"]
        mid2 = seeder.ask("attach", path=str(source2))["id"]
        receiver = Proc(paths[1].data, [seeder.port], profile=args.profile)
        procs.append(receiver)
        receiver.ask("has", id=mid)
        receiver.ask("has", id=mid2)
        # The chat's baseline: the same posts with no transfer.
        posted = seeder.ask("post", count=0 if args.profile else posts)
        chat_idle_s = receiver.ask("arrived", ids=posted["ids"])["last"] - posted["start"]
        posting_idle_s = posted["end"] - posted["start"]
        # One file alone, as the bare pipeline moves it.
        before = [proc.ask("cpu") for proc in (seeder, receiver)]
        receiver.ask("download", id=mid)
        one = receiver.ask("wait_download")["seconds"]
        one_mb_s = size / one / 1e6
        # The bare pipeline again, right after: the machine's load moves between the two.
        bare_after = bare_rate(source, size, "write", root)
        bare_write = (bare["write"] + bare_after) / 2
        # CPU seconds each side spent on the transfer (user, system), per 100 MB.
        cpu = {name: {kind: round((after[kind] - start[kind]) / size * 100 * MB, 3)
                      for kind in ("user", "system")}
               for name, start, after in zip(("seeder", "receiver"), before,
                                             [proc.ask("cpu") for proc in (seeder, receiver)],
                                             strict=True)}
        if args.profile:  # the profiles are of that transfer alone
            print(json.dumps({"one_to_one_mb_s": round(one_mb_s, 1),
                              "bare_with_hash_and_write_mb_s": round(bare_write, 1),
                              "cpu_s_per_100_mb": cpu}))
            return
        # Another file of the same size, with the posts made while it moves.
        receiver.ask("download", id=mid2)
        posted = seeder.ask("post", count=posts)
        last = receiver.ask("arrived", ids=posted["ids"])["last"]
        with_chat = receiver.ask("wait_download")["seconds"]
        chat_s = last - posted["start"]
        posting_s = posted["end"] - posted["start"]
        # The baseline again, once no file moves: the posts take 1 to 4 ms each on this
        # machine as its load comes and goes, so the ratio is taken to the mean of the two.
        posted = seeder.ask("post", count=posts)
        chat_idle_after_s = receiver.ask("arrived", ids=posted["ids"])["last"] - posted["start"]
        chat_idle_mean = (chat_idle_s + chat_idle_after_s) / 2
        with_chat_mb_s = size / with_chat / 1e6

        # Two more seeders: the same chunks (copied into their stores) and the message.
        for extra in paths[2:4]:
            shutil.copytree(paths[0].workspace_dir / "chunks", extra.workspace_dir / "chunks",
                            dirs_exist_ok=True, ignore=shutil.ignore_patterns("*-shm"))
        more = [Proc(p.data, [seeder.port]) for p in paths[2:4]]
        procs += more
        for proc in more:
            proc.ask("has", id=mid)
        fourth = Proc(paths[4].data, [seeder.port, *(p.port for p in more)])
        procs.append(fourth)
        fourth.ask("online", count=3)
        fourth.ask("has", id=mid)
        fourth.ask("download", id=mid)
        three = fourth.ask("wait_download")["seconds"]
        three_mb_s = size / three / 1e6

        rss = {name: proc.ask("rss")["rss_mb"] for name, proc in zip(
            ("seeder", "receiver", "seeder2", "seeder3", "fourth"), procs, strict=True)}
        report("attachments", {
            "size_mb": args.size_mb,
            "folder": str(root.parent),
            "chacha20poly1305_mb_s": round(rate, 1),
            "one_to_one_mb_s": round(one_mb_s, 1),
            "ratio_to_chacha": round(one_mb_s / rate, 3),
            # What hashing alone allows, as a ratio to ChaCha20-Poly1305, on one core.
            "blake2b_mb_s": round(hashing, 1),
            "hash_ceiling_ratio": round(hashing / rate, 3),
            # The same bytes with no protocol: the ceiling of the ratio above on this machine.
            "bare_transport_mb_s": round(bare["transport"], 1),
            "bare_transport_ratio": round(bare["transport"] / rate, 3),
            "bare_with_hash_mb_s": round(bare["hash"], 1),
            "bare_with_hash_ratio": round(bare["hash"] / rate, 3),
            "bare_with_hash_and_write_mb_s": round(bare["write"], 1),
            "bare_with_hash_and_write_ratio": round(bare["write"] / rate, 3),
            "bare_with_hash_and_write_after_mb_s": round(bare_after, 1),
            # One node to another over the bare pipeline with hash and write (the mean of the
            # runs before and after it).
            "app_vs_bare": round(one_mb_s / bare_write, 3),
            "cpu_s_per_100_mb": cpu,
            "one_to_one_with_chat_mb_s": round(with_chat_mb_s, 1),
            "chat_posts": posts,
            "chat_posts_s": round(chat_s, 3),
            "chat_posts_idle_s": round(chat_idle_s, 3),
            "chat_posts_idle_after_s": round(chat_idle_after_s, 3),
            "chat_vs_idle": round(chat_s / chat_idle_mean, 2),
            # Of which the sender's own posting (the posts are made one after another).
            "posting_s": round(posting_s, 3),
            "posting_idle_s": round(posting_idle_s, 3),
            "three_seeders_mb_s": round(three_mb_s, 1),
            "three_vs_one": round(three_mb_s / one_mb_s, 2),
            "peak_rss_mb": rss,
            "peak_rss_mb_max": max(rss.values()),
        }, [Target("one_to_one_mb_s", ">=", 100, at_scale=True),
            Target("app_vs_bare", ">=", 0.6, at_scale=True),
            Target("chat_vs_idle", "<=", 1.5, at_scale=True),
            Target("peak_rss_mb_max", "<=", 300)])
    finally:
        for proc in procs:
            try:
                proc.stop()
            except Exception:  # noqa: BLE001 - a node that died: its process goes anyway
                proc.p.kill()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
