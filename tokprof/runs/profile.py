"""One log profiled: read, fitted to the model, every call attributed, the analyses a profile carries
attached; a saved profile loaded; the user's prices."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from tokprof.pricing.cost import UserPrice
from tokprof.analyses.standard import PricesArg, attach_analyses, user_prices
from tokprof.attribution.attributor import RenderError
from tokprof.base.errors import InputError, TokprofError
from tokprof.models.base import ChatModel
from tokprof.profiling import Profile, profile_calls
from tokprof.runs.arguments import PathLike, Progress
from tokprof.runs.inputs import log_calls
from tokprof.runs.model import Model, named_model
from tokprof.runs.options import DEFAULTS, Options
from tokprof.runs.progress import progress_bar
from tokprof.trace import Call, Trace
from tokprof.transforms.stream import HeldCalls, LogCalls, fitted
from tokprof.transforms.config import Config

T = TypeVar("T")


def configured_prices(config: Config, specs: Sequence[str] = ()) -> dict[str, UserPrice]:
    """The user's rates by model name: a configuration's ``prices``, then rates written as ``--price``
    takes them (``[MODEL=]IN/OUT[/CACHE_READ[/CACHE_WRITE[/CACHE_WRITE_1H]]]``) over them."""
    where = f"{config.path} [prices]" if config.path else "the configuration"
    out = {name: UserPrice(rates, where) for name, rates in config.prices.items()}
    out.update(user_prices(list(specs)))
    return out


def one_run(function: Callable[..., T]) -> Callable[..., T]:
    """The renders of one call of ``function`` are one run: their time together is bounded
    (``TOKPROF_TEMPLATE_RUN_TIMEOUT``, tokprof.models.template.Limits)."""
    from tokprof.models.template import template_run

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> T:
        with template_run():
            return function(*args, **kwargs)

    return run


def finish_profile(result: Profile, trace: Trace, chat: ChatModel | None, prices: PricesArg) -> Profile:
    """The analyses a profile carries: the tool catalogue (with ``chat``), the cost and the computed cache."""
    return attach_analyses(result, trace, chat, user_prices(prices))


def calls_of(log: PathLike | Trace, options: Options) -> LogCalls | HeldCalls:
    """A log's calls to read as streams (:mod:`tokprof.transforms.stream`): a file read by its
    format's reader, with what ``options`` supply; or a trace held whole (from :func:`read_log`)."""
    if isinstance(log, Trace):
        return HeldCalls(log)
    return log_calls(log, options)


@one_run
def run_profile(
    source: LogCalls | HeldCalls,
    model: str | Model | None,
    chat_template: PathLike | None,
    progress: Progress = False,
    prices: PricesArg = None,
    advice: bool = False,
) -> Profile:
    """The profile of a log's calls, each call's prompt let go after its pass (but the last of each
    thread): one stream for the profile; with ``advice`` the profile is the baseline of the replays of
    the tool-result policies, each a stream more (the file read again), and of the actions they price.
    ``model`` None: chosen from the log's model names, the first call's, then all of them (another
    choice profiles the log again with it)."""
    from tokprof.analyses.actions import PolicyPick, advise
    from tokprof.analyses.whatif import WhatIfReport, whatif as replay
    from tokprof.transforms.policies import Policy, parse_policies

    stream = source.calls()
    first = next(stream, None)
    if isinstance(model, Model):
        chat = model.chat
    else:
        chat = named_model(model, chat_template, [source.header.model, first.model if first else None])
    length = getattr(chat, "tool_call_id_length", None)
    names: list[str | None] = []
    pick = PolicyPick()
    path = source.path
    total, in_bytes = _progress_total(source)
    report: WhatIfReport | None = None
    with progress_bar(progress, total, "profiling calls", in_bytes=in_bytes) as advance:
        done = [0]

        def step() -> None:
            if in_bytes:
                read = source.progress[0]
                advance(max(0, read - done[0]))
                done[0] = read
            else:
                advance()

        read = [False]  # whether the first stream was read to its end

        def log_calls() -> Iterator[Call]:  # the first stream: the profile's (or the baseline's)
            for call in itertools.chain([first] if first is not None else [], stream):
                names.append(call.model)
                pick.observe(call)
                yield call
                step()
            read[0] = True

        def again() -> Iterator[Call]:  # every later stream: the file read again
            return fitted(source.calls(), length, None)

        streams = [fitted(log_calls(), length, source.header)]

        def calls() -> Iterable[Call]:
            return streams.pop() if streams else again()

        def policies() -> list[Policy]:
            return parse_policies(list(pick.policies()))

        try:
            if advice:  # the profile is the replay's baseline (tokprof.analyses.actions)
                report = replay(source.header, chat, policies, prices=user_prices(prices), calls=calls)
                assert report.baseline is not None and report.log is not None
                result, light = report.baseline, report.log
            else:
                result, light = profile_calls(calls(), source.header, chat)
        except RenderError as exc:
            if not advice or not read[0]:
                raise InputError(path, None, str(exc)) from None
            report = None  # a prompt the template cannot render once cut: the profile, without that action
            try:
                result, light = profile_calls(again(), source.header, chat)
            except RenderError as error:
                raise InputError(path, None, str(error)) from None
    if not isinstance(model, Model):
        final = named_model(model, chat_template, [source.header.model, *names])
        if (final.name, final.exact, final.method) != (chat.name, chat.exact, chat.method):
            # the log's other model names choose another model: the log profiled again with it
            return run_profile(source, Model(final), chat_template, False, prices, advice)
        result.model = dataclasses.replace(result.model, selected=final.selected)
        chat = final
    result = finish_profile(result, light, chat, prices)
    if advice:
        replayed = report if report is not None and len(report.policies) > 1 else None
        result.actions = advise(result, again, replayed, pick.tools)
    return result


def _progress_total(source: LogCalls | HeldCalls) -> tuple[int, bool]:
    """The steps of a profile's progress: the file's bytes (the first read's), or a trace's calls."""
    size = source.progress[1]
    if size:
        return size, True
    return (source.size if isinstance(source, HeldCalls) else 0), False


def profile(log: PathLike | Trace, options: Options = DEFAULTS) -> Profile:
    """Profile a log (a path, or a trace from :func:`read_log`) as ``options`` say: every call's
    prompt in its buckets, the run's totals, its main tool catalogue, every call's cost and what a
    prefix cache could reuse (with ``options.advice``, what to change too)."""
    from tokprof.models.template import template_run

    with template_run():
        source = calls_of(log, options)
        return run_profile(
            source, options.model, options.chat_template, options.progress, options.prices, options.advice
        )


def saved_profile(path: PathLike) -> Profile | None:
    """The profile saved at ``path`` (``Profile.save``, ``tokprof profile -f json``), or None when the
    file is not one (a log). A file that says it is a profile and is not a valid one raises a
    :class:`TokprofError` naming the file and the field."""
    from tokprof.profiling import ProfileFileError

    name = os.fspath(path)
    if not Profile.sniff(name):
        return None
    try:
        return Profile.load(name)
    except ProfileFileError as exc:
        raise TokprofError(f"{name}: {exc}") from None
    except (OSError, ValueError) as exc:
        raise TokprofError(f"{name}: cannot read the saved profile: {getattr(exc, 'strerror', None) or exc}") from None
