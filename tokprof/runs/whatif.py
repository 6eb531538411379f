"""A log replayed under context policies (what-if), the facts to look for in it, and a probe asking a
model the user runs whether a policy's prompt still holds a fact."""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from tokprof.analyses.standard import user_prices
from tokprof.analyses.tools import attach_catalogue
from tokprof.attribution.attributor import RenderError
from tokprof.base.errors import InputError, TokprofError
from tokprof.models.base import ChatModel
from tokprof.runs.arguments import PathLike
from tokprof.runs.inputs import NOTHING_RECORDED, read_log
from tokprof.runs.model import Model, model_for_trace, named_model
from tokprof.runs.options import DEFAULTS, Options
from tokprof.runs.profile import calls_of, one_run
from tokprof.runs.progress import progress_bar
from tokprof.trace import Call, Note, Trace
from tokprof.transforms.stream import HeldCalls, LogCalls, fitted

if TYPE_CHECKING:
    from tokprof.analyses.probe import ProbeReport
    from tokprof.analyses.retention import Fact
    from tokprof.transforms.policies import Policy
    from tokprof.analyses.whatif import WhatIfReport


@one_run
def whatif(
    log: PathLike | Trace,
    policies: Sequence[str] | None = None,
    options: Options = DEFAULTS,
    *,
    window: int | None = None,
    facts: Sequence[str] = (),
    facts_file: PathLike | None = None,
) -> "WhatIfReport":
    """Replay a log under context policies (``window:20``, ``compact:80``, …; None: the default set),
    every prompt counted exactly like a profile's, ``full`` (the log as it is) first. ``window`` is
    the context window in tokens (default: the model's). ``facts`` (texts, or ``re:`` regular
    expressions) are looked for in every prompt: each policy says which it keeps
    (``PolicyResult.facts``); ``facts_file`` adds a file's, one per line (blank lines and lines
    starting with ``#`` left out). Raises :class:`TokprofError` for a policy that does not parse (the
    message lists the policies)."""
    from tokprof.analyses.retention import parse_fact, read_facts
    from tokprof.transforms.policies import DEFAULT_POLICIES, parse_policies

    if isinstance(policies, str):
        policies = [policies]
    texts = [facts] if isinstance(facts, str) else list(facts)
    if facts_file is not None:
        texts += read_facts(os.fspath(facts_file))
    wanted = [parse_fact(text) for text in texts]
    parsed = parse_policies(list(DEFAULT_POLICIES if policies is None else policies))
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window <= 0):
        raise TokprofError(f"window: expected a positive number of tokens, found {window!r}")
    source = calls_of(log, options)
    return _replayed(source, options.model, options, parsed, policies is None, window, wanted)


def _replayed(
    source: LogCalls | HeldCalls,
    model: str | Model | None,
    options: Options,
    parsed: list[Policy],
    default: bool,
    window: int | None,
    wanted: Sequence[Fact],
) -> "WhatIfReport":
    """The what-if of a log's calls read as streams, one per policy (the file read again: no trace
    held). ``default``: the policies are the default set (``compact`` is left out when the context
    window is not known, found once the log's calls are read)."""
    from tokprof.analyses.whatif import whatif as _whatif
    from tokprof.profiling import light_call
    from tokprof.transforms.policies import Compact

    stream = source.calls()
    first = next(stream, None)
    if isinstance(model, Model):
        chat = model.chat
    else:
        chat = named_model(model, options.chat_template, [source.header.model, first.model if first else None])
    length = getattr(chat, "tool_call_id_length", None)
    light: list[Call] = []  # what the choice of policies reads of each call (no prompt)
    recorded = [first is None]
    notes: list[Note] = []

    def log_calls() -> Iterator[Call]:
        for call in itertools.chain([first] if first is not None else [], stream):
            light.append(light_call(call, None))
            recorded[0] = recorded[0] or bool(
                call.messages or call.tools or call.reported is not None or call.unrendered
            )
            yield call

    def shown(calls: Iterable[Call]) -> Iterator[Call]:  # a stream's bytes on the progress bar
        done = 0
        for call in calls:
            yield call
            if size:
                read = source.progress[0]
                advance(max(0, read - done))
                done = read

    streams = [fitted(log_calls(), length, source.header)]

    def calls() -> Iterable[Call]:
        return shown(streams.pop() if streams else fitted(source.calls(), length, None))

    def policies() -> list[Policy]:
        if not recorded[0]:
            raise InputError(source.path, None, NOTHING_RECORDED.format(what="to replay"))
        if not default or window is not None or _window_of(source.header, light, chat) is not None:
            return parsed
        left = [p.spec for p in parsed if isinstance(p, Compact)]
        notes.append(
            Note(
                "window-unknown",
                f"the model's context window is not known: {', '.join(left)} of the "
                "default policies is left out, and no call is counted over the window (give --window N)",
            )
        )
        return [p for p in parsed if not isinstance(p, Compact)]

    size = source.progress[1]
    total = size * len(parsed) if size else (source.size if isinstance(source, HeldCalls) else 0) * len(parsed)
    with progress_bar(options.progress, total, "replaying calls", in_bytes=bool(size)) as advance:

        def each() -> None:
            if not size:
                advance()

        try:
            report = _whatif(
                source.header,
                chat,
                policies,
                window=window,
                on_call=each,
                prices=user_prices(options.prices),
                facts=wanted,
                calls=calls,
            )
        except RenderError as exc:
            raise InputError(source.path, None, str(exc)) from None
    if not isinstance(model, Model):
        final = named_model(model, options.chat_template, [source.header.model, *(c.model for c in light)])
        if (final.name, final.exact, final.method) != (chat.name, chat.exact, chat.method):
            # the log's other model names choose another model: the log replayed again with it
            return _replayed(source, Model(final), options, parsed, default, window, wanted)
        chat = final
        report.model = dataclasses.replace(report.model, selected=final.selected)
        if report.baseline is not None:
            report.baseline.model = dataclasses.replace(report.baseline.model, selected=final.selected)
    if report.baseline is not None and report.log is not None:  # the profile of full is the log's, with its catalogue
        report.baseline = attach_catalogue(report.baseline, report.log, chat)
    report.warnings += notes
    return report


