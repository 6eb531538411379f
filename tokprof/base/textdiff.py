"""Exact string comparisons used by attribution: common prefixes and inserted regions."""

from __future__ import annotations

import difflib


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix, by binary search on slice comparisons (fast on long strings)."""
    hi = min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    lo = 0  # a[:lo] == b[:lo] holds; a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def common_suffix(a: str, b: str, limit: int) -> int:
    """Length of the longest common suffix, at most ``limit``."""
    hi = min(len(a), len(b), limit)
    if hi == 0 or a[len(a) - hi :] == b[len(b) - hi :]:
        return hi
    lo = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[len(a) - mid : len(a) - lo] == b[len(b) - mid : len(b) - lo]:
            lo = mid
        else:
            hi = mid
    return lo


def inserted_regions(old: str, new: str) -> list[tuple[int, int]]:
    """Regions of ``new`` (start, end) that have no counterpart in ``old``.

    Usually ``new`` is ``old`` with one block inserted, found exactly from the common prefix and
    suffix. Otherwise the differing middle is compared line by line, and lines that changed are
    compared character by character.
    """
    p = common_prefix(old, new)
    s = common_suffix(old, new, min(len(old), len(new)) - p)
    old_mid, new_mid = old[p : len(old) - s], new[p : len(new) - s]
    if not new_mid:
        return []
    if not old_mid:
        return [(p, p + len(new_mid))]
    regions: list[tuple[int, int]] = []
    old_lines = old_mid.splitlines(keepends=True)
    new_lines = new_mid.splitlines(keepends=True)
    new_starts = [0]
    for line in new_lines:
        new_starts.append(new_starts[-1] + len(line))
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "insert":
            regions.append((p + new_starts[j1], p + new_starts[j2]))
        elif tag == "replace":
            old_text, new_text = "".join(old_lines[i1:i2]), "".join(new_lines[j1:j2])
            base = p + new_starts[j1]
            if len(old_text) * len(new_text) > 4_000_000:
                regions.append((base, base + len(new_text)))
                continue
            chars = difflib.SequenceMatcher(None, old_text, new_text, autojunk=False)
            for ctag, _, _, k1, k2 in chars.get_opcodes():
                if ctag in ("insert", "replace"):
                    regions.append((base + k1, base + k2))
    return regions
