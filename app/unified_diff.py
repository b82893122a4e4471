"""A unified diff of two texts' lines, as `diff -u` prints it (`hearth doc diff`), with
fast-diff-match-patch (Google's diff-match-patch in C++): lines are compared as single
characters, so it diffs them too."""

from __future__ import annotations

import fast_diff_match_patch as dmp

CONTEXT_LINES = 3  # around each hunk of a unified diff, as diff -u
# Seconds one diff may take: diff-match-patch is about quadratic on text that has little in
# common (240,000 such characters took minutes), and it runs on the Node's thread. Past this the
# diff is still exact, only coarser (larger replaced runs).
DIFF_TIME_LIMIT_S = 0.5
_LINE_CODES = 0x10000  # lines diffed as characters from here (past every surrogate)


def unified(old: str, new: str, old_label: str, new_label: str,
            context: int = CONTEXT_LINES) -> list[str]:
    """A unified diff (as `diff -u` prints it) of two texts' lines, as lines without their
    line breaks; [] when the texts are equal."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    codes: dict[str, str] = {}

    def encode(lines: list[str]) -> str:
        return "".join(codes.setdefault(line, chr(_LINE_CODES + len(codes))) for line in lines)

    ops = dmp.diff(encode(a), encode(b), timelimit=DIFF_TIME_LIMIT_S, checklines=False,
                   cleanup="No", counts_only=True)
    opcodes: list[tuple[str, int, int, int, int]] = []
    i = j = 0
    for op, n in ops:
        di, dj = (n, n) if op == "=" else (n, 0) if op == "-" else (0, n)
        opcodes.append((op, i, i + di, j, j + dj))
        i, j = i + di, j + dj
    if all(op == "=" for op, *_ in opcodes):
        return []
    out = [f"--- {old_label}", f"+++ {new_label}"]
    for group in _grouped(opcodes, context):
        i1, i2 = group[0][1], group[-1][2]
        j1, j2 = group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1, i2)} +{_range(j1, j2)} @@")
        for op, s1, e1, s2, e2 in group:
            if op == "=":
                out += _prefixed(" ", a, s1, e1)
            elif op == "-":
                out += _prefixed("-", a, s1, e1)
            else:
                out += _prefixed("+", b, s2, e2)
    return out


def _range(start: int, stop: int) -> str:
    length = stop - start
    first = start + 1 if length else start
    return str(first) if length == 1 else f"{first},{length}"


def _prefixed(mark: str, lines: list[str], start: int, stop: int) -> list[str]:
    out = []
    for line in lines[start:stop]:
        out.append(mark + line.rstrip("\r\n"))
        if not line.endswith("\n"):
            out.append("\\ No newline at end of file")
    return out


def _grouped(opcodes: list[tuple[str, int, int, int, int]],
             context: int) -> list[list[tuple[str, int, int, int, int]]]:
    """Changes with up to `context` unchanged lines around them, those closer than twice that
    together (difflib's grouping)."""
    codes = list(opcodes)
    if codes[0][0] == "=":
        op, i1, i2, j1, j2 = codes[0]
        codes[0] = op, max(i1, i2 - context), i2, max(j1, j2 - context), j2
    if codes[-1][0] == "=":
        op, i1, i2, j1, j2 = codes[-1]
        codes[-1] = op, i1, min(i2, i1 + context), j1, min(j2, j1 + context)
    groups, group = [], []
    for op, i1, i2, j1, j2 in codes:
        if op == "=" and i2 - i1 > 2 * context:
            group.append((op, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((op, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "="):
        groups.append(group)
    return [g for g in groups if any(op != "=" for op, *_ in g)]
