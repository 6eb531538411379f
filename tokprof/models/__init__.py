"""Resolve a model name to a tokenizer and a chat template."""

from __future__ import annotations

from pathlib import Path

from tokprof.errors import ModelError
from tokprof.models.local import load_directory, load_hub, looks_like_hub_id
from tokprof.models.model import ChatModel
from tokprof.models.proxies import PROXIES, load_proxy, proxy_for
from tokprof.models.qwen import QWEN_MODELS, load_qwen
from tokprof.models.template import ChatTemplate

DEFAULT_MODEL = "qwen2.5"
ALIASES = {
    "qwen2.5": "qwen2.5", "qwen2": "qwen2.5", "qwen-2.5": "qwen2.5", "qwen3": "qwen3", "qwen-3": "qwen3",
    "openai-proxy": "openai-proxy", "openai": "openai-proxy", "gpt": "openai-proxy",
    "claude-proxy": "claude-proxy", "claude": "claude-proxy", "anthropic": "claude-proxy",
}

STAND_IN = "stand-in"

__all__ = ["ChatModel", "ChatTemplate", "DEFAULT_MODEL", "auto_model", "label", "resolve_model"]


def auto_model(log_models: list[str]) -> tuple[str, str]:
    """The model to use when none is named, from the model names the log records, and why."""
    names = sorted({m for m in log_models if m})
    if not names:
        return DEFAULT_MODEL, "default (the log names no model)"
    said = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
    proxies = {proxy_for(n) for n in names}
    if len(proxies) == 1 and None not in proxies:
        return proxies.pop(), f"the log's model {said} is closed: estimated with a stated proxy"
    lowered = [n.lower() for n in names]
    if all("qwen3" in n for n in lowered):
        return "qwen3", f"the log's model {said}"
    if all("qwen" in n and "qwen3" not in n for n in lowered):
        return "qwen2.5", f"the log's model {said}"
    return DEFAULT_MODEL, f"{STAND_IN} for the log's model {said}, which tokprof does not have (name one with --model)"


def label(model: ChatModel, selected: str | None) -> ChatModel:
    """Say why the model was chosen; a stand-in's counts, exact for itself, are estimates for the log's
    model: labelled so, and scaled to reported usage like a proxy's."""
    model.selected = selected
    if selected and selected.startswith(STAND_IN):
        model.exact = False
        model.method = f"{model.name}'s tokenizer and chat template as a {selected}"
    return model


def resolve_model(
    name: str | None = DEFAULT_MODEL, chat_template: str | None = None, log_models: list[str] | None = None
) -> ChatModel:
    """``qwen2.5`` and ``qwen3`` are embedded; ``openai-proxy`` and ``claude-proxy`` estimate closed
    models; otherwise a local directory or a Hub id. With no name, chosen from the log's model names."""
    selected = None
    if name is None:
        name, selected = auto_model(log_models or [])
    key = ALIASES.get(name.lower())
    if key in QWEN_MODELS:
        model = load_qwen(key)
    elif key in PROXIES:
        model = load_proxy(key)
    elif Path(name).expanduser().is_dir():
        model = load_directory(Path(name).expanduser())
    elif proxy_for(name):
        model = load_proxy(proxy_for(name))
    elif looks_like_hub_id(name):
        model = load_hub(name)
    else:
        raise ModelError(
            f"unknown model {name!r}: use qwen2.5, qwen3, openai-proxy, claude-proxy, a directory with "
            "tokenizer.json, or a Hub id (org/name)"
        )
    label(model, selected)
    if chat_template is not None:
        path = Path(chat_template)
        if path.is_dir():
            raise ModelError(f"{chat_template}: is a directory, not a chat template file")
        try:
            source = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ModelError(f"{chat_template}: cannot read chat template: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise ModelError(f"{chat_template}: byte {exc.start}: not UTF-8 text") from None
        if not source.strip():
            raise ModelError(f"{chat_template}: the chat template is empty")
        model.template = ChatTemplate(
            source=source, origin=f"file:{path.name}", special_tokens=model.template.special_tokens
        )
    if not model.template.source:
        raise ModelError(f"model {name!r} has no chat template; give one with --chat-template FILE")
    model.template.check(chat_template or model.template.origin)
    return model
