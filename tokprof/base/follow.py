"""Following a file being written: the complete lines appended since the last read.

A :class:`Follower` keeps a byte offset, the partial last line (bytes after the last newline, held
until the line is complete) and the file's identity (device and inode). A read costs what was
appended. When the file at the path is another file (replaced, rotated) or shorter than what was
read (truncated), the follower starts again from its first byte and says so (``restarted``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

#: At most this many bytes are read at once (a session that grew by more is read in several reads).
CHUNK = 8 << 20


@dataclass
class Appended:
    """What one read found: the complete new lines, numbered from 1 in the file, and whether the
    follower started the file again (every earlier line is to be forgotten)."""

    lines: list[tuple[int, bytes]] = field(default_factory=list)
    restarted: bool = False
    missing: bool = False  # the file is not there (moved or deleted)


@dataclass
class Follower:
    path: str
    offset: int = 0
    buffer: bytes = b""
    number: int = 0  # lines read so far
    identity: tuple[int, int] | None = None

    def read(self) -> Appended:
        try:
            with open(self.path, "rb") as f:
                st = os.fstat(f.fileno())
                out = Appended()
                identity = (st.st_dev, st.st_ino)
                if self.identity is not None and (identity != self.identity or st.st_size < self.offset):
                    self.offset, self.buffer, self.number, out.restarted = 0, b"", 0, True
                self.identity = identity
                if st.st_size > self.offset:
                    f.seek(self.offset)
                    data = f.read(min(st.st_size - self.offset, CHUNK))
                    self.offset += len(data)
                    self._split(data, out)
                return out
        except FileNotFoundError:
            return Appended(missing=True)
        except OSError:
            return Appended(missing=True)

    def _split(self, data: bytes, out: Appended) -> None:
        data = self.buffer + data
        end = data.rfind(b"\n")
        if end < 0:
            self.buffer = data
            return
        self.buffer = data[end + 1 :]
        for raw in data[:end].split(b"\n"):
            self.number += 1
            if raw.strip():
                out.lines.append((self.number, raw))

    def moved_to(self, path: str) -> None:
        """The same file (same identity) is now at another path."""
        self.path = path
