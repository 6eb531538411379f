"""A JSON value checked against a JSON Schema (the 2020-12 keywords tokprof's published schemas use),
with the first failure named by its place (``calls[3].cost.total: expected a number``).

Written for input tokprof reads back, a saved profile: every value a report reads has the type and
range the schema gives it before any report reads it. It knows ``type``, ``enum``, ``const``,
``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``, ``minLength``, ``maxLength``,
``pattern``, ``properties``, ``patternProperties``, ``additionalProperties``,
``unevaluatedProperties``, ``required``, ``dependentRequired``, ``propertyNames``, ``items``,
``minItems``, ``maxItems``, ``uniqueItems``, ``$ref`` (within the document), ``allOf``, ``anyOf``,
``oneOf``, ``not`` and ``if``/``then``/``else``; other keywords are not checked. Values nested
deeply must be refused before (a saved profile's depth is checked when it is parsed).
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from typing import Any

_TYPES = {
    "null": "null",
    "boolean": "true or false",
    "integer": "a whole number",
    "number": "a number",
    "string": "a string",
    "array": "a list",
    "object": "an object",
}


Place = tuple  # the keys and indexes from the top to a value, made into text only for a message


def place_text(place: Place) -> str:
    """``("calls", 3, "cost")`` as ``calls[3].cost``."""
    text = ""
    for key in place:
        text = f"{text}[{key}]" if isinstance(key, int) else (f"{text}.{key}" if text else str(key))
    return text


class SchemaMismatch(ValueError):
    """A value that the schema does not allow: ``place`` is where (text), ``problem`` is what."""

    def __init__(self, place: Place, problem: str):
        super().__init__(problem)
        self.at, self.problem = place, problem  # the text is made when asked: most mismatches are tries

    @property
    def place(self) -> str:
        return place_text(self.at)

    def __str__(self) -> str:
        return f"{self.place or 'the top'}: {self.problem}"


def _is(value: Any, kind: str) -> bool:
    if kind == "null":
        return value is None
    if kind == "boolean":
        return type(value) is bool
    if kind == "integer":
        return type(value) is int
    if kind == "number":
        return type(value) is int or (type(value) is float and math.isfinite(value))
    if kind == "string":
        return type(value) is str
    if kind == "array":
        return type(value) is list
    if kind == "object":
        return type(value) is dict
    return True


def _same(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1, 1 is 1.0."""
    if type(a) is str or type(b) is str:
        return a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@lru_cache(maxsize=256)
def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(text)


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 40 else text[:37] + "..."


