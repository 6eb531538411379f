"""A progress report on standard error: a bar when it is a terminal, or a caller's function."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

from tokprof.runs.arguments import Progress


@contextlib.contextmanager
def progress_bar(
    progress: Progress, total: int, label_text: str, in_bytes: bool = False
) -> Iterator[Callable[..., None]]:
    """Yields the function that advances a progress report by one step (or by ``steps``); a bar of
    ``in_bytes`` steps shows its share done, not the steps."""
    if callable(progress):
        done = [0]

        def advance(steps: int = 1) -> None:
            done[0] += steps
            progress(done[0], total)

        yield advance
        return
    if not progress or not sys.stderr.isatty() or total < 2:

        def unseen(steps: int = 1) -> None:
            pass

        yield unseen
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TaskProgressColumn, TimeRemainingColumn

    with Bar(
        "[progress.description]{task.description}",
        BarColumn(),
        TaskProgressColumn() if in_bytes else MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(label_text, total=total)

        def shown(steps: int = 1) -> None:
            bar.advance(task, steps)

        yield shown
