"""Resolve a model name to a tokenizer and a chat template."""

from __future__ import annotations

from pathlib import Path

from tokprof.errors import ModelError
from tokprof.models.local import load_directory, load_hub, looks_like_hub_id
from tokprof.models.model import ChatModel
from tokprof.models.qwen import QWEN_MODELS, load_qwen
from tokprof.models.template import ChatTemplate

DEFAULT_MODEL = "qwen2.5"
ALIASES = {"qwen2.5": "qwen2.5", "qwen2": "qwen2.5", "qwen-2.5": "qwen2.5", "qwen3": "qwen3", "qwen-3": "qwen3"}

__all__ = ["ChatModel", "ChatTemplate", "DEFAULT_MODEL", "resolve_model"]


def resolve_model(name: str = DEFAULT_MODEL, chat_template: str | None = None) -> ChatModel:
    """``qwen2.5`` and ``qwen3`` are embedded; otherwise a local directory or a Hub id."""
    key = ALIASES.get(name.lower())
    if key in QWEN_MODELS:
        model = load_qwen(key)
    elif Path(name).expanduser().is_dir():
        model = load_directory(Path(name).expanduser())
    elif looks_like_hub_id(name):
        model = load_hub(name)
    else:
        raise ModelError(
            f"unknown model {name!r}: use qwen2.5, qwen3, a directory with tokenizer.json, or a Hub id (org/name)"
        )
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
