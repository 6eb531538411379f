"""Recall probes: does a model still answer from what a policy kept? For each policy, the final prompt
the policy sends (plus the question) goes to a chat model the user runs, and each answer is scored:

* **hit**: the answer holds the expected value;
* **wrong**: the answer holds a value of the expected one's shape that is not it (``pay-shard-3``
  for ``pay-shard-7``): a confident wrong answer, the worst outcome, told apart from
* **miss**: neither (a refusal, "I don't know", an answer about something else).

A control row asks the same question of the fact alone (the message of the log that first holds
it), to tell a model that cannot answer from a policy that lost the fact. Sending is the caller's
(``send``): this module builds the requests and scores the answers, and does no I/O itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tokprof.analyses.retention import carries, main_calls, parse_fact, texts
from tokprof.analyses.whatif import PromptCounter
from tokprof.models.base import ChatModel
from tokprof.trace import Call, Trace
from tokprof.transforms.policies import Full, Policy, apply

CONTROL = "control (the fact alone)"
NO_CONTROL = (
    "no message of the log holds the expected value: there is no control row, and a hit cannot be told from a guess"
)
OUTCOMES = ("hit", "wrong", "miss", "error")


@dataclass(frozen=True)
class ProbeRequest:
    """One prompt to send: the policy's final prompt and the question, as a Chat Completions body."""

    policy: str
    messages: tuple[dict, ...]
    tools: tuple[dict, ...] | None
    prompt_tokens: int  # the policy's final prompt with the question, counted by the model that counts


@dataclass(frozen=True)
class Answer:
    outcome: str  # hit, wrong, miss or error
    text: str  # the answer (or the error), shortened


@dataclass(frozen=True)
class ProbeResult:
    policy: str
    prompt_tokens: int
    answers: tuple[Answer, ...]

    def count(self, outcome: str) -> int:
        return sum(a.outcome == outcome for a in self.answers)

    def to_dict(self) -> dict:
        return {
            "policy": self.policy,
            "prompt_tokens": self.prompt_tokens,
            "trials": len(self.answers),
            **{outcome: self.count(outcome) for outcome in OUTCOMES},
            "answers": [{"outcome": a.outcome, "text": a.text} for a in self.answers],
        }


@dataclass
class ProbeReport:
    """Per policy (and the control row, first), how the model answered (``tokprof probe``'s JSON)."""

    question: str
    expect: str
    endpoint: str
    model: str | None
    trials: int
    results: list[ProbeResult] = field(default_factory=list)
    dry_run: bool = False
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "kind": "probe",
            "question": self.question,
            "expect": self.expect,
            "endpoint": self.endpoint,
            "model": self.model,
            "trials": self.trials,
            "dry_run": self.dry_run,
            "results": [r.to_dict() for r in self.results],
            "notes": list(self.notes),
        }


def shape_of(expect: str) -> re.Pattern[str] | None:
    """A pattern for values shaped like the expected one: its runs of digits as any digits, its long
    runs of letters as any letters, its separators and short words as they are (``pay-shard-7`` ->
    ``pay-<letters>-<digits>``). None for a value of one run (``7``, ``Bob``): any number or word
    would be "of its shape", so a wrong answer cannot be told from a miss."""
    runs = re.findall(r"[A-Za-z]+|\d+|[^A-Za-z\d]+", expect)
    if len(runs) < 2:
        return None
    parts = []
    for run in runs:
        if run.isdigit():
            parts.append(r"\d+")
        elif run.isalpha():
            parts.append(r"[A-Za-z]+" if len(run) > 3 else re.escape(run))
        else:
            parts.append(re.escape(run))
    return re.compile(r"(?<![\w-])" + "".join(parts) + r"(?![\w-])", re.I)


def _whole(value: str) -> re.Pattern[str]:
    """The value as a whole word: ``pay-shard-7`` is not in ``pay-shard-71``."""
    return re.compile(r"(?<![\w-])" + re.escape(value) + r"(?![\w-])", re.I)


def score(answer: str, expect: str) -> str:
    """hit (the value, whole), wrong (another value of its shape) or miss."""
    if _whole(expect).search(answer):
        return "hit"
    shape = shape_of(expect)
    if shape is not None and shape.search(answer):
        return "wrong"
    return "miss"


def _sendable(message: dict) -> dict:
    """A message as a Chat Completions body holds it (tool call arguments as JSON text)."""
    out = {k: v for k, v in message.items() if k in ("role", "content", "tool_calls", "tool_call_id", "name")}
    calls = []
    for call in message.get("tool_calls") or ():
        function = dict(call.get("function") or {})
        if not isinstance(function.get("arguments"), str):
            function["arguments"] = json.dumps(function.get("arguments") or {}, ensure_ascii=False)
        calls.append({"id": call.get("id", ""), "type": "function", "function": function})
    if calls:
        out["tool_calls"] = calls
    return out


def _with_question(call: Call, question: str) -> list[dict]:
    """The policy's final prompt and the question. The log's own answer to that prompt is left out:
    it was written with the whole history, and would carry back what the policy dropped."""
    return [*call.messages, {"role": "user", "content": question}]


def requests(
    trace: Trace, model: ChatModel, policies: Sequence[Policy], question: str, expect: str, window: int | None = None
) -> list[ProbeRequest]:
    """The control request, then each policy's final prompt with the question, counted."""
    counter = PromptCounter(model)
    out = []
    fact = parse_fact(expect)
    holder = next((m for c in main_calls(trace) for m in c.messages if carries([m], fact)), None)
    if holder is not None:  # the fact alone: the text of the log's first message that holds it
        context = "\n".join(t for t in texts(holder.get("content")) if t) or json.dumps(holder, ensure_ascii=False)
        alone = [{"role": "user", "content": f"{context}\n\n{question}"}]
        control = Call(index=0, messages=alone, tools=None)
        out.append(ProbeRequest(CONTROL, tuple(alone), None, counter.prompt(alone, control)))
    for policy in [Full(), *(p for p in policies if not isinstance(p, Full))]:
        replayed = main_calls(apply(trace, policy, counter, window))
        if not replayed:
            continue
        last = replayed[-1]
        messages = _with_question(last, question)
        asked = Call(index=last.index, messages=messages, tools=last.tools, day=last.day)
        out.append(
            ProbeRequest(
                policy.spec,
                tuple(_sendable(m) for m in messages),
                tuple(last.tools) if last.tools else None,
                counter.prompt(messages, asked),
            )
        )
    return out


def run(report: ProbeReport, batch: Sequence[ProbeRequest], send: Callable[[ProbeRequest], str]) -> ProbeReport:
    """Each request sent ``report.trials`` times through ``send`` (which raises for a failed request,
    after its own retries), each answer scored."""
    for request in batch:
        answers = []
        for _ in range(report.trials):
            if report.dry_run:
                continue
            try:
                text = send(request)
            except Exception as exc:  # one failed request is an answer of its own, not the end of the run
                answers.append(Answer("error", str(exc)[:200]))
                continue
            answers.append(Answer(score(text, report.expect), " ".join(text.split())[:200]))
        report.results.append(ProbeResult(request.policy, request.prompt_tokens, tuple(answers)))
    return report
