"""One log profiled: read, fitted to the model, every call attributed, the analyses a profile carries
attached; a saved profile loaded; the user's prices."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from tokprof.pricing.cost import UserPrice
from tokprof.analyses.standard import PricesArg, attach_analyses, user_prices
from tokprof.attribution.attributor import RenderError
from tokprof.base.errors import InputError, TokprofError
from tokprof.models.base import ChatModel
from tokprof.profiling import Profile, profile_calls, profile_trace
from tokprof.runs.arguments import PathLike, Progress
from tokprof.runs.inputs import read_log
from tokprof.runs.model import model_for_trace
from tokprof.runs.options import DEFAULTS, Options
from tokprof.runs.progress import progress_bar
from tokprof.trace import Call, Note, Trace
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


@one_run
def run_profile_trace(
    trace: Trace, chat: ChatModel, progress: Progress = False, prices: PricesArg = None, advice: bool = False
) -> Profile:
    from tokprof.transforms import fit

    trace = fit(trace, chat)
    if advice:  # the profile is the replay's baseline (tokprof.analyses.actions)
        return _advised(trace, chat, progress, prices)
    with progress_bar(progress, len(trace.calls), "profiling calls") as advance:
        try:
            result = profile_trace(trace, chat, on_call=lambda _: advance())
        except RenderError as exc:
            raise InputError(trace.path, None, str(exc)) from None
    return finish_profile(result, trace, chat, prices)


def _advised(trace: Trace, chat: ChatModel, progress: Progress, prices: PricesArg) -> Profile:
    """A fitted trace's profile with what to change: the log replayed under the tool-result policies
    (whose baseline is the profile itself, made once), and the actions they and the profile price."""
    from tokprof.analyses.actions import advise, replayed_policies
    from tokprof.analyses.whatif import whatif as replay
    from tokprof.transforms.policies import parse_policies

    policies = parse_policies(list(replayed_policies(trace)))
    with progress_bar(progress, len(trace.calls) * (1 + len(policies)), "profiling and replaying calls") as advance:
        try:
            report = replay(trace, chat, policies, on_call=advance, prices=user_prices(prices))
        except RenderError as exc:
            if not policies:
                raise InputError(trace.path, None, str(exc)) from None
            policies = []  # a prompt the template cannot render once cut: the profile, without that action
            try:
                report = replay(trace, chat, policies, prices=user_prices(prices))
            except RenderError as again:
                raise InputError(trace.path, None, str(again)) from None
    assert report.baseline is not None
    result = finish_profile(report.baseline, trace, chat, prices)
    result.actions = advise(result, trace, report if policies else None)
    return result


@one_run
def run_profile_calls(
    calls: Iterable[Call],
    header: Trace,
    chat: ChatModel,
    prices: PricesArg = None,
    settle: Callable[[], ChatModel] | None = None,
) -> Profile:
    """:func:`run_profile_trace` of a stream of calls (each yielded once, in log order; ``header``: the
    trace's other fields, its notes, model, session and compactions read once the stream is done,
    and not changed), keeping no prompt
    after its call's pass (:func:`tokprof.profiling.profile_calls`): the tool-call ids are fitted call
    by call (:func:`tokprof.transforms.tool_ids.fitter`)."""
    from tokprof.transforms.tool_ids import fitter

    work = dataclasses.replace(header, calls=[])
    fitting = fitter(chat)

    def fitted() -> Iterator[Call]:
        for call in calls:
            yield fitting.fit(call) if fitting is not None else call
        work.notes = [Note(n.code, n.message, list(n.places), list(n.calls)) for n in header.notes]
        work.model, work.session, work.compactions = header.model, header.session, header.compactions
        if fitting is not None:
            fitting.note(work)

    settled = [chat]

    def settled_model() -> ChatModel:
        settled[0] = settle() if settle is not None else chat
        return settled[0]

    try:
        result, light = profile_calls(fitted(), work, chat, settle=settled_model)
    except RenderError as exc:
        raise InputError(header.path, None, str(exc)) from None
    return finish_profile(result, light, settled[0], prices)


def profile(log: PathLike | Trace, options: Options = DEFAULTS) -> Profile:
    """Profile a log (a path, or a trace from :func:`read_log`) as ``options`` say: every call's
    prompt in its buckets, the run's totals, its main tool catalogue, every call's cost and what a
    prefix cache could reuse (with ``options.advice``, what to change too)."""
    from tokprof.models.template import template_run

    with template_run():
        trace = log if isinstance(log, Trace) else read_log(log, options)
        chat = model_for_trace(trace, options.model, options.chat_template)
        return run_profile_trace(trace, chat, options.progress, options.prices, options.advice)


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
