"""Mistral models, counted by ``mistral-common``'s own encoding of the request, tools included: a render
is the reference's tokens written out piece by piece (a :class:`tokprof.models.base.Rendered` text that
carries where each starts), so :class:`MistralCounter` gives the reference's own tokens for it; other
texts are tokenized between control tokens as mistral-common does. What is and is not rendered, the
message boundaries and the tokenizers per model are docs/models.md's ("Families without a Jinja
template" and the table of models)."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from datetime import date
from typing import TYPE_CHECKING, Any

from tokprof.base.errors import ModelError
from tokprof.models.base import ChatModel, Rendered, Tokens, reference_starts
from tokprof.models.registry import ModelSpec

if TYPE_CHECKING:  # numpy is imported where it is used: naming the registry's models must stay quick
    import numpy as np

#: Bump when the mapping from messages to requests changes (it is part of the format's sha256).
MAPPING_VERSION = 1


@dataclass(frozen=True)
class Tokenizer:
    """One of mistral-common's shipped tokenizers."""

    file: str  # in mistral_common/data
    summary: str


TOKENIZERS = {
    "v3": Tokenizer("mistral_instruct_tokenizer_240323.model.v3", "SentencePiece v3"),
    "v3-tekken": Tokenizer("tekken_240718.json", "Tekken v3"),
    "v3-tekken-mm": Tokenizer("tekken_240911.json", "Tekken v3 (images)"),
    "v7": Tokenizer("mistral_instruct_tokenizer_241114.model.v7", "SentencePiece v7"),
    "v7-mm": Tokenizer("mistral_instruct_tokenizer_241114.model.v7m1", "SentencePiece v7 (images)"),
}


@dataclass(frozen=True)
class MistralModel:
    tokenizer: str  # a TOKENIZERS key
    aliases: tuple[str, ...]  # mistral-common's names for it first
    what: str
    window: int


#: tokprof's names, with the tokenizer mistral-common's model table gives their API names.
MISTRAL_MODELS = {
    "mistral": MistralModel(
        "v3",
        ("mistral-7b", "open-mistral-7b", "mistral-tiny-2407", "mistral-large-2407"),
        "Mistral 7B Instruct v0.3 (and Mistral Large 2407)",
        32768,
    ),
    "mistral-nemo": MistralModel(
        "v3-tekken", ("open-mistral-nemo", "open-mistral-nemo-2407"), "Mistral NeMo 12B Instruct 2407", 131072
    ),
    "ministral-8b": MistralModel("v3-tekken", ("ministral-8b-2410", "ministral"), "Ministral 8B 2410", 131072),
    "mistral-small": MistralModel("v3-tekken", ("mistral-small-2409",), "Mistral Small 2409", 32768),
    "mistral-large": MistralModel("v7", ("mistral-large-2411",), "Mistral Large 2411", 131072),
    "mixtral": MistralModel(
        "v3", ("open-mixtral-8x22b", "open-mixtral-8x22b-2404", "mixtral-8x22b"), "Mixtral 8x22B Instruct", 65536
    ),
    "codestral": MistralModel("v3", ("codestral-2405", "codestral-mamba-2407"), "Codestral 2405", 32768),
    "pixtral": MistralModel("v3-tekken-mm", ("pixtral-12b-2409", "pixtral-12b"), "Pixtral 12B 2409", 131072),
    "pixtral-large": MistralModel("v7-mm", ("pixtral-large-2411",), "Pixtral Large 2411", 131072),
}

_LOCK = threading.Lock()
_LOADED: dict[str, Any] = {}


def _data_file(name: str):
    from tokprof.models.tiktoken_vocab import package_file

    return package_file("mistral_common", "mistral-common", f"tokenizer {name}", "data", name)


def mistral_tokenizer(key: str):
    """mistral-common's ``MistralTokenizer`` for a TOKENIZERS key, loaded once (test validation mode:
    the request rules, without a serving deployment's limits)."""
    with _LOCK:
        if key not in _LOADED:
            path = _data_file(TOKENIZERS[key].file)
            try:
                from mistral_common.protocol.instruct.validator import ValidationMode
                from mistral_common.tokens.tokenizers.mistral import MistralTokenizer
            except ImportError as exc:
                raise ModelError(
                    f"mistral-common is not installed ({exc}): pip install 'mistral-common[sentencepiece]'"
                ) from None
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    loaded = MistralTokenizer.from_file(str(path), mode=ValidationMode.test)
                _speed_up(loaded)
                _LOADED[key] = loaded
            except ImportError as exc:  # sentencepiece, for the SentencePiece tokenizers
                raise ModelError(f"{path.name}: {exc}") from None
        return _LOADED[key]


