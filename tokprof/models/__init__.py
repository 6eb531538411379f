"""Resolve a model name to a prompt format and a token counter.

Named models come from the registry (:mod:`tokprof.models.registry`); a path is a tokenizer
directory or a GGUF file, and a name Ollama's model folder holds is its GGUF file
(:mod:`tokprof.models.gguf`); a closed model's name ("gpt-4o", "claude-sonnet-4-5") is its stated proxy; an
``org/name`` is a Hugging Face Hub id, read from the local Hugging Face cache.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import tokprof.base.bounded as bounded
from tokprof.base.errors import ModelError
from tokprof.models import registry
from tokprof.models.base import ChatModel, ModelInfo, PromptFormat, TokenCounter

DEFAULT_MODEL = "qwen2.5"
STAND_IN = "stand-in"

__all__ = [
    "ChatModel",
    "ChatTemplate",
    "DEFAULT_MODEL",
    "ModelInfo",
    "PromptFormat",
    "TokenCounter",
    "as_stand_in",
    "auto_model",
    "is_default",
    "label",
    "resolve_model",
]


def __getattr__(name: str):
    """``ChatTemplate`` on first use: Jinja is imported only when a template is needed, so that naming
    the registry's models (the CLI's help) stays quick."""
    if name == "ChatTemplate":
        from tokprof.models.template import ChatTemplate

        return ChatTemplate
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def auto_model(log_models: list[str | None]) -> tuple[str, str]:
    """The model to use when none is named, from the model names the log records, and why."""
    names = sorted({m for m in log_models if m})
    if not names:
        return DEFAULT_MODEL, "default (the log names no model)"
    said = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
    chosen = {spec.name if (spec := registry.serving(n)) else None for n in names}
    if len(chosen) == 1 and None not in chosen:
        name = chosen.pop()
        assert name is not None
        spec = registry.lookup(name)
        if spec is not None and not spec.exact:
            verb = "is" if len(names) == 1 else "are"
            return name, f"the log's model {said} {verb} closed: estimated with a stated proxy"
        return name, f"the log's model {said}"
    return DEFAULT_MODEL, f"{STAND_IN} for the log's model {said}, which tokprof does not have (name one with --model)"


def label(model: ChatModel, selected: str | None) -> ChatModel:
    """The model, saying why it was chosen; a stand-in's counts, exact for itself, are estimates for
    the log's model: labelled so, and scaled to reported usage like a proxy's."""
    model = dataclasses.replace(model, selected=selected)
    if selected and selected.startswith(STAND_IN):
        model.exact = False
        model.method = f"{model.name}'s tokenizer and chat template as a {selected}"
    return model


def is_default(model: ChatModel) -> bool:
    """Whether the model is tokprof's default, taken because the log names none."""
    return bool(model.selected and model.selected.startswith("default"))


def as_stand_in(model: ChatModel) -> ChatModel:
    """The default model as a stand-in: for a log that names no model but reports usage, its counts
    are an estimate of the log's model, scaled to the reported usage like a proxy's (#48.2)."""
    model = dataclasses.replace(model, exact=False)
    model.method = f"{model.name}'s tokenizer and chat template as a stand-in: the log names no model"
    return model


def _load(name: str) -> ChatModel:
    """The model a name names, without a chat template override."""
    spec = registry.lookup(name)
    if spec is not None:
        return spec.load()
    from tokprof.models import proxies
    from tokprof.models.local import load_directory, load_hub, looks_like_hub_id  # a registered name needs neither
    from tokprof.models.gguf import load_gguf, looks_like_gguf, ollama_blob

    path = Path(name).expanduser()
    if path.is_dir():
        return load_directory(path)
    if looks_like_gguf(name):
        if not path.is_file():
            raise ModelError(f"{name}: no such GGUF file")
        return load_gguf(path)
    blob = ollama_blob(name)
    if blob is not None:
        return load_gguf(blob, name=name, origin=f"ollama:{name}")
    proxy = proxies.proxy_for(name)
    if proxy is not None:
        _check_closed_name(name, proxy)
        return proxies.load_proxy(proxy)
    served = registry.serving(name) if looks_like_hub_id(name) else None
    if served is not None and served.exact:  # a Hub id of a model tokprof embeds: no Hub needed
        return served.load()
    if looks_like_hub_id(name) and not path.parent.is_dir():
        return load_hub(name)
    names = ", ".join(registry.known_names())
    hint = registry.did_you_mean(name)
    if looks_like_hub_id(name):  # a relative path whose folder exists: a typo, not a Hub id
        raise ModelError(f"{name}: no such model directory{hint}")
    raise ModelError(
        f"unknown model {name!r}{hint}: use one of {names}, a directory with tokenizer.json, a .gguf file, "
        "an Ollama model, or a Hub id (org/name)"
    )


#: A cloud's wrapping of a closed model's name: Bedrock's ``us.anthropic.`` and ``-v1:0``, Vertex's ``@date``.
_WRAPPED = re.compile(r"^(?:[\w-]+[./:])*?(?=(?:claude|gpt|chatgpt|o\d|gemini))|(?:-v\d+(?::\d+)?|@[\w.-]+)$", re.I)


def _check_closed_name(name: str, proxy: str) -> None:
    """A closed model named on the command line must be one the public model data knows, so that a
    misspelling ("claude-sonet-4-5") is an error with the closest name rather than a silent proxy. A
    name the data lists, or one with no close known name, is taken as it is."""
    from tokprof.pricing.models import closest, known

    bare = _WRAPPED.sub("", name)
    if known(name) is not None or known(bare) is not None:
        return
    provider, maker = {"claude-proxy": ("anthropic", "an Anthropic"), "gemini-proxy": ("google", "a Google")}.get(
        proxy, ("openai", "an OpenAI")
    )
    close = closest(bare, (provider,))
    if close is None or close == bare.lower():
        return  # listed, or nothing it could be a misspelling of
    raise ModelError(
        f"unknown model {name!r} (did you mean {close}?): not {maker} model genai-prices knows; name one it knows, "
        f"or --model {proxy} for the stated proxy itself"
    )


def resolve_model(
    name: str | None = DEFAULT_MODEL, chat_template: str | None = None, log_models: list[str | None] | None = None
) -> ChatModel:
    """A named model, a directory or a Hub id; with no name, chosen from the log's model names.
    ``chat_template`` is a Jinja file to use instead of the model's own."""
    from tokprof.models.template import ChatTemplate

    selected = None
    if name is None:
        name, selected = auto_model(log_models or [])
    model = label(_load(name), selected)
    if chat_template is not None:
        path = Path(chat_template)
        if path.is_dir():
            raise ModelError(f"{chat_template}: is a directory, not a chat template file")
        try:
            source = bounded.read_text(path, "chat template")
        except OSError as exc:
            raise ModelError(f"{chat_template}: cannot read chat template: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise ModelError(f"{chat_template}: byte {exc.start}: not UTF-8 text") from None
        if not source.strip():
            raise ModelError(f"{chat_template}: the chat template is empty")
        special: dict[str, str] = {}
        if isinstance(model.prompt_format, ChatTemplate):
            special = model.prompt_format.special_tokens
        model.prompt_format = ChatTemplate(source=source, origin=f"file:{path.name}", special_tokens=dict(special))
    if isinstance(model.prompt_format, ChatTemplate) and not model.prompt_format.source:
        raise ModelError(f"model {name!r} has no chat template; give one with --chat-template FILE")
    model.prompt_format.check(chat_template or model.prompt_format.origin)
    return model
