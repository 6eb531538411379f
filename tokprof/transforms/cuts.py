"""The cut list's replays (tokprof.analyses.cutlist): one tool's results, or one MCP server's tools', capped
as ``cap`` caps every tool's (:class:`tokprof.transforms.policies.Cap`: a result is kept whole in the prompt
it arrives in, and cut to its first C characters, with the same note, in the prompts after). A policy of the
registry's kind, made by the cut list rather than parsed: it is not registered (``tokprof whatif -p cap:C``
caps every tool)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from tokprof.transforms.policies import CUT, Policy, Step


def tool_names(messages: Sequence[dict]) -> dict[str, str]:
    """Tool call id -> the name of the tool it called, from the assistant messages."""
    names: dict[str, str] = {}
    for m in messages:
        for tc in m.get("tool_calls") or ():
            if isinstance(tc, dict) and isinstance(tc.get("id"), str):
                name = (tc.get("function") or {}).get("name")
                if isinstance(name, str):
                    names[tc["id"]] = name
    return names


@dataclass(frozen=True)
class CapTools(Policy):
    """The results of these tools cut to their first ``chars`` characters, with a note."""

    name: ClassVar[str] = "cap-tools"
    tools: tuple[str, ...] = ()
    chars: int = 4000

    @property
    def spec(self) -> str:
        return f"cap:{self.chars} of {', '.join(self.tools)}"

    def describe(self) -> str:
        return f"the results of {', '.join(self.tools)} cut to their first {self.chars:,} characters, with a note"

    def apply(self, step: Step) -> list[dict]:
        chars, wanted = self.chars, set(self.tools)
        names: dict[str, str] | None = None
        out = list(step.messages)
        for i in range(step.fresh):
            m = step.messages[i]
            content = m.get("content")
            if m["role"] != "tool" or not isinstance(content, str) or len(content) <= chars:
                continue
            if names is None:
                names = tool_names(step.messages)
            if names.get(m.get("tool_call_id") or "") not in wanted:
                continue
            out[i] = step.rewrite(
                m, f"cap:{chars}", lambda: content[:chars] + CUT.format(size=len(content), kept=chars)
            )
        return out
