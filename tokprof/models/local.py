"""Models from a local directory, or from the Hugging Face Hub through its cache."""

from __future__ import annotations

import json
import os
import re
import socket
from pathlib import Path
from urllib.parse import urlparse

import tokprof.base.bounded as bounded
from tokprof.base.errors import ModelError
from tokprof.models.base import ChatModel
from tokprof.models.counters import HFCounter
from tokprof.models.template import ChatTemplate

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
SPECIAL_KEYS = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token")
HUB_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "chat_template.json")


def _token_text(value) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def template_from_config(config: dict, directory: Path | None, origin: str) -> ChatTemplate:
    """The chat template of a tokenizer: chat_template.jinja, chat_template.json, or tokenizer_config.json."""
    special = {k: t for k in SPECIAL_KEYS if (t := _token_text(config.get(k))) is not None}
    source = None
    if directory is not None and (directory / "chat_template.jinja").is_file():
        source = bounded.read_text(directory / "chat_template.jinja", "chat template")
    elif directory is not None and (directory / "chat_template.json").is_file():
        try:
            source = json.loads(bounded.read_text(directory / "chat_template.json", "chat template")).get(
                "chat_template"
            )
        except ValueError as exc:
            raise ModelError(f"{directory / 'chat_template.json'}: invalid JSON: {exc}") from None
    else:
        source = config.get("chat_template")
    if isinstance(source, list):
        try:
            source = {item["name"]: item["template"] for item in source}
        except (TypeError, KeyError):
            raise ModelError(f"{origin}: chat_template list entries need 'name' and 'template'") from None
    if source is None:
        return ChatTemplate(source="", origin="none", special_tokens=special)
    if not isinstance(source, (str, dict)):
        raise ModelError(f"{origin}: chat_template is neither a string nor a list of named templates")
    return ChatTemplate(source=source, origin=origin, special_tokens=special)


def load_directory(path: Path, name: str | None = None, origin: str | None = None) -> ChatModel:
    tokenizer_file = path / "tokenizer.json"
    if not tokenizer_file.is_file():
        raise ModelError(f"{path}: no tokenizer.json (tokprof needs a fast tokenizer file)")
    try:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(tokenizer_file))
    except Exception as exc:  # tokenizers raises bare Exceptions
        raise ModelError(f"{tokenizer_file}: cannot load: {exc}") from None
    config_file = path / "tokenizer_config.json"
    config = {}
    if config_file.is_file():
        try:
            config = json.loads(config_file.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ModelError(f"{config_file}: invalid JSON: {exc}") from None
    template = template_from_config(config, path, origin or str(path))
    window = config.get("model_max_length")
    return ChatModel(
        name=name or str(path),
        prompt_format=template,
        counter=HFCounter(tokenizer, origin or str(tokenizer_file)),
        context_window=int(window) if isinstance(window, (int, float)) and 0 < window < 10**7 else None,
    )


def _hub_reachable(timeout: float = 5.0) -> bool:
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    parsed = urlparse(endpoint)
    host = parsed.hostname or "huggingface.co"
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def load_hub(repo_id: str) -> ChatModel:
    """A Hub model: from the local Hugging Face cache, downloading only when online and allowed."""
    try:
        import huggingface_hub
    except ImportError:
        raise ModelError(f"{repo_id}: loading Hub models needs huggingface_hub (pip install huggingface_hub)") from None
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
    cached = huggingface_hub.try_to_load_from_cache(repo_id, "tokenizer.json")
    if isinstance(cached, str):
        return load_directory(Path(cached).parent, name=repo_id, origin=f"hub:{repo_id} (cached)")
    if offline:
        raise ModelError(
            f"model {repo_id!r} is not in the Hugging Face cache and HF_HUB_OFFLINE is set; "
            "use --model qwen2.5, --model qwen3, or a local directory"
        )
    if not _hub_reachable():
        raise ModelError(
            f"model {repo_id!r} is not in the Hugging Face cache and the Hub cannot be reached; "
            "use --model qwen2.5, --model qwen3, or a local directory"
        )
    directory = None
    for filename in HUB_FILES:
        try:
            local = huggingface_hub.hf_hub_download(repo_id, filename, etag_timeout=10)
            directory = Path(local).parent
        except Exception as exc:  # missing optional files, or a failed download
            if filename == "tokenizer.json":
                raise ModelError(f"model {repo_id!r}: cannot download tokenizer.json: {exc}") from None
    assert directory is not None
    return load_directory(directory, name=repo_id, origin=f"hub:{repo_id}")


def looks_like_hub_id(name: str) -> bool:
    return bool(HUB_ID.match(name))
