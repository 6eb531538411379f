"""Qwen Code chats: ``~/.qwen/projects/<project>/chats/<session>.jsonl``.

Qwen Code is a Gemini CLI fork whose chat recording (``packages/core/src/services/
chatRecordingService.ts``, ``ChatRecord``) writes one JSON record per line, Claude-Code-like:
``uuid``, ``parentUuid`` (the records form a tree), ``sessionId``, ``timestamp``, ``type``
(``user``, ``assistant``, ``tool_result``, ``system``), ``subtype`` for system records, and
``message``, the Gemini API ``Content`` sent or received (``role`` user/model, ``parts`` of
``text`` (``thought: true`` for reasoning), ``functionCall {id, name, args}``, ``functionResponse
{id, name, response}``). Assistant records add ``model`` and ``usageMetadata``.

**Calls.** Each assistant ``uuid`` is one model call: its records (Qwen Code may write one
logical message as several records with the same ``uuid``) are merged, their parts in order, the
last ``usageMetadata`` and ``model`` kept. The prompt is the conversation on the ``parentUuid``
chain that leads to it (a rewind branches the tree; the chain is the branch the call was made on):
user text, assistant messages (text; thoughts as reasoning; function calls as tool calls with
``args`` as JSON arguments) and tool results (``functionResponse.response``: its lone ``output``
string, else its JSON). ``system`` records are Qwen Code's own and are not sent, except a
``chat_compression`` record, whose ``systemPayload.compressedHistory`` is the history later
prompts start from (a compaction: :attr:`Trace.compactions`; the summarising call is not recorded,
note ``compaction``). ``ui_telemetry`` records repeat the usage of API responses for the interface:
they are not read (counting them would count calls twice). Records of a subagent
(``isSidechain``/``agentId``) are their own thread. A call's ``cwd`` and ``gitBranch`` are its
response record's. A record whose ``parentUuid`` is its own uuid starts its chain (note
``parent-cycle``); a uuid given to two records that are not one response is noted (``repeated-uuid``).
Each history is a view of a list the histories after it extend: reading is linear in the file.

**A fold** (#43.1): each line is read as it is fed. A response's records are the consecutive records
of its ``uuid`` (``system`` records Qwen Code writes between them aside): a call is given when the
next record of another node is read, or at the end. A response record whose ``uuid`` came before
another node is a new node (note ``repeated-uuid``). The reader holds each node's history (a view of
the shared lists), not the calls.

**Usage** (``usageMetadata``, Gemini's): ``promptTokenCount`` (cached tokens included, plus
``toolUsePromptTokenCount``) is the prompt, ``cachedContentTokenCount`` the cache reads,
``candidatesTokenCount + thoughtsTokenCount`` the output. Empty or all-zero usage is no usage
(note ``no-usage``).

**Models.** Where the log names a Qwen model tokprof embeds (``qwen3-coder-plus`` is Qwen3's
vocabulary), the counts are exact with that model's own template; other names
(``coder-model``, Qwen Code's alias for its OAuth model) are counted by a labelled stand-in.
The system prompt and tool definitions are not recorded: :attr:`Trace.unrecorded` is
``("system", "tools")``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tokprof.base.errors import InputError
from tokprof.formats.conversation import Conversation, function_response_text
from tokprof.formats.folds import Made, SessionFold
from tokprof.formats.fields import check_text, expect_list, expect_object, optional_string, string
from tokprof.formats.jsonfile import Document
from tokprof.formats.locations import Location
from tokprof.formats.reader import LogFormat
from tokprof.formats.neutral import check_cached, check_count, optional_text, parse_time
from tokprof.trace import PromptView, Trace, Usage, extended

FORMAT = "qwen-code"
DESCRIPTION = "Qwen Code chat (~/.qwen/projects/<project>/chats/<session>.jsonl)"

TYPES = ("user", "assistant", "tool_result", "system")
USAGE_FIELDS = (
    "promptTokenCount",
    "candidatesTokenCount",
    "cachedContentTokenCount",
    "thoughtsTokenCount",
    "toolUsePromptTokenCount",
)
NO_USAGE = "assistant records with empty or all-zero usageMetadata report no usage: their counts are not scaled"
COMPACTION = (
    "a chat_compression record: the history after it is its compressedHistory; the call that summarised the "
    "conversation is not recorded (not profiled)"
)
NO_PARENT = "a parentUuid names no record in the file: the chain starts there"
SELF_PARENT = "a record's parentUuid is its own uuid (a cycle): the chain starts there"
REPEATED = (
    "a record repeats the uuid of an earlier record that is not the same response: later records whose "
    "parentUuid names it follow the latest"
)


def sniff(doc: Document) -> bool:
    if doc.lines is None:
        return False
    for _, value in doc.lines.head(20):
        if isinstance(value, dict) and isinstance(value.get("uuid"), str) and value.get("type") in TYPES:
            message = value.get("message")
            if isinstance(message, dict) and isinstance(message.get("parts"), list):
                return True
            if "systemPayload" in value:
                return True
    return False


@dataclass
class _Node:
    uuid: str
    where: str
    parent: str | None
    kind: str
    records: list[dict] = field(default_factory=list)
    wheres: list[str] = field(default_factory=list)  # the line of each record


class _Reader:
    def __init__(self, trace: Trace, made: Made) -> None:
        self.trace = trace
        self.made = made
        self.chats: dict[str, Conversation] = {}
        self.call_ids: set[str] = set()
        self.pending: dict[str, list[str]] = {}  # tool name -> call ids not answered yet (for responses without id)

    def chat(self, thread: str) -> Conversation:
        if thread not in self.chats:
            self.chats[thread] = Conversation(self.trace, self.made)
            self.chats[thread].call_ids = self.call_ids  # tool call ids are known across threads: one set
        return self.chats[thread]

    def parts(
        self, chat: Conversation, where: str, message: Any, uuid: str
    ) -> tuple[list[str], list[str], list[dict], list[dict]]:
        """Texts, thoughts, tool calls and tool messages of a Content's parts."""
        path = self.trace.path
        message = expect_object(path, where + ": message", message)
        parts = message.get("parts")
        parts = expect_list(path, where + ": message.parts", parts)
        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[dict] = []
        results: list[dict] = []
        for j, part in enumerate(parts):
            at = f"{where}: message.parts[{j}]"
            part = expect_object(path, at, part, "a part object")
            if "text" in part:
                (thoughts if part.get("thought") is True else texts).append(string(path, at + ".text", part["text"]))
            elif "functionCall" in part:
                calls.append(self.function_call(at + ".functionCall", part["functionCall"], f"{uuid}:{j}"))
            elif "functionResponse" in part:
                results.append(self.function_response(at + ".functionResponse", part["functionResponse"]))
            else:
                chat._skip(at, "part")
        return texts, thoughts, calls, results

    def function_call(self, where: str, call: Any, fallback: str) -> dict:
        path = self.trace.path
        call = expect_object(path, where, call, "a functionCall object")
        name = string(path, where + ".name", call.get("name"))
        call_id: str = call["id"] if isinstance(call.get("id"), str) else fallback
        args = expect_object(path, where + ".args", call.get("args", {}))
        self.pending.setdefault(name, []).append(call_id)
        return {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
        }

    def function_response(self, where: str, response: Any) -> dict:
        path = self.trace.path
        response = expect_object(path, where, response)
        call_id = response.get("id")
        name = response.get("name")
        waiting = self.pending.get(name if isinstance(name, str) else "", [])
        if not isinstance(call_id, str):
            call_id = waiting[0] if waiting else ""
        if call_id in waiting:
            waiting.remove(call_id)
        return {
            "role": "tool",
            "tool_call_id": call_id,
            "content": check_text(path, where + ".response", function_response_text(response.get("response"))),
        }

    def own(self, node: _Node, chat: Conversation, base: PromptView) -> list[dict]:
        """A node's messages (an assistant node is a call, made on ``base``)."""
        where = node.where
        if node.kind == "system":
            return []
        texts, thoughts, calls, results = [], [], [], []
        for record, at in zip(node.records, node.wheres):
            t, th, c, r = self.parts(chat, at, record.get("message"), node.uuid)
            texts += t
            thoughts += th
            calls += c
            results += r
        if node.kind == "assistant":
            return [self.call(node, chat, base, texts, thoughts, calls)]
        out = [chat.check(result, where) for result in results]
        if texts:
            out.append(chat.check({"role": "user", "content": "\n".join(texts)}, where))
        return out

    def call(
        self,
        node: _Node,
        chat: Conversation,
        base: PromptView,
        texts: list[str],
        thoughts: list[str],
        calls: list[dict],
    ) -> dict:
        message: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) if texts else None}
        if thoughts:
            message["reasoning_content"] = "\n".join(thoughts)
        if calls:
            message["tool_calls"] = calls
        clean = chat.check(message, node.where)
        usage, model = None, None
        for record, at in zip(node.records, node.wheres):
            if "usageMetadata" in record:
                usage = self.usage(at + ": usageMetadata", record["usageMetadata"])
            recorded = optional_string(self.trace.path, at + ": model", record.get("model"))
            if recorded is not None:
                model = recorded
        if usage is None:
            self.trace.note("no-usage", NO_USAGE, node.where)
        chat.messages = base.base if len(base.base) == len(base) else list(base)  # no copy unless branched
        call = chat.call(
            node.where, model, usage, clean, parse_time(node.records[-1].get("timestamp")), request_id=node.uuid
        )
        first, last = node.records[0], node.records[-1]
        agent = first.get("agentId")
        if call is not None and (first.get("isSidechain") or isinstance(agent, str)):
            call.thread = agent if isinstance(agent, str) else "sidechain"
        if call is not None:  # where the agent worked, as the response's record says
            call.cwd = optional_text(self.trace.path, node.wheres[-1] + ": cwd", last.get("cwd"))
            call.git_branch = optional_text(self.trace.path, node.wheres[-1] + ": gitBranch", last.get("gitBranch"))
        return clean

    def usage(self, where: str, usage: Any) -> Usage | None:
        usage = expect_object(self.trace.path, where, usage)
        counts = {key: check_count(self.trace.path, f"{where}.{key}", usage.get(key)) for key in USAGE_FIELDS}
        if not any(counts.values()):
            return None
        return check_cached(
            self.trace.path,
            where,
            Usage(
                prompt=(counts["promptTokenCount"] or 0) + (counts["toolUsePromptTokenCount"] or 0),
                cache_read=counts["cachedContentTokenCount"],
                output=(counts["candidatesTokenCount"] or 0) + (counts["thoughtsTokenCount"] or 0),
            ),
            "cachedContentTokenCount",
        )

    def compressed(self, node: _Node, chat: Conversation) -> list[dict]:
        """A chat_compression record's history, as the prompts after it start from it."""
        self.trace.compactions += 1
        self.trace.note("compaction", COMPACTION, node.where)
        place = node.where + ": systemPayload"
        payload = expect_object(self.trace.path, place, node.records[-1].get("systemPayload"))
        history = expect_list(self.trace.path, place + ".compressedHistory", payload.get("compressedHistory"))
        out: list[dict] = []
        for i, content in enumerate(history):
            at = f"{node.where}: systemPayload.compressedHistory[{i}]"
            texts, _, calls, results = self.parts(chat, at, content, f"{node.uuid}:{i}")
            if isinstance(content, dict) and content.get("role") == "model":
                message: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) if texts else None}
                if calls:
                    message["tool_calls"] = calls
                out.append(chat.check(message, at))
            else:
                out += [chat.check(result, at) for result in results]
                if texts:
                    out.append(chat.check({"role": "user", "content": "\n".join(texts)}, at))
        return out


