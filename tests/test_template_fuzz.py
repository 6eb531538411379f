"""A fixed-seed fuzzer of chat templates (#33 item 6): the test suite's ChatML template with hostile
snippets put in at random places (string-making operations with huge sizes, doubling loops, random
choices, printed objects, deep nesting, long strings held together or written out whole). Each profile ends cleanly, exit 0 or 2 with one line, and
a profile that succeeds gives the same counts twice. Also: JSON reports never hold NaN."""

from __future__ import annotations

import math
import random

import pytest

from conftest import CHATML, FIXTURES
from tokprof.frontends.cli import main

LOG = FIXTURES / "good_transcript.json"
SNIPPETS = [
    "{{ 'x'.center(10**10) }}",
    "{{ '%*s' % (10**10, '') }}",
    "{{ '{:>{w}}'.format('', w=10**10) }}",
    "{{ messages|tojson(indent=10**9) }}",
    "{{ (messages|tojson).replace('', 'yy') }}",
    "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
    "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
    "{{ messages|random }}",
    "{{ cycler(1, 2) }}",
    "{{ namespace() }}",
    "{{ range }}",
    "{{ joiner() }}",
    "{{ 'x' * 10**9 }}",
    "{{ ('y' * 1000)|indent(10**8) }}",
    "{{ ' '.join(['z'] * 10**7) }}",
    "{{ 'a\tb'.expandtabs(10**9) }}",
    "{{ ('%s' * 1000) % ((messages|tojson),) * 1000 }}",
    "{{ " + "(" * 300 + "1" + ")" * 300 + " }}",
    # memory: each step under the output limit, together gigabytes (the whole render's memory limit)
    "{% set ns = namespace(l=[]) %}{% for i in range(40) %}{% set ns.l = ns.l + [('x' * 10**7) ~ i] %}{% endfor %}",
    "{% set s = 'x' * 10**6 %}{{ ([s] * 10**5)|tojson|length }}",
    "{% set s = 'x' * 10**6 %}{{ ([s] * 10**5)|string|length }}",
]


def mutant(n: int) -> tuple[str, str]:
    rng = random.Random(f"33-template-{n}")
    source = CHATML
    chosen = []
    for _ in range(rng.randint(1, 2)):
        snippet = rng.choice(SNIPPETS)
        at = rng.choice([0, len(source), source.find("{% for"), source.find("{% endfor")])
        source = source[:at] + snippet + source[at:]
        chosen.append(snippet[:50])
    return source, "; ".join(chosen)


@pytest.mark.parametrize("n", range(20))
def test_template_mutant(n, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TOKPROF_TEMPLATE_MAX_OUTPUT", str(16 * 1024 * 1024))
    monkeypatch.setenv("TOKPROF_TEMPLATE_RUN_TIMEOUT", "20")
    monkeypatch.setenv("TOKPROF_TEMPLATE_MAX_MEMORY", str(256 * 1024 * 1024))
    source, what = mutant(n)
    template = tmp_path / "t.jinja"
    template.write_text(source)
    args = ["profile", str(LOG), "--chat-template", str(template), "-f", "json", "--no-progress"]
    code = main(args)
    out, err = capsys.readouterr()
    assert code in (0, 2), (what, err)
    assert "Traceback" not in err, what
    if code == 2:
        assert err.startswith("tokprof: error: ") and err.count("\n") == 1, (what, err)
    else:
        assert main(args) == 0 and capsys.readouterr().out == out, f"{what}: counts differ from run to run"


def test_a_report_never_writes_nan():
    from tokprof.base.errors import TokprofError
    from tokprof.base.text import json_text

    assert json_text({"a": 1.5}) == '{\n  "a": 1.5\n}\n'
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(TokprofError, match="NaN or infinity"):
            json_text({"share": [bad]})