def suggest_facts(log: PathLike | Trace, options: Options = DEFAULTS) -> list[str]:
    """Candidate facts from the user's own messages in a log (standing instructions, identifiers
    stated once), for :func:`whatif`'s ``facts``: suggestions, for a person to choose from."""
    from tokprof.analyses.retention import suggest_facts as suggest

    trace = log if isinstance(log, Trace) else read_log(log, options)
    return suggest(trace)


def _window_of(trace: Trace, calls: Iterable[Call], chat: ChatModel) -> int | None:
    """The context window a what-if measures against when none is given: the model's, for an estimate
    the window the log's agent ran the model with when known (as a profile's model says). ``calls``:
    the trace's (or their light copies)."""
    from tokprof.profiling import log_window

    if not chat.exact:
        return log_window(trace, calls).window or chat.context_window
    return chat.context_window


def probe(
    log: PathLike | Trace,
    question: str,
    expect: str,
    endpoint: str,
    policies: Sequence[str] | None = None,
    options: Options = DEFAULTS,
    *,
    trials: int = 1,
    endpoint_model: str | None = None,
    api_key: str | None = None,
    temperature: float = 0.0,
    timeout: float = 60.0,
    retries: int = 2,
    max_requests: int = 50,
    dry_run: bool = False,
    announce: Callable[[int, int], None] | None = None,
    window: int | None = None,
) -> "ProbeReport":
    """Ask a chat model the user runs (an OpenAI-compatible ``endpoint``) ``question`` after each
    policy's final prompt, and after the fact alone (the control), ``trials`` times each, scoring each
    answer against ``expect``: hit, confident wrong answer (a value of the same shape), miss, or error.
    ``announce(requests, prompt_tokens)`` is called before anything is sent; more than
    ``max_requests`` requests is an error before sending; ``dry_run`` builds and counts the requests
    and sends nothing. ``options.model`` is the model that counts the prompts; ``endpoint_model`` the
    model name sent to the endpoint."""
    from tokprof.analyses.probe import CONTROL, NO_CONTROL, ProbeReport, requests, run
    from tokprof.base.chat_client import ChatClient
    from tokprof.transforms.policies import DEFAULT_POLICIES, parse_policies

    for name, value in (("question", question), ("expect", expect), ("endpoint", endpoint)):
        if not isinstance(value, str) or not value.strip():
            raise TokprofError(f"{name}: expected a text, found {value!r}")
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise TokprofError(f"trials: expected a positive number, found {trials!r}")
    if expect.startswith("re:"):
        raise TokprofError("expect: the value a right answer holds, as text (a pattern cannot be scored)")
    if isinstance(policies, str):
        policies = [policies]
    parsed = parse_policies(list(DEFAULT_POLICIES if policies is None else policies))
    trace = log if isinstance(log, Trace) else read_log(log, options)
    chat = model_for_trace(trace, options.model, options.chat_template)
    from tokprof.transforms import fit

    trace = fit(trace, chat)
    batch = requests(trace, chat, parsed, question, expect, window or _window_of(trace, trace.calls, chat))
    count = len(batch) * trials
    if count > max_requests:
        raise TokprofError(
            f"{count} requests ({len(batch)} prompts x {trials} trials) is more than the budget of "
            f"{max_requests}: raise it with --max-requests, or ask for fewer policies or trials"
        )
    if announce is not None:
        announce(count, sum(r.prompt_tokens for r in batch) * trials)
    client = ChatClient(endpoint, endpoint_model, api_key, temperature, timeout, retries)
    report = ProbeReport(question, expect, endpoint, endpoint_model, trials, dry_run=dry_run)
    if not batch or batch[0].policy != CONTROL:
        report.notes.append(NO_CONTROL)
    return run(report, batch, lambda request: client.complete(request.messages, request.tools))
