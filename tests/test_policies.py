"""Context policies are self-describing plug-ins (#44.2): a policy is one class (name, parameters, parse,
apply, needs_counter) and one ``register``; the parsing, the syntax the help and the error messages list,
and the docs' table derive from the registry. A policy defined here, outside the package, replays a log
through whatif like the built-in ones."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from typing import ClassVar

import pytest

from tokprof.names import policy_names
from conftest import FIXTURES, ROOT, CHATML, tiny_model
from test_whatif import conversation, make_trace, plain_count, trace_of
from tokprof.analyses.whatif import whatif
from tokprof.frontends.cli import main
from tokprof.transforms import policies as P

OVER = "[dropped: over budget]"


@dataclass(frozen=True)
class Budget(P.Policy):
    """Once a prompt would exceed T tokens, every tool result before its new messages is dropped."""

    name: ClassVar[str] = "budget"
    parameters: ClassVar[tuple[P.Parameter, ...]] = (P.Parameter("T", "tokens", minimum=1),)
    needs_counter: ClassVar[bool] = True
    tokens: int = 100

    def describe(self) -> str:
        return f"tool results dropped once a prompt exceeds {self.tokens:,} tokens"

    def apply(self, step: P.Step) -> list[dict]:
        if step.count(step.messages) <= self.tokens:
            return step.messages
        return [
            step.rewrite(m, "budget", lambda: OVER) if i < step.fresh and m["role"] == "tool" else m
            for i, m in enumerate(step.messages)
        ]


@pytest.fixture
def budget():
    P.register(Budget)
    yield Budget
    P.unregister("budget")


def test_a_policy_defined_outside_the_package_parses_and_is_listed(budget):
    assert P.parse_policy("budget:120") == Budget(120) and P.parse_policy("budget").spec == "budget:100"
    assert "budget:T" in P.syntax() and "budget:T" in policy_names()
    with pytest.raises(P.PolicyError, match=r"T must be at least 1.*budget:T"):
        P.parse_policy("budget:0")
    with pytest.raises(P.PolicyError, match="budget takes at most 1 parameter"):
        P.parse_policy("budget:1:2")
    with pytest.raises(P.PolicyError, match=r"did you mean budget\?"):
        P.parse_policy("budgte:5")
    with pytest.raises(ValueError, match="already registered"):
        P.register(type("Other", (Budget,), {}))  # another class under the same name
    P.unregister("budget")
    with pytest.raises(P.PolicyError, match="unknown policy"):
        P.parse_policy("budget:5")
    assert "budget:T" not in policy_names()


def test_a_policy_defined_here_replays_through_whatif(budget):
    model = tiny_model(CHATML)
    model.context_window = 4000
    trace = make_trace(trace_of(conversation(turns=3, calls_per_turn=3)))
    report = whatif(trace, model, [P.parse_policy("budget:150"), P.parse_policy("budget:1000000")])
    full, tight, loose = report.policies
    assert tight.policy == "budget:150" and tight.description == "tool results dropped once a prompt exceeds 150 tokens"
    assert tight.changed_calls > 0 and tight.saving > 0 and loose.changed_calls == 0 and loose.saving == 0
    replayed = P.apply(trace, P.parse_policy("budget:150"), counter=_Counter(model)).calls
    for call, counted in zip(replayed, tight.calls):  # every count a plain render of the policy's prompt
        assert counted.total == plain_count(model, call)
        assert (OVER in json.dumps(call.messages)) == counted.changed
    with pytest.raises(P.PolicyError, match="needs token counts"):
        P.apply(trace, Budget(150))


class _Counter:
    def __init__(self, model):
        self.model = model

    def prompt(self, messages, call):
        fmt = self.model.prompt_format
        text = fmt.render(fmt.prepare(messages, fmt.shapes[0]), call.tools, add_generation_prompt=True, day=call.day)
        return self.model.counter.count(text)

    def text(self, text):
        return self.model.counter.count(text)


def test_the_command_line_runs_a_registered_policy(budget, model_dir, capsys):
    log = FIXTURES / "good_transcript.json"
    assert main(["whatif", str(log), "--model", str(model_dir), "-p", "budget:20", "-f", "json", "--no-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [p["policy"] for p in doc["policies"]] == ["full", "budget:20"]
    assert main(["whatif", str(log), "--model", str(model_dir), "-p", "budgte:20", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "did you mean budget?" in err and "budget:T" in err


def test_whatif_help_lists_the_registry():
    """The help is made from the registry: a policy registered before the command line is built is in it."""
    code = (
        "import sys\n"
        "sys.path.insert(0, 'tests')\n"
        "from test_policies import Budget\n"
        "from tokprof.transforms.policies import register, syntax\n"
        "register(Budget)\n"
        "from tokprof.frontends.cli import main\n"
        "print('SYNTAX', *syntax())\n"
        "main(['whatif', '--help'])\n"
    )
    env = {"COLUMNS": "400", "PATH": "/usr/bin:/bin", "TERM": "dumb", "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env, timeout=120, check=False
    )
    out = done.stdout
    names = out.split("SYNTAX", 1)[1].splitlines()[0].split()
    assert "budget:T" in names and names[0] == "full"
    flat = " ".join(out.split())
    assert ", ".join(names) in flat, flat


def test_the_docs_table_lists_the_registry():
    """docs/whatif.md's table of policies has one row per registered policy, in the registry's order,
    each as its syntax, with the defaults of its parameters."""
    text = (ROOT / "docs" / "whatif.md").read_text(encoding="utf-8")
    table = text[text.index("| policy | what each call's prompt carries |") :].split("\n\n")[0].splitlines()[2:]
    rows = [re.match(r"\| `([^`]+)`( \(default ([^)]*)\))? \|", row) for row in table]
    assert all(rows), table
    assert [m.group(1) for m in rows] == list(P.syntax())
    for match, cls in zip(rows, P.registered()):
        defaults = [getattr(cls, p.field) for p in cls.parameters]
        for value in defaults:  # each default as the docs write it: 20, 32000, 100000:3, S 2,000
            shown = f"{value:g}" if isinstance(value, float) else str(value)
            assert shown in (match.group(3) or "").replace(",", ""), (match.group(0), shown)


def test_every_registered_policy_round_trips_its_spec():
    for cls in P.registered():
        policy = P.parse_policy(cls.name)
        assert isinstance(policy, cls) and P.parse_policy(policy.spec) == policy
        assert policy.describe() and isinstance(cls.needs_counter, bool)