def _speed_up(loaded) -> None:
    """Two shortcuts on tokprof's own instance, which change no token. encode_instruct also decodes its tokens into ``Tokenized.text`` (mistral-common's "remove once
    1.13.0 lands"), which tokprof does not read and which costs most of a render, piece by piece in
    Python: on tokprof's own instance, ``decode`` with special tokens kept writes the pieces from a
    table instead. And the tokenizer's ``encode`` of a text is remembered (a render encodes every
    message's text again)."""
    from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy

    instruct = loaded.instruct_tokenizer
    original = instruct.decode
    table: list[bytes] = []

    def decode(tokens, special_token_policy=SpecialTokenPolicy.IGNORE):
        if special_token_policy != SpecialTokenPolicy.KEEP:
            return original(tokens, special_token_policy=special_token_policy)
        if not table:
            table.extend(piece_table(instruct.tokenizer))
        return b"".join(table[t] for t in tokens).decode("utf-8", errors="replace")

    instruct.decode = decode
    raw = instruct.tokenizer
    encode = raw.encode

    @lru_cache(maxsize=65536)
    def encoded(text: str, bos: bool, eos: bool) -> tuple[int, ...]:
        return tuple(encode(text, bos=bos, eos=eos))

    # every render encodes each message's text again: the same text gives the same tokens
    raw.encode = lambda s, bos, eos: list(encoded(s, bos, eos))


def piece_table(raw) -> list[bytes]:
    """Each token's piece as the prompt's text writes it, by id: control tokens by name; Tekken's
    bytes; SentencePiece's pieces with ``▁`` as a space and byte tokens (``<0x0A>``) as their byte."""
    from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    if isinstance(raw, Tekkenizer):
        return [raw.id_to_byte_piece(t, SpecialTokenPolicy.KEEP) for t in range(raw.n_words)]
    out = []
    for t in range(raw.n_words):
        piece = raw.id_to_piece(t)
        if raw.is_special(t):
            out.append(piece.encode("utf-8"))
        elif len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
            out.append(bytes([int(piece[3:5], 16)]))
        else:
            out.append(piece.replace("\u2581", " ").encode("utf-8"))
    return out


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mistral-common")
    except PackageNotFoundError:
        raise ModelError(
            "the mistral-common package is not installed (pip install 'mistral-common[sentencepiece]')"
        ) from None


def _content(value) -> str:
    return value if isinstance(value, str) else "" if value is None else json.dumps(value, ensure_ascii=False)


