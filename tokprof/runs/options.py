"""How a log is read, counted and priced, in one value: :class:`Options`, which every job of
:mod:`tokprof.runs` takes instead of the same keyword arguments each."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Union

from tokprof.runs.arguments import PathLike, Progress, ToolsArg

if TYPE_CHECKING:
    from tokprof.analyses.standard import PricesArg
    from tokprof.analyses.directory import Mapper
    from tokprof.runs.model import Model


@dataclass(frozen=True)
class Options:
    """How to read, count and price a log (every field optional).

    ``model``: a name, a :class:`~tokprof.Model`, or None to choose from the model names the log
    records (a folder or a list takes it by name). ``chat_template``: a Jinja file instead of the
    model's own. ``input_format``: the log's format (default: detected). ``tools``, ``system``: what
    a log does not record (Claude Code, Codex): tool definitions as a list or a JSON file, the system
    prompt as text or a :class:`pathlib.Path`. ``prices``: rates per million tokens for models
    genai-prices does not price. ``progress``: a bar on standard error, or a function. ``advice``: a
    log's profile also says what to change (``Profile.actions``), proved by replay (slower).

    For many sessions (a folder, a URL prefix or a list): ``jobs`` processes (default: one per
    core), ``records`` (a record per call, ``report.calls``; with the prompt text when ``with_text``,
    stamped with ``machine`` and ``user``), ``state`` (an incremental run's state, replaced in place),
    ``map`` (a list's tasks mapped by it, such as a process pool's or Dask's) and ``root`` (the folder
    a list's rows are shown relative to).
    """

    model: Union[str, "Model", None] = None
    chat_template: Optional[PathLike] = None
    input_format: Optional[str] = None
    tools: ToolsArg = None
    system: Optional[PathLike] = None
    prices: "PricesArg" = None  # ["0.2/0.6"] for every model, ["my-model=0.2/0.6/0.02"] for one
    progress: Progress = False
    advice: bool = False
    jobs: Optional[int] = None
    records: bool = False
    with_text: bool = False
    machine: Optional[str] = None
    user: Optional[str] = None
    state: Optional[dict] = None
    map: Optional["Mapper"] = None
    root: str = ""

    @property
    def template(self) -> str | None:
        """The chat template's path as a string, or None."""
        return None if self.chat_template is None else os.fspath(self.chat_template)


#: No options: every default.
DEFAULTS = Options()
