"""The kinds of argument the jobs take: paths, tool definitions, a progress report."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Union

PathLike = Union[str, "os.PathLike[str]"]
#: Tool definitions: a list (OpenAI, flat Responses, Anthropic or MCP shapes), or a JSON file of them.
ToolsArg = Union[Sequence[dict], PathLike, None]
#: A progress report: True for a bar on standard error when it is a terminal, or a function
#: called with (steps done, steps in all) after each step.
Progress = Union[bool, Callable[[int, int], None]]
