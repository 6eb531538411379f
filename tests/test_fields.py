"""The shared field checks (formats/fields.py): each returns the value or raises one InputError that
names the file, the place and what was found."""

from __future__ import annotations

import pytest

from tokprof.base.errors import InputError
from tokprof.formats.fields import (
    check_text,
    expect_list,
    expect_object,
    nonempty_string,
    object_or_string,
    objects,
    optional_object,
    optional_string,
    string,
)


def message(check, *args) -> str:
    with pytest.raises(InputError) as caught:
        check("log.json", "line 3: x", *args)
    text = str(caught.value)
    assert len(text.splitlines()) == 1
    return text


def test_valid_values_come_back():
    assert expect_object("f", "w", {"a": 1}) == {"a": 1}
    assert expect_list("f", "w", [1]) == [1]
    assert objects("f", "w", [{}, {"b": 2}]) == [("w[0]", {}), ("w[1]", {"b": 2})]
    assert string("f", "w", "") == ""
    assert nonempty_string("f", "w", "name") == "name"
    assert optional_string("f", "w", None) is None
    assert optional_object("f", "w", None) is None
    assert optional_object("f", "w", {}) == {}
    assert object_or_string("f", "w", "{}") == "{}"
    assert object_or_string("f", "w", {"a": 1}) == {"a": 1}


@pytest.mark.parametrize(
    "check, value, expected",
    [
        (expect_object, [], "expected an object, found a list"),
        (expect_list, {}, "expected a list, found an object"),
        (string, None, "missing: expected a string"),
        (string, 3, "expected a string, found a number"),
        (nonempty_string, "", "empty: expected a non-empty string"),
        (nonempty_string, None, "missing: expected a string"),
        (optional_string, True, "expected a string or null, found a boolean"),
        (optional_object, "x", "expected an object or null, found a string"),
        (object_or_string, [1], "expected an object or a string, found a list"),
        (string, "a\ud800b", "invalid Unicode (a lone surrogate at character 1)"),
        (optional_string, "\udfff", "invalid Unicode (a lone surrogate at character 0)"),
    ],
)
def test_a_wrong_value_is_one_line_naming_the_file_the_place_and_what_was_found(check, value, expected):
    assert message(check, value) == f"log.json: line 3: x: {expected}"


def test_objects_names_the_item_that_is_not_an_object():
    assert (
        message(objects, [{}, 5], "a part object") == "log.json: line 3: x[1]: expected a part object, found a number"
    )


def test_check_text_is_the_one_neutral_uses():
    from tokprof.formats import neutral

    assert neutral.check_text is check_text
