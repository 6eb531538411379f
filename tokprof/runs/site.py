"""A dashboard over many sessions: a page per session, then the index."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from tokprof.attribution.attributor import RenderError
from tokprof.base.errors import TokprofError
from tokprof.runs.arguments import PathLike
from tokprof.runs.inputs import read_log
from tokprof.runs.options import DEFAULTS, Options
from tokprof.runs.profile import profile
from tokprof.runs.progress import progress_bar


def report_site(
    directory: PathLike | None,
    write: Callable[[str, str], None],
    options: Options = DEFAULTS,
    *,
    agent: str | None = None,
    window: int | None = None,
) -> int:
    """A dashboard over many sessions: the sessions of ``directory`` (found by content), or with
    ``directory`` None every session on this machine (of ``agent``'s), each profiled and its report
    page passed to ``write(name, html)`` as it is made (``session-0001.html``, ...), then the index
    (``index.html``): spend by day, project, agent and model, the costliest sessions, the cache's
    dollars lost by reason, the buckets over all sessions, and each session that could not be read,
    with why. Pages link to each other by name: write them into one folder. Returns the sessions'
    number."""
    from tokprof.analyses.periods import SessionSpend
    from tokprof.analyses.sessions import SessionRow, Skipped
    from tokprof.analyses.site import Site, SitePage
    from tokprof.pricing.spend import call_spends
    from tokprof.render import RenderOptions, render
    from tokprof.render.site import index_page, session_page

    files: list[tuple[str | None, str]]
    if directory is not None:
        from tokprof.formats import scan_directory

        name = os.fspath(directory)
        found = scan_directory(name)
        files = [(kind, str(path)) for kind, path in found.sessions]
        site = Site(name, skipped=[Skipped(str(path), f"{path}: {why}") for path, why in found.skipped])
    else:
        from tokprof.formats.discovery import local_session_files

        files = [(one.format, str(one.path)) for one in local_session_files(agent)]
        site = Site("this machine" + (f" ({agent})" if agent else ""))
    shown = RenderOptions(window=window)
    with progress_bar(options.progress, len(files), "profiling sessions") as advance:
        for number, (kind, path) in enumerate(files, 1):
            try:
                trace = read_log(path, Options(input_format=kind))
                spends = call_spends(trace)
                # its page's "what to change" too
                result = profile(trace, Options(model=options.model, prices=options.prices, advice=True))
                page = session_page(render("profile", "html", result, shown))
            except (TokprofError, RenderError) as exc:
                site.skipped.append(Skipped(path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
                advance()
                continue
            name = f"session-{number:04d}.html"
            write(name, page)
            session = trace.session or Path(path).stem
            project = next((call.cwd for call in trace.calls if call.cwd), None) or ""
            first = result.actions[0] if result.actions else None
            site.pages.append(
                SitePage(name, SessionRow.from_profile(result, session, path), trace.format, project, first)
            )
            site.spends.append(SessionSpend(trace.format, project, session, path, tuple(spends)))
            advance()
    write("index.html", index_page(site))
    return len(site.pages)