class MistralFormat:
    """A Mistral model's prompt format: mistral-common's request encoding (a
    :class:`tokprof.models.base.PromptFormat`). See the module's docstring."""

    shapes = ("request",)

    def __init__(self, key: str):
        self.key = key
        self.origin = f"mistral-common {_version()} {TOKENIZERS[key].file}"
        self._rendered: OrderedDict[str, np.ndarray] = OrderedDict()  # the last renders -> their token starts
        self._rendered_lock = threading.Lock()  # the renders are remembered by every thread counting with it
        self._table: list[bytes] | None = None  # each token's piece, by id
        self._lengths: np.ndarray | None = None  # and its length in bytes

    @property
    def tokenizer(self):
        return mistral_tokenizer(self.key)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(f"{self.origin} mapping {MAPPING_VERSION}".encode()).hexdigest()

    def prepare(self, messages: list[dict], shape: str) -> list[dict]:
        return [{k: v for k, v in m.items() if v is not None} for m in messages]

    def _before_v7(self) -> bool:
        from mistral_common.tokens.tokenizers.base import TokenizerVersion

        return self.tokenizer.instruct_tokenizer.tokenizer.version < TokenizerVersion.v7

    def request(self, messages: list[dict], tools: list[dict] | None):
        """The ``ChatCompletionRequest`` of a prompt (see the module's docstring for the mapping)."""
        from mistral_common.protocol.instruct.request import ChatCompletionRequest

        both_allowed = not self._before_v7()
        out: list[dict] = []
        for m in messages:
            role = m["role"]
            if role in ("system", "developer"):
                out.append({"role": "system", "content": _content(m.get("content"))})
            elif role == "user":
                out.append({"role": "user", "content": _content(m.get("content"))})
            elif role == "assistant":
                message: dict = {"role": "assistant"}
                calls = m.get("tool_calls") or []
                if m.get("content") and (both_allowed or not calls):
                    message["content"] = _content(m["content"])
                if calls:
                    message["tool_calls"] = [
                        {
                            "id": call.get("id") or "null",
                            "type": "function",
                            "function": {
                                "name": _content((call.get("function") or {}).get("name")),
                                "arguments": (call.get("function") or {}).get("arguments") or "{}",
                            },
                        }
                        for call in calls
                    ]
                elif "content" not in message:
                    message["content"] = ""
                out.append(message)
            elif role == "tool":
                message = {"role": "tool", "content": _content(m.get("content"))}
                if m.get("tool_call_id"):
                    message["tool_call_id"] = m["tool_call_id"]
                if m.get("name"):
                    message["name"] = m["name"]
                out.append(message)
        functions = [t for t in tools or [] if isinstance(t, dict) and isinstance(t.get("function"), dict)]
        listed: Any = [{"type": "function", "function": t["function"]} for t in functions] or None
        return ChatCompletionRequest(messages=out, tools=listed)  # pydantic validates the dicts

    def tokens(self, messages: list[dict], tools: list[dict] | None, validate: bool = True) -> list[int]:
        """mistral-common's tokens of the prompt: ``encode_chat_completion`` (the reference), or, not
        validated, its normaliser and instruct tokenizer alone (for partial conversations)."""
        tokenizer = self.tokenizer
        request = self.request(messages, tools)
        if validate:
            return tokenizer.encode_chat_completion(request).tokens
        normalised = tokenizer._instruct_request_normalizer.from_chat_completion_request(request)
        return tokenizer.instruct_tokenizer.encode_instruct(normalised).tokens

    def text(self, tokens: list[int]) -> tuple[str, np.ndarray]:
        """The text of tokens, piece by piece, and the character offset at which each starts."""
        import numpy as np

        pieces = self._pieces(tokens)
        data = b"".join(pieces)
        assert self._lengths is not None
        lengths = self._lengths[np.asarray(tokens, dtype=np.int64)] if tokens else np.zeros(0, dtype=np.int64)
        byte_starts = np.cumsum(lengths) - lengths
        text = data.decode("utf-8", errors="replace")
        if len(text.encode("utf-8")) != len(data):  # a piece left a broken character: offsets by bytes kept
            return text, np.minimum(byte_starts, max(len(text) - 1, 0))
        from tokprof.models.counters import char_starts

        return text, char_starts(byte_starts, text)  # the pieces decode to the text: its bytes are theirs

    def _pieces(self, tokens: list[int]) -> list[bytes]:
        table = self._table
        if table is None:
            import numpy as np

            table = self._table = piece_table(self.tokenizer.instruct_tokenizer.tokenizer)
            self._lengths = np.fromiter((len(p) for p in table), dtype=np.int64, count=len(table))
        return [table[t] for t in tokens]

    def render(
        self,
        messages: list[dict],
        tools: list[dict] | None,
        add_generation_prompt: bool,
        day: date | None = None,
        template_tools: bool | None = None,
    ) -> str:
        """The prompt: mistral-common's encoding of the request (its prompt has no generation prompt
        of its own: the model writes after the last ``[/INST]`` or ``[/TOOL_RESULTS]``), as a
        :class:`Rendered` text that carries its tokens' starts."""
        text, starts = self.text(self.tokens(messages, tools))
        self._remember(text, starts)
        return Rendered(text, starts, self.origin)

    def _remember(self, text: str, starts: np.ndarray) -> None:
        with self._rendered_lock:
            self._rendered[text] = starts
            self._rendered.move_to_end(text)
            while len(self._rendered) > 16:
                self._rendered.popitem(last=False)

    def rendered_starts(self, text: str) -> np.ndarray | None:
        """The reference token starts of a text this format rendered: those the render carries, else
        those of an equal text among the last 16 renders; None for other texts."""
        found = reference_starts(text, self.origin)
        if found is not None:
            return found
        with self._rendered_lock:
            return self._rendered.get(text)

    def render_prefix(self, messages: list[dict], tools: list[dict] | None, day: date | None = None) -> str:
        if not messages:
            raise ValueError("mistral-common encodes no empty conversation")
        return self.text(self.tokens(messages, tools, validate=False))[0]

    def check(self, where: str) -> None:
        self.tokenizer  # noqa: B018  (loading it is the check: a missing tokenizer file is an error now)

    def generation_suffix_key(self, has_tools: bool) -> str | None:
        return None

    def tools_head(self, has_tools: bool) -> bool:
        return False

    def render_head(self, messages, tools, add_generation_prompt, day, template_tools) -> str:
        raise ValueError("mistral-common's prompts have no tools head")

    def has_default(self) -> bool:
        return False


