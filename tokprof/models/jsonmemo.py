"""``tojson`` results remembered while a caller renders the same objects again and again."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterable, Iterator
from typing import Any

#: What ``json.dumps(x, ensure_ascii=False)`` builds on every call, built once.
_JSON = json.JSONEncoder(ensure_ascii=False)


class JsonMemo:
    """``tojson`` results remembered by object identity, for the objects a caller gives templates and
    vouches will not change while the memo lives (:meth:`add`: a value and every dict and list it
    holds). Long logs render the same tool calls and tool definitions into every later prompt, each
    several times; their JSON is written once. Objects a template builds as it runs are never
    remembered. The memo keeps the objects it knows, so their identities cannot be reused."""

    def __init__(self) -> None:
        self._objects: dict[int, Any] = {}
        self._json: dict[int, str] = {}

    def add(self, value: Any) -> None:
        stack = [value]
        while stack:
            item = stack.pop()
            kind = type(item)
            if (kind is dict or kind is list) and id(item) not in self._objects:
                self._objects[id(item)] = item
                stack.extend(item.values() if kind is dict else item)

    def clear(self) -> None:
        self._objects.clear()
        self._json.clear()

    def retain(self, values: Iterable[Any]) -> None:
        """Forget every object but ``values`` and what they hold (keeping the JSON already written of
        those): a caller that stops using objects lets them go."""
        known, written = self._objects, self._json
        self._objects, self._json = {}, {}
        for value in values:
            self.add(value)
        self._json = {key: text for key, text in written.items() if self._objects.get(key) is known.get(key)}

    def json(self, value: Any) -> str | None:
        """``value``'s JSON (``json.dumps(value, ensure_ascii=False)``), if it is an object added."""
        if self._objects.get(id(value)) is not value:
            return None
        text = self._json.get(id(value))
        if text is None:
            text = self._json[id(value)] = _JSON.encode(value)
        return text

    @contextlib.contextmanager
    def using(self) -> Iterator[None]:
        """Renders on this thread inside use the memo."""
        previous = _MEMO.current
        _MEMO.current = self
        try:
            yield
        finally:
            _MEMO.current = previous


class _Memo(threading.local):
    current: JsonMemo | None = None


_MEMO = _Memo()


def remembered_json(value: Any) -> str | None:
    """``value``'s JSON from the memo this thread renders with, if it knows ``value``."""
    memo = _MEMO.current
    return None if memo is None else memo.json(value)
