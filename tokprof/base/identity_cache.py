"""Values worked out for objects, found again for the same objects later, by identity.

A call's prompt is mostly the objects of the call before it (a view of one list, shared message
dicts): what a stage works out of a message (its digest, its copy with ids mapped) is worked out
once and found again by the message's ``id``. Each object is held with its value, so its ``id``
cannot be another object's while the value is kept.
"""

from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

V = TypeVar("V")


class Recall(Generic[V]):
    """Values by object, in rounds (a round: one call): :meth:`get` gives an object's value, from this
    round or the one before, else made. :meth:`start` begins a round and lets go of what the round
    before did not ask for; without it, every value is kept."""

    def __init__(self) -> None:
        self._before: dict[int, tuple[Any, V]] = {}
        self._now: dict[int, tuple[Any, V]] = {}

    def start(self) -> None:
        self._before, self._now = self._now, {}

    def get(self, item: Any, make: Callable[[Any], V]) -> V:
        key = id(item)
        found = self._now.get(key) or self._before.get(key)
        if found is None or found[0] is not item:
            found = (item, make(item))
        self._now[key] = found
        return found[1]
