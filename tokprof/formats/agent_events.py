"""Coding agents' own telemetry events (OpenTelemetry log records), read as GenAI model-call spans.

Agents that send OpenTelemetry report each model call as a log event of their own rather than as a
GenAI span. Each such event becomes the span the semantic conventions would have made of it
(``gen_ai.operation.name`` ``chat``, ``gen_ai.usage.*``, ``gen_ai.conversation.id``, the model), its
own attributes kept beside them, so that one reader (:mod:`tokprof.formats.otel`) reads both. As the
agents document their events:

* **Claude Code** (``CLAUDE_CODE_ENABLE_TELEMETRY=1``): ``claude_code.api_request`` (the log body,
  or ``event.name`` ``api_request``) with ``model``, ``input_tokens`` (the uncached input: Anthropic's
  count, without cache reads and writes), ``cache_read_tokens``, ``cache_creation_tokens``,
  ``output_tokens``, ``cost_usd``, ``duration_ms``, ``session.id``, ``user.account_uuid``,
  ``user.id``, ``user.email``, ``organization.id``, ``prompt.id``, ``event.sequence``. The whole
  prompt is input plus cache reads plus cache writes.
* **Codex** (``[otel]`` in ``config.toml``): ``codex.sse_event`` whose ``event.kind`` is
  ``response.completed``, with ``input_token_count`` (cached tokens included, as OpenAI counts),
  ``cached_token_count``, ``output_token_count``, ``reasoning_token_count``, ``model``,
  ``conversation.id``.
* **Gemini CLI** (``telemetry.enabled``): ``gemini_cli.api_response`` with ``input_token_count``
  (cached tokens included, as Gemini counts), ``cached_content_token_count``,
  ``output_token_count``, ``thoughts_token_count``, ``model``, ``session.id``, ``prompt_id``.

GitHub Copilot CLI and SDK-instrumented apps send GenAI spans themselves. Other events (prompts,
tool results, decisions, errors) are not model calls and give no span.
"""

from __future__ import annotations

from typing import Any

#: The event names (the log body or ``event.name``, with or without the agent's prefix) that are calls.
CLAUDE_CODE = ("claude_code.api_request", "api_request")
CODEX = ("codex.sse_event",)
GEMINI_CLI = ("gemini_cli.api_response", "api_response")


def event_name(body: Any, attrs: dict[str, Any], declared: str = "") -> str:
    """The event's name: the record's ``event_name``, else ``event.name``, else a string body."""
    for value in (declared, attrs.get("event.name"), body):
        if isinstance(value, str) and value:
            return value
    return ""


def _count(attrs: dict[str, Any], key: str) -> int | str | None:
    """A count as the event gives it (a number, or a string the reader checks), or None."""
    value = attrs.get(key)
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (int, str)):
        return value
    return None


def _sum(*values: int | str | None) -> int | str | None:
    """The whole prompt from its parts: None when the first (the input) is not recorded; a part that is
    not a number (a redaction) leaves the whole as that part, for the reader to label."""
    if values[0] is None:
        return None
    for value in values:
        if isinstance(value, str) and not value.strip().isdigit():
            return value
    return sum(int(v) for v in values if v is not None)


def event_attributes(name: str, attrs: dict[str, Any], agent: str = "") -> dict[str, Any] | None:
    """The attributes of the GenAI span an agent's event stands for (its own attributes, then the
    conventions'), or None when the event is not a model call. ``agent``: the sender's
    ``service.name`` (kept for agents whose events need it)."""
    usage: dict[str, Any]
    if name in CLAUDE_CODE:
        provider, session = "anthropic", attrs.get("session.id")
        read, write = _count(attrs, "cache_read_tokens"), _count(attrs, "cache_creation_tokens")
        usage = {
            "gen_ai.usage.input_tokens": _sum(_count(attrs, "input_tokens"), read, write),
            "gen_ai.usage.cache_read.input_tokens": read,
            "gen_ai.usage.cache_creation.input_tokens": write,
            "gen_ai.usage.output_tokens": _count(attrs, "output_tokens"),
            "gen_ai.usage.cost": attrs.get("cost_usd"),
        }
    elif name in CODEX and attrs.get("event.kind") == "response.completed":
        provider, session = "openai", attrs.get("conversation.id")
        usage = {
            "gen_ai.usage.input_tokens": _count(attrs, "input_token_count"),
            "gen_ai.usage.cache_read.input_tokens": _count(attrs, "cached_token_count"),
            "gen_ai.usage.output_tokens": _count(attrs, "output_token_count"),
        }
    elif name in GEMINI_CLI:
        provider, session = "google", attrs.get("session.id")
        usage = {
            "gen_ai.usage.input_tokens": _count(attrs, "input_token_count"),
            "gen_ai.usage.cache_read.input_tokens": _count(attrs, "cached_content_token_count"),
            "gen_ai.usage.output_tokens": _count(attrs, "output_token_count"),
        }
    else:
        return None
    genai = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": attrs.get("model"),
        "gen_ai.conversation.id": session,
        **usage,
    }
    merged = dict(attrs)
    merged.update({k: v for k, v in genai.items() if v is not None})
    return merged
