"""What a callback handler tracks of the runs in flight: the top-level runs (one turn
each), the runs under them and the model runs, by run id; thread-safe."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from langchain_memtrellis._bridge import MemoryBridge
from langchain_memtrellis._messages import answer_of, tool_steps, user_messages
from langchain_memtrellis._skip import capture_skipped, history_stores
from langchain_memtrellis.wrapper import INNER_RUN_TAG, WRAPPER_TYPE

__all__ = ["INPUT_KEY", "Runs", "Turn"]

Turn = tuple[list[BaseMessage], BaseMessage | None, dict[str, str]]

#: ``metadata`` key naming the input key that holds the user's words for one run.
INPUT_KEY = "memtrellis_input_key"


@dataclass
class _Root:
    """A top-level run (a chain or an agent) in flight: one turn when it ends."""

    inputs: Any
    scope: dict[str, str]
    input_key: str | None
    skipped: bool
    owned: bool = False  # a wrapper or a MemoryChatMessageHistory captures it instead
    prompt: list[BaseMessage] | None = None  # the first model call's messages
    reply: BaseMessage | None = None  # the last model answer
    answered: bool = False  # a model run of it ended
    runs: set[UUID] = field(default_factory=set)


@dataclass
class _Model:
    """A chat-model run in flight, under ``root`` (None: a model run on its own)."""

    root: UUID | None
    messages: list[list[BaseMessage]]
    scope: dict[str, str]
    ignored: bool


class Runs:
    """Runs in flight, by run id: top-level runs, the runs under them, model runs.

    Thread-safe. At most ``max_open`` top-level runs are tracked; beyond it the oldest
    is forgotten (a run whose stream was abandoned may never end).
    """

    def __init__(self, bridge: MemoryBridge, input_key: str | None, max_open: int) -> None:
        self.bridge = bridge
        self.input_key = input_key
        self.max_open = max_open
        self._roots: OrderedDict[UUID, _Root] = OrderedDict()
        self._root_of: dict[UUID, UUID] = {}
        self._models: dict[UUID, _Model] = {}
        self._lock = threading.Lock()

    def _root(self, parent: UUID | None) -> UUID | None:
        if parent is None:
            return None
        return parent if parent in self._roots else self._root_of.get(parent)

    def start_chain(
        self,
        inputs: Any,
        run_id: UUID,
        parent_run_id: UUID | None,
        tags: list[str] | None,
        metadata: Mapping[str, Any] | None,
    ) -> None:
        """A chain (or a tool, a retriever) starts: under a tracked run, or as a new top."""
        with self._lock:
            root = self._root(parent_run_id)
            if root is not None:
                self._root_of[run_id] = root
                self._roots[root].runs.add(run_id)
                return
            key = (metadata or {}).get(INPUT_KEY)
            self._roots[run_id] = _Root(
                inputs=inputs,
                scope=self.bridge.scope(metadata),
                input_key=key if isinstance(key, str) else self.input_key,
                skipped=capture_skipped(tags, metadata),
            )
            while len(self._roots) > self.max_open:
                _, old = self._roots.popitem(last=False)
                for child in old.runs:
                    self._root_of.pop(child, None)
                    self._models.pop(child, None)

    def start_child(self, run_id: UUID, parent_run_id: UUID | None) -> None:
        """A run that never starts a turn of its own (a tool, a retriever)."""
        with self._lock:
            root = self._root(parent_run_id)
            if root is not None:
                self._root_of[run_id] = root
                self._roots[root].runs.add(run_id)

    def start_model(
        self,
        messages: list[list[BaseMessage]],
        run_id: UUID,
        parent_run_id: UUID | None,
        tags: list[str] | None,
        metadata: Mapping[str, Any] | None,
        invocation_params: Mapping[str, Any] | None,
    ) -> None:
        """A chat-model run starts."""
        wrapped = INNER_RUN_TAG in (tags or ()) or (
            (invocation_params or {}).get("_type") == WRAPPER_TYPE
        )
        stored = history_stores(self.bridge.memory)
        with self._lock:
            root_id = self._root(parent_run_id)
            root = self._roots.get(root_id) if root_id is not None else None
            if root is not None and (wrapped or stored):
                root.owned = True
            if wrapped:
                return  # the wrapper captures this turn itself
            ignored = stored or capture_skipped(tags, metadata)
            if root_id is not None and root is not None:
                root.runs.add(run_id)
                if root.prompt is None and not ignored and messages:
                    root.prompt = list(messages[0])
            self._models[run_id] = _Model(
                root_id, [list(m) for m in messages], self.bridge.scope(metadata), ignored
            )

    def end_model(self, response: LLMResult, run_id: UUID) -> list[Turn]:
        """A chat-model run ends: its turn when it ran on its own, else noted on its top."""
        with self._lock:
            model = self._models.pop(run_id, None)
            if model is None or model.ignored:
                return []
            replies: list[BaseMessage | None] = []
            for index in range(len(model.messages)):
                found = response.generations[index : index + 1]
                first = found[0][0] if found and found[0] else None
                replies.append(first.message if isinstance(first, ChatGeneration) else None)
            root = self._roots.get(model.root) if model.root is not None else None
            if root is not None:
                root.runs.discard(run_id)
                root.answered = True
                if replies and replies[-1] is not None:
                    root.reply = replies[-1]
                return []
            if model.root is not None:
                return []  # its top-level run was forgotten
            return [(m, r, model.scope) for m, r in zip(model.messages, replies, strict=True)]

    def end_chain(self, outputs: Any, run_id: UUID, inputs: Any = None) -> Turn | None:
        """A run ends; for a top-level run, the turn to capture (None: nothing to keep).

        ``inputs``: the run's input when it is only known at the end (a stream)."""
        with self._lock:
            root_id = self._root_of.pop(run_id, None)
            if root_id is not None:
                if root_id in self._roots:
                    self._roots[root_id].runs.discard(run_id)
                return None
            root = self._roots.pop(run_id, None)
            for child in root.runs if root is not None else ():
                self._root_of.pop(child, None)
                self._models.pop(child, None)
        if root is None or root.skipped or root.owned or not root.answered:
            return None
        said = user_messages(root.inputs if inputs is None else inputs, root.input_key)
        if said is None:  # the input does not say: the first model call's user messages
            said = user_messages(root.prompt or [])
        answer = answer_of(outputs)
        if answer is None and root.reply is not None:
            answer = answer_of(root.reply)
        if not said and answer is None:
            return None
        # An agent's tool calls and results: sources of its answer (never memories alone).
        return ([*(said or []), *tool_steps(outputs)], answer, root.scope)

    def drop(self, run_id: UUID) -> None:
        """A run failed: forget it (a failed top-level run is not captured)."""
        with self._lock:
            self._models.pop(run_id, None)
            self._root_of.pop(run_id, None)
            root = self._roots.pop(run_id, None)
            for child in root.runs if root is not None else ():
                self._root_of.pop(child, None)
                self._models.pop(child, None)

    @property
    def pending(self) -> int:
        """Runs in flight (top-level runs and model runs)."""
        with self._lock:
            return len(self._roots) + len(self._models)
