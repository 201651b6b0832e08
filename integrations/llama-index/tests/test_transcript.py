"""The block's bookkeeping of a session: whatever the order of reads and flushes, every
message of the conversation is captured exactly once, in order (a tool exchange's earlier
messages come again only as context: provenance, never stored twice)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock

from llama_index.memory.memtrellis._transcript import Transcripts, conversation

# ("put", kind) adds a message; ("read",) reads the active history; ("flush", n) flushes
# the n oldest active messages, as llama_index.core.memory.Memory does.
step = st.one_of(
    st.tuples(st.just("put"), st.sampled_from(["user", "assistant", "tool_call", "tool"])),
    st.tuples(st.just("read")),
    st.tuples(st.just("flush"), st.integers(1, 4)),
)


def message(kind: str, number: int) -> ChatMessage:
    if kind == "tool_call":
        block = ToolCallBlock(tool_call_id=f"c{number}", tool_name="f", tool_kwargs={})
        return ChatMessage(role="assistant", blocks=[block])
    if kind == "tool":
        return ChatMessage(role="tool", content=f"result {number}")
    return ChatMessage(role=kind, content=f"{kind} said {number}")


@settings(max_examples=200, deadline=None)
@given(st.lists(step, max_size=30))
def test_every_message_is_captured_once_in_order(steps: list[tuple]) -> None:
    transcripts = Transcripts()
    everything: list[ChatMessage] = [message("user", 0)]
    captured = transcripts.read("s", everything)  # a session starts with a read
    flushed = 0
    for number, (op, *arg) in enumerate(steps, start=1):
        if op == "put":
            everything.append(message(arg[0], number))
        elif op == "read":
            captured += transcripts.read("s", everything[flushed:])
        elif len(everything) - flushed > 1:  # Memory always keeps one message
            n = min(arg[0], len(everything) - flushed - 1)
            captured += transcripts.flushed("s", everything[flushed : flushed + n])
            flushed += n
    captured += transcripts.read("s", everything[flushed:])
    assert [m for m in captured if not m.get("context")] == conversation(everything)
    said = conversation(everything)
    for index, entry in enumerate(captured):  # context: a message captured before it
        if entry.get("context"):
            plain = {k: v for k, v in entry.items() if k != "context"}
            assert plain in said and plain in captured[:index]


def test_a_resumed_session_captures_only_what_is_new() -> None:
    transcripts = Transcripts()
    old = [ChatMessage(role="user", content="hi"), ChatMessage(role="assistant", content="hello")]
    new = ChatMessage(role="user", content="I moved to Lyon")
    assert transcripts.flushed("s", old[:1]) == []  # flushed before the first read: old
    assert transcripts.read("s", [*old[1:], new]) == [{"role": "user", "content": new.content}]
    assert transcripts.read("other", [*old, new]) == [{"role": "user", "content": new.content}]
