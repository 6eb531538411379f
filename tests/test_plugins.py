"""One place to add each kind of thing: a log format, a model family and a renderer defined here, outside the
package, and used by the command line with nothing of tokprof edited (a policy: tests/test_policies.py).
Each is declared once (a ``LogFormat``, a ``ModelSpec``, a renderer class) and added to its registry."""

from __future__ import annotations

import json
from collections.abc import Iterable

import pytest

from conftest import ROOT, tiny_model
from tokprof.formats import registry as formats
from tokprof.formats.jsonfile import Document
from tokprof.formats.reader import LogFormat, Reader, Record
from tokprof.frontends.cli import main
from tokprof.models import registry as models
from tokprof.models.registry import ModelSpec
from tokprof import render
from tokprof.trace import Call, Trace


class QuestionsReader(Reader):
    """A made-up log: one JSON line per question ({"ask": ...}), each a call whose prompt is every
    question so far, asked with one system line."""

    def __init__(self, path: str, doc: Document | None) -> None:
        self.trace = Trace(path=path, format="questions")
        self.messages: list[dict] = [{"role": "system", "content": "You are a test bot ."}]

    def feed(self, record: Record) -> Iterable[Call]:
        self.messages = [*self.messages, {"role": "user", "content": record.value["ask"]}]
        yield Call(index=record.line or 0, messages=self.messages, tools=None, where=record.place)


def looks_like_questions(doc: Document) -> bool:
    return doc.lines is not None and any(isinstance(value, dict) and "ask" in value for _, value in doc.lines[:1])


QUESTIONS = LogFormat(
    name="questions",
    description="a test's JSONL of questions",
    kind="api",
    sniff=looks_like_questions,
    reader=QuestionsReader,
    records_what="prompts only",
)


@pytest.fixture
def questions(tmp_path):
    formats.add_format(QUESTIONS)
    models.register(ModelSpec("tiny-family", "a word-level test model", load=tiny_model))
    log = tmp_path / "questions.jsonl"
    log.write_text("".join(json.dumps({"ask": text}) + "\n" for text in ("a cat", "a dog is an animal")))
    yield log
    formats.remove_format("questions")
    models.unregister("tiny-family")


def test_a_format_and_a_model_family_defined_outside_the_package_profile_a_log(questions, capsys):
    assert "questions" in formats.names() and "tiny-family" in models.known_names()
    assert main(["profile", str(questions), "--model", "tiny-family", "-f", "json"]) == 0  # detected, not named
    doc = json.loads(capsys.readouterr().out)
    assert doc["source"]["format"] == "questions" and doc["model"]["name"] == "tiny"
    first, second = doc["calls"]
    assert 0 < first["total"] < second["total"]
    for call in doc["calls"]:
        assert sum(call["buckets"].values()) == call["total"] and min(call["buckets"].values()) >= 0


def test_a_format_added_leaves_the_shipped_names_alone():
    with pytest.raises(ValueError, match="ships with tokprof"):
        formats.add_format(LogFormat("codex", "another codex", "agent", looks_like_questions, QuestionsReader))
    assert "questions" not in formats.names()


class CountsRenderer:
    """A renderer defined outside the package: one line per side of a diff."""

    def render(self, result, options) -> str:
        return "".join(f"{side}: {getattr(result, side).path}\n" for side in ("a", "b"))


def test_a_renderer_defined_outside_the_package_renders_a_command(capsys):
    baseline = str(ROOT / "samples" / "tokprof-baseline.json")
    render.register("diff", "lines", CountsRenderer)
    try:
        assert "lines" in render.formats_for("diff")
        assert main(["diff", baseline, baseline, "-f", "lines"]) == 0
        assert capsys.readouterr().out == f"a: {baseline}\nb: {baseline}\n"
    finally:
        render.unregister("diff", "lines")
    assert "lines" not in render.formats_for("diff")
    assert main(["diff", baseline, baseline, "-f", "lines"]) == 2  # gone again: a usage error


def test_the_docs_format_table_is_the_declarations():
    """docs/formats.md's table of formats is made from the readers' declarations: a new format's row comes
    with its module (print it with ``python -c "from tokprof.formats.registry import docs_table;
    print(docs_table(), end='')"``)."""
    text = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    start = text.index("\n", text.index("<!-- The table below is made from")) + 1
    assert text[start : text.index("<!-- end of the generated table -->")] == formats.docs_table()