class MistralCounter:
    """Tokens of a Mistral prompt: the reference's own for texts :class:`MistralFormat` rendered, else
    mistral-common's tokenizer between control tokens (a :class:`tokprof.models.base.TokenCounter`)."""

    def __init__(self, prompt_format: MistralFormat):
        self.format = prompt_format
        self.origin = f"mistral-common {TOKENIZERS[prompt_format.key].file} ({TOKENIZERS[prompt_format.key].summary})"
        self._specials: re.Pattern | None = None

    def count(self, text: str) -> int:
        return len(self.token_starts(text))

    def token_starts(self, text: str) -> np.ndarray:
        found = self.format.rendered_starts(text)
        if found is not None:
            return found
        return self.encode_starts(text)

    def token_starts_reusing(self, text: str, previous: Tokens | None, common: int) -> Tokens:
        return self.token_starts(text), None

    def encode_starts(self, text: str) -> np.ndarray:
        """Token starts of any text: control tokens by name, the text between them encoded as
        mistral-common encodes each part of a request (SentencePiece: the space its dummy prefix
        writes before each part is that prefix, not text)."""
        import numpy as np
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer

        raw = self.format.tokenizer.instruct_tokenizer.tokenizer
        if self._specials is None:
            names = sorted({raw.id_to_piece(i) for i in raw.special_ids} - {""}, key=len, reverse=True)
            self._specials = re.compile("|".join(re.escape(n) for n in names)) if names else re.compile("(?!)")
        sentencepiece = not isinstance(raw, Tekkenizer)
        starts: list[int] = []
        last = 0
        for match in [*self._specials.finditer(text), None]:
            end = len(text) if match is None else match.start()
            if end > last:
                segment = text[last:end]
                skip = 1 if sentencepiece and segment.startswith(" ") else 0
                tokens = raw.encode(segment[skip:], bos=False, eos=False)
                if tokens:
                    offsets = self.format.text(tokens)[1]
                    starts.extend(int(o) + last for o in offsets)
            if match is not None:
                starts.append(match.start())
                last = match.end()
        return np.asarray(starts, dtype=np.int64)


def load_mistral(name: str) -> ChatModel:
    model = MISTRAL_MODELS[name]
    prompt_format = MistralFormat(model.tokenizer)
    prompt_format.check(name)
    return ChatModel(
        name=name,
        prompt_format=prompt_format,
        counter=MistralCounter(prompt_format),
        context_window=model.window,
        tool_call_id_length=9,
    )


#: Which tokprof name serves a Mistral model's name as logs write it, first match wins.
_SERVING = [
    (re.compile(r"pixtral[-_ ]?large", re.I), "pixtral-large"),
    (re.compile(r"pixtral", re.I), "pixtral"),
    (re.compile(r"nemo", re.I), "mistral-nemo"),
    (re.compile(r"ministral", re.I), "ministral-8b"),
    (re.compile(r"codestral", re.I), "codestral"),
    (re.compile(r"mixtral", re.I), "mixtral"),
    (re.compile(r"mistral[-_ ]?large", re.I), "mistral-large"),
    (re.compile(r"mistral[-_ ]?small", re.I), "mistral-small"),
    (re.compile(r"mistral[-_ ]?medium|magistral|devstral|voxtral", re.I), None),  # tokenizers not shipped
    (re.compile(r"mistral", re.I), "mistral"),
]


def serving_name(name: str) -> str | None:
    """The tokprof name that serves a Mistral model's name, or None."""
    for pattern, served in _SERVING:
        if pattern.search(name):
            return served
    return None


def _spec(name: str, model: MistralModel) -> ModelSpec:
    return ModelSpec(
        name=name,
        aliases=model.aliases,
        load=lambda: load_mistral(name),
        summary=f"{model.what}: mistral-common's {TOKENIZERS[model.tokenizer].summary} encoding of the request, "
        "tools included (embedded, exact, offline)",
        serves=lambda log_name: serving_name(log_name) == name,
    )


SPECS = [_spec(name, model) for name, model in MISTRAL_MODELS.items()]
