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

_TYPES = {"null": "null", "boolean": "true or false", "integer": "a whole number", "number": "a number",
          "string": "a string", "array": "a list", "object": "an object"}


class SchemaMismatch(ValueError):
    """A value that the schema does not allow: ``place`` is where, ``problem`` is what."""

    def __init__(self, place: str, problem: str):
        super().__init__(f"{place or 'the top'}: {problem}")
        self.place, self.problem = place, problem


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
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@lru_cache(maxsize=256)
def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(text)


def _at(place: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{place}[{key}]"
    return f"{place}.{key}" if place else key


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
        self._check(value, self.root, "")

    def _resolve(self, ref: str) -> dict:
        if not ref.startswith("#"):
            raise ValueError(f"only references within the schema are followed, not {ref!r}")
        node: Any = self.root
        for part in ref[1:].split("/")[1:]:
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def _matches(self, value: Any, schema: Any, place: str) -> bool:
        try:
            self._check(value, schema, place)
        except SchemaMismatch:
            return False
        return True

    def _check(self, value: Any, schema: Any, place: str) -> set[str]:
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
        if "not" in schema and self._matches(value, schema["not"], place):
            raise SchemaMismatch(place, "has a form not allowed here")
        if "if" in schema:
            branch = schema.get("then" if self._matches(value, schema["if"], place) else "else")
            if branch is not None:
                evaluated |= self._check(value, branch, place)
        if type(value) is dict and schema.get("unevaluatedProperties") is False:
            extra = sorted(set(value) - evaluated)
            if extra:
                raise SchemaMismatch(_at(place, extra[0]), "not a field of this object")
        return evaluated

    def _one_of(self, value: Any, forms: list, place: str) -> set[str]:
        matched = [form for form in forms if self._matches(value, form, place)]
        if len(matched) == 1:
            return self._check(value, matched[0], place)
        if not matched and len(forms) == 2 and {"type": "null"} in forms:  # "X or null": say what X wants
            self._check(value, next(form for form in forms if form != {"type": "null"}), place)
        raise SchemaMismatch(place, f"{_short(value)} matches {'none' if not matched else 'more than one'} "
                                    "of the forms allowed here")

    def _scalar(self, value: Any, schema: dict, place: str) -> None:
        kinds = schema.get("type")
        if kinds is not None:
            kinds = [kinds] if isinstance(kinds, str) else kinds
            if not any(_is(value, kind) for kind in kinds):
                raise SchemaMismatch(place, "expected " + " or ".join(_TYPES.get(k, k) for k in kinds))
        if "const" in schema and not _same(value, schema["const"]):
            raise SchemaMismatch(place, f"expected {_short(schema['const'])}")
        if "enum" in schema and not any(_same(value, option) for option in schema["enum"]):
            raise SchemaMismatch(place, "expected one of " + ", ".join(_short(o) for o in schema["enum"]))
        if type(value) in (int, float):
            for key, fails, says in (("minimum", lambda v, b: v < b, "at least"),
                                     ("maximum", lambda v, b: v > b, "at most"),
                                     ("exclusiveMinimum", lambda v, b: v <= b, "over"),
                                     ("exclusiveMaximum", lambda v, b: v >= b, "under")):
                if key in schema and fails(value, schema[key]):
                    raise SchemaMismatch(place, f"expected a number {says} {schema[key]}")
        if type(value) is str:
            if len(value) < schema.get("minLength", 0):
                raise SchemaMismatch(place, f"expected at least {schema['minLength']} characters")
            if "maxLength" in schema and len(value) > schema["maxLength"]:
                raise SchemaMismatch(place, f"expected at most {schema['maxLength']} characters")
            if "pattern" in schema and not _pattern(schema["pattern"]).search(value):
                raise SchemaMismatch(place, f"{_short(value)} is not of the form {schema['pattern']}")

    def _object(self, value: dict, schema: dict, place: str) -> set[str]:
        properties = schema.get("properties", {})
        if self.required:
            for name in schema.get("required", ()):
                if name not in value:
                    raise SchemaMismatch(_at(place, name), "missing")
        for name, needs in schema.get("dependentRequired", {}).items():
            if name in value and self.required:
                for other in needs:
                    if other not in value:
                        raise SchemaMismatch(_at(place, other), f"missing (it goes with {name})")
        names = schema.get("propertyNames")
        patterns = schema.get("patternProperties", {})
        additional = schema.get("additionalProperties", True)
        evaluated: set[str] = set()
        for name, item in value.items():
            at = _at(place, name)
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
        return evaluated

    def _array(self, value: list, schema: dict, place: str) -> None:
        if len(value) < schema.get("minItems", 0):
            raise SchemaMismatch(place, f"expected at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise SchemaMismatch(place, f"expected at most {schema['maxItems']} items")
        items = schema.get("items")
        if items is not None:
            for index, item in enumerate(value):
                self._check(item, items, _at(place, index))
        if schema.get("uniqueItems"):
            seen = set()
            for index, item in enumerate(value):
                key = json.dumps(item, sort_keys=True)
                if key in seen:
                    raise SchemaMismatch(_at(place, index), "a repeated item (the items must differ)")
                seen.add(key)
