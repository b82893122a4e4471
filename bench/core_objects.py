"""Objects built+signed/s, decoded+validated/s, and raw pynacl verify/s in the same run.

Target: decode+validate >= 0.85x raw verify (validation adds at most 15% to the signature check).
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from nacl.signing import VerifyKey  # noqa: E402

from bench._common import Target, options, rate, report  # noqa: E402
from core import kinds, objects  # noqa: E402
from core.identity import Identity  # noqa: E402

N = 20_000
ROUNDS = 3


def main() -> None:
    count = 500 if options(__doc__).tiny else N
    authors = [Identity.generate() for _ in range(16)]
    workspace = os.urandom(32)
    specs = []
    for i in range(count):
        channel = f"channel-{i % 50}"
        specs.append((authors[i % len(authors)], kinds.channel_stream(workspace, channel),
                      {"channel": channel, "text": f"message {i}: " + "lorem ipsum " * 8},
                      [os.urandom(32) for _ in range(1 + i % 3)]))

    best_build = best_decode = best_verify = float("inf")
    built = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        built = [objects.build(a, "post/text", stream=s, body=b, ts=1_700_000_000_000 + n,
                               links=links) for n, (a, s, b, links) in enumerate(specs)]
        best_build = min(best_build, time.perf_counter() - start)

        raws = [o.raw for o in built]
        start = time.perf_counter()
        for raw in raws:
            objects.decode(raw)
        best_decode = min(best_decode, time.perf_counter() - start)

        # The same signatures over the same unsigned bytes, straight through pynacl.
        triples = [(o.author, b"\xa7" + o.raw[1:o.raw.index(b"\x63sig")]
                    + o.raw[o.raw.index(b"\x63sig") + 70:], o.sig) for o in built]
        start = time.perf_counter()
        for author, message, sig in triples:
            VerifyKey(author).verify(message, sig)
        best_verify = min(best_verify, time.perf_counter() - start)

    decode_rate, verify_rate = rate(count, best_decode), rate(count, best_verify)
    report("core_objects", {
        "objects": count,
        "mean_object_bytes": round(sum(len(o.raw) for o in built) / count, 1),
        "build_sign_per_s": rate(count, best_build),
        "decode_validate_per_s": decode_rate,
        "raw_verify_per_s": verify_rate,
        "decode_vs_verify_ratio": round(decode_rate / verify_rate, 3),
    }, [Target("decode_vs_verify_ratio", ">=", 0.85, at_scale=True)])


if __name__ == "__main__":
    main()