class QwenReader(SessionFold):
    """A Qwen Code chat read as a fold over its lines (see the module's docstring): the nodes of the
    response still being read are held (:attr:`held`: the response, then the ``system`` records that
    came after it), every other node is read as its line is fed."""

    expected = "expected a Qwen Code chat (JSON lines)"

    def __init__(self, path: str, doc: Document | None) -> None:
        super().__init__(Trace(path=path, format=FORMAT, unrecorded=("system", "tools")))
        self.reader = _Reader(self.trace, self.made)
        # uuid -> the history after it: a view of a list the histories after it extend (each message held once)
        self.context: dict[str, PromptView] = {}
        self.seen: set[str] = set()
        self.responses: set[str] = set()  # the uuids of responses read: a later record of one is a new node
        self.held: list[_Node] = []

    def line(self, number: int, value: Any) -> None:
        path, where = self.trace.path, f"line {number}"
        value = expect_object(path, where, value, "a JSON object")
        uuid, kind = value.get("uuid"), value.get("type")
        uuid = string(path, where + ": uuid", uuid)
        if kind not in TYPES:
            raise InputError(path, where + ": type", f"expected one of {', '.join(TYPES)}, found {kind!r}")
        parent = optional_string(path, where + ": parentUuid", value.get("parentUuid"))
        if self.trace.session is None and isinstance(value.get("sessionId"), str):
            self.trace.session = value["sessionId"]
        if kind == "system" and value.get("subtype") != "chat_compression":
            kind = "ignored"
        held = self.held[0] if self.held else None
        if kind == "assistant" and held is not None and held.uuid == uuid:
            held.records.append(value)  # one more record of the response being read
            held.wheres.append(where)
            return
        node = _Node(uuid, where, parent, kind, [value], [where])
        if kind == "ignored" and self.held:
            self.held.append(node)  # written while the response was: it may have more records after it
            return
        self.flush()
        if kind == "assistant" and uuid not in self.responses:
            self.responses.add(uuid)
            self.held.append(node)
        else:
            self.node(node)

    def end(self) -> None:
        self.flush()

    def flush(self) -> None:
        held, self.held = self.held, []
        for node in held:
            self.node(node)

    def node(self, node: _Node) -> None:
        """A node read whole: its history after it, and its call if it is a response."""
        trace, context = self.trace, self.context
        if node.uuid in self.seen:
            trace.note("repeated-uuid", REPEATED, node.where)
        self.seen.add(node.uuid)
        if node.parent is not None and node.parent not in context:
            if node.parent == node.uuid:
                trace.note("parent-cycle", SELF_PARENT, node.where)
            else:
                trace.note("chain-broken", NO_PARENT, node.where)
        base = context.get(node.parent) if node.parent is not None else None
        base = PromptView([], 0) if base is None else base
        agent = node.records[0].get("agentId")
        chat = self.reader.chat(agent if isinstance(agent, str) else "")
        if node.kind == "system":
            compressed = self.reader.compressed(node, chat)
            context[node.uuid] = PromptView(compressed, len(compressed))
        elif node.kind == "ignored":
            context[node.uuid] = base
        else:
            context[node.uuid] = extended(base, self.reader.own(node, chat, base))


LOCATIONS = (
    Location(
        "qwen-code",
        ".qwen/projects",
        ("*/chats/*.jsonl",),
        env="QWEN_RUNTIME_DIR",
        below_env="projects",
        project_depth=2,
    ),
)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    QwenReader,
    sessions=True,
    locations=LOCATIONS,
    records_what="per-call usage; no system prompt or tool definitions",
)