class Checker:
    """Checks values against one schema document (its ``$ref``\\ s are resolved within it)."""

    def __init__(self, schema: dict, *, required: bool = True):
        self.root = schema
        self.required = required  # False: a field may be missing (an older layout), but not wrong

    def check(self, value: Any) -> None:
        """Raise :class:`SchemaMismatch` at the first place ``value`` does not match."""
        self._check(value, self.root, ())

    def _resolve(self, ref: str) -> dict:
        if not ref.startswith("#"):
            raise ValueError(f"only references within the schema are followed, not {ref!r}")
        node: Any = self.root
        for part in ref[1:].split("/")[1:]:
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def _matches(self, value: Any, schema: Any, place: Place) -> bool:
        try:
            self._check(value, schema, place)
        except SchemaMismatch:
            return False
        return True

    def _holds(self, value: Any, schema: Any, place: Place) -> bool:
        """Whether a condition (``if``, ``not``) holds: its ``required`` fields count even when
        missing fields are allowed (an older layout)."""
        demanding, self.required = self.required, True
        try:
            return self._matches(value, schema, place)
        finally:
            self.required = demanding

    def _check(self, value: Any, schema: Any, place: Place) -> set[str]:
        """Check, and return the names of the object's properties the schema evaluated."""
        if schema is True or schema == {}:
            return set()
        if schema is False:
            raise SchemaMismatch(place, "not allowed here")
        evaluated: set[str] = set()
        if "$ref" in schema:
            evaluated |= self._check(value, self._resolve(schema["$ref"]), place)
        self._scalar(value, schema, place)
        if type(value) is dict:
            evaluated |= self._object(value, schema, place)
        elif type(value) is list:
            self._array(value, schema, place)
        for sub in schema.get("allOf", ()):
            evaluated |= self._check(value, sub, place)
        if "anyOf" in schema and not any(self._matches(value, sub, place) for sub in schema["anyOf"]):
            raise SchemaMismatch(place, f"{_short(value)} matches none of the forms allowed here")
        if "oneOf" in schema:
            evaluated |= self._one_of(value, schema["oneOf"], place)
        if "not" in schema and self._holds(value, schema["not"], place):
            raise SchemaMismatch(place, "has a form not allowed here")
        if "if" in schema:
            branch = schema.get("then" if self._holds(value, schema["if"], place) else "else")
            if branch is not None:
                evaluated |= self._check(value, branch, place)
        if type(value) is dict and schema.get("unevaluatedProperties") is False:
            extra = sorted(set(value) - evaluated)
            if extra:
                raise SchemaMismatch(place + (extra[0],), "not a field of this object")
        return evaluated

    def _one_of(self, value: Any, forms: list, place: Place) -> set[str]:
        matched = [form for form in forms if self._matches(value, form, place)]
        if len(matched) == 1:
            return self._check(value, matched[0], place)
        if not matched and len(forms) == 2 and {"type": "null"} in forms:  # "X or null": say what X wants
            self._check(value, next(form for form in forms if form != {"type": "null"}), place)
        raise SchemaMismatch(
            place, f"{_short(value)} matches {'none' if not matched else 'more than one'} of the forms allowed here"
        )

    def _scalar(self, value: Any, schema: dict, place: Place) -> None:
        for key in schema:
            check = _SCALAR.get(key)
            if check is not None:
                problem = check(value, schema[key], schema)
                if problem is not None:
                    raise SchemaMismatch(place, problem)

    def _object(self, value: dict, schema: dict, place: Place) -> set[str]:
        properties = schema.get("properties", {})
        names = schema.get("propertyNames")
        patterns = schema.get("patternProperties", {})
        additional = schema.get("additionalProperties", True)
        evaluated: set[str] = set()
        for name, item in value.items():
            at = place + (name,)
            if names is not None:
                try:
                    self._check(name, names, at)
                except SchemaMismatch as exc:
                    raise SchemaMismatch(at, f"not an allowed name ({exc.problem})") from None
            known = False
            if name in properties:
                self._check(item, properties[name], at)
                known = True
            for pattern, sub in patterns.items():
                if _pattern(pattern).search(name):
                    self._check(item, sub, at)
                    known = True
            if not known and "additionalProperties" in schema:
                if additional is False:
                    raise SchemaMismatch(at, "not a field of this object")
                self._check(item, additional, at)
                known = True
            if known:
                evaluated.add(name)
        if self.required:
            for name in schema.get("required", ()):
                if name not in value:
                    raise SchemaMismatch(place + (name,), "missing")
        for name, needs in schema.get("dependentRequired", {}).items():
            if name in value and self.required:
                for other in needs:
                    if other not in value:
                        raise SchemaMismatch(place + (other,), f"missing (it goes with {name})")
        return evaluated

    def _array(self, value: list, schema: dict, place: Place) -> None:
        if len(value) < schema.get("minItems", 0):
            raise SchemaMismatch(place, f"expected at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise SchemaMismatch(place, f"expected at most {schema['maxItems']} items")
        items = schema.get("items")
        if items is not None:
            for index, item in enumerate(value):
                self._check(item, items, place + (index,))
        if schema.get("uniqueItems"):
            seen = set()
            for index, item in enumerate(value):
                key = json.dumps(item, sort_keys=True)
                if key in seen:
                    raise SchemaMismatch(place + (index,), "a repeated item (the items must differ)")
                seen.add(key)


def _type(value: Any, kinds: Any, schema: dict) -> str | None:
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if any(_is(value, kind) for kind in kinds):
        return None
    return "expected " + " or ".join(_TYPES.get(k, k) for k in kinds)


def _const(value: Any, const: Any, schema: dict) -> str | None:
    return None if _same(value, const) else f"expected {_short(const)}"


def _enum(value: Any, options: Any, schema: dict) -> str | None:
    if any(_same(value, option) for option in options):
        return None
    return "expected one of " + ", ".join(_short(o) for o in options)


def _bound(says: str, fails: Any) -> Any:
    def check(value: Any, bound: Any, schema: dict) -> str | None:
        if type(value) in (int, float) and fails(value, bound):
            return f"expected a number {says} {bound}"
        return None

    return check


def _min_length(value: Any, size: int, schema: dict) -> str | None:
    return f"expected at least {size} characters" if type(value) is str and len(value) < size else None


def _max_length(value: Any, size: int, schema: dict) -> str | None:
    return f"expected at most {size} characters" if type(value) is str and len(value) > size else None


def _pattern_of(value: Any, pattern: str, schema: dict) -> str | None:
    if type(value) is str and not _pattern(pattern).search(value):
        return f"{_short(value)} is not of the form {pattern}"
    return None


_SCALAR = {
    "type": _type,
    "const": _const,
    "enum": _enum,
    "minimum": _bound("at least", lambda v, b: v < b),
    "maximum": _bound("at most", lambda v, b: v > b),
    "exclusiveMinimum": _bound("over", lambda v, b: v <= b),
    "exclusiveMaximum": _bound("under", lambda v, b: v >= b),
    "minLength": _min_length,
    "maxLength": _max_length,
    "pattern": _pattern_of,
}
