"""A cache of what was used lately, in two generations: what a long log's calls no longer use is
forgotten, so what an attributor remembers follows the prompts it is working on, not the log."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

#: What :meth:`Recent.find` returns for a key it does not hold (a cached value may be None).
MISSING = object()


class Recent(Generic[K, V]):
    """A dict in two generations: :meth:`age` makes the new one old and starts a new one; a key
    found in the old one moves to the new one. What was not used for a whole generation is
    dropped when the next begins."""

    def __init__(self) -> None:
        self.new: dict[K, V] = {}
        self.old: dict[K, V] = {}

    def find(self, key: K) -> V | object:
        """The value of ``key``, or :data:`MISSING`."""
        found = self.new.get(key, MISSING)
        if found is MISSING:
            found = self.old.pop(key, MISSING)
            if found is not MISSING:
                self.new[key] = found  # type: ignore[assignment]
        return found

    def get(self, key: K) -> V | None:
        found = self.find(key)
        return None if found is MISSING else found  # type: ignore[return-value]

    def __contains__(self, key: K) -> bool:
        return self.find(key) is not MISSING

    def __getitem__(self, key: K) -> V:
        found = self.find(key)
        if found is MISSING:
            raise KeyError(key)
        return found  # type: ignore[return-value]

    def __setitem__(self, key: K, value: V) -> None:
        self.old.pop(key, None)
        self.new[key] = value

    def __len__(self) -> int:
        return len(self.new) + len(self.old)

    def values(self) -> Iterator[V]:
        yield from self.new.values()
        yield from self.old.values()

    def age(self) -> None:
        self.old = self.new
        self.new = {}

    def clear(self) -> None:
        self.new.clear()
        self.old.clear()
