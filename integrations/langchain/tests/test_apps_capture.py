"""What LangChain apps capture, built the way their users build them: an LCEL RAG chain
with the callback handler, ``RunnableWithMessageHistory`` with the wrapper, ``create_agent``
with ``SummarizationMiddleware``, a ReAct loop, and the skip switch.

Each test asserts exactly which memories were stored under which entity: the user's words
and the final answers, never template text, retrieved notes, recalled memories, summaries,
scratchpads, or a message twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import Runnable, RunnableConfig, RunnablePassthrough, chain
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_core.tools import tool
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.checkpoint.memory import InMemorySaver
from memtrellis import Memory
from memtrellis.context import OPEN_TAG
from pydantic import BaseModel

from fakes import FakeChat, reply
from langchain_memtrellis import (
    SKIP_CAPTURE_KEY,
    AsyncMemoryCallbackHandler,
    ChatMemoryWrapper,
    MemoryCallbackHandler,
    MemoryChatMessageHistory,
    MemoryMiddleware,
    memory_context,
    skip_capture,
)

NOTES = [
    "The office wifi password is hunter2.",
    "Lunch is served in the canteen at noon.",
    "The parking garage closes at 22:00.",
]
RAG_PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "Answer from the context only."),
        ("human", "Context:\n{context}\n\nQuestion: {question}"),
    ]
)


def stored(memory: Memory, entity_id: str) -> list[tuple[str, str]]:
    """(role, text) of every memory of one entity, in the order they were stored."""
    assert memory.flush(30)
    return [
        (item.sources[0].role or "", item.text)
        for item in memory.list(entity_id=entity_id, limit=1000)
    ]


def as_user(entity_id: str, **config: Any) -> RunnableConfig:
    metadata = {"memtrellis_entity_id": entity_id, **config.pop("metadata", {})}
    return {"metadata": metadata, **config}  # type: ignore[typeddict-item]


def format_docs(docs: Sequence[Document]) -> str:
    return "\n".join(doc.page_content for doc in docs)


def rag_chain(memory: Memory, llm: FakeChat) -> Runnable[Any, str]:
    """retriever | prompt | memory context | llm | parser, as the LangChain RAG tutorial."""
    notes = InMemoryVectorStore.from_texts(NOTES, DeterministicFakeEmbedding(size=32))
    retriever = notes.as_retriever(search_kwargs={"k": 2})
    return (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | RAG_PROMPT
        | memory_context(memory)
        | llm
        | StrOutputParser()
    )


# -- bug 4: an LCEL RAG chain with the callback handler -----------------------------------
def test_rag_chain_stores_each_users_question_and_answer_not_the_filled_template(
    memory: Memory,
) -> None:
    memory.add("Alice is vegetarian", entity_id="alice")
    memory.add("Bob cycles to work", entity_id="bob")
    llm = FakeChat(
        messages=iter(["At noon, in the canteen.", "It closes at 22:00.", "hunter2", "Noon."])
    )
    rag = rag_chain(memory, llm)
    handler = MemoryCallbackHandler(memory)

    rag.invoke("When is lunch?", as_user("alice", callbacks=[handler]))
    rag.invoke("When does the garage close?", as_user("bob", callbacks=[handler]))
    streamed = "".join(
        rag.stream("What is the wifi password?", as_user("bob", callbacks=[handler]))
    )
    rag.invoke("When is lunch, again?", as_user("alice", callbacks=[handler]))

    # The model did get the filled template, the notes and the recalled memories ...
    sent = llm.sent(0)
    assert "Context:" in sent[-1].content and any(note in sent[-1].content for note in NOTES)
    assert OPEN_TAG in sent[0].content and "Alice is vegetarian" in sent[0].content
    assert streamed == "hunter2"
    # ... and what was stored is what each person said, once, under their own entity.
    assert stored(memory, "alice") == [
        ("", "Alice is vegetarian"),  # added by the app, not said in a chat
        ("user", "When is lunch?"),
        ("assistant", "At noon, in the canteen."),
        ("user", "When is lunch, again?"),
        ("assistant", "Noon."),
    ]
    assert stored(memory, "bob") == [
        ("", "Bob cycles to work"),
        ("user", "When does the garage close?"),
        ("assistant", "It closes at 22:00."),
        ("user", "What is the wifi password?"),
        ("assistant", "hunter2"),
    ]
    assert handler.stats.captured == 4
    assert handler.runs.pending == 0


def test_rag_chain_over_a_dict_input_stores_the_question_key(memory: Memory) -> None:
    notes = InMemoryVectorStore.from_texts(NOTES, DeterministicFakeEmbedding(size=32))
    retriever = notes.as_retriever(search_kwargs={"k": 2})
    llm = FakeChat(messages=iter(["Lunch is at noon."]))
    rag = (
        RunnablePassthrough.assign(context=itemgetter("question") | retriever | format_docs)
        | RAG_PROMPT
        | llm
    )
    handler = MemoryCallbackHandler(memory)

    rag.invoke(
        {"question": "When is lunch?", "language": "English"}, as_user("alice", callbacks=[handler])
    )

    assert stored(memory, "alice") == [
        ("user", "When is lunch?"),
        ("assistant", "Lunch is at noon."),
    ]


def test_input_key_names_the_users_words_in_an_unusual_input(memory: Memory) -> None:
    prompt = ChatPromptTemplate.from_messages([("human", "In a {tone} tone: {ask}")])
    llm = FakeChat(messages=iter(["Sure thing!", "Of course."]))
    by_handler = MemoryCallbackHandler(memory, input_key="ask")
    by_run = MemoryCallbackHandler(memory)

    (prompt | llm).invoke({"ask": "Book a table", "tone": "warm"}, {"callbacks": [by_handler]})
    (prompt | llm).invoke(
        {"ask": "Cancel it", "tone": "dry"},
        {"callbacks": [by_run], "metadata": {"memtrellis_input_key": "ask"}},
    )

    assert stored(memory, "alice") == [
        ("user", "Book a table"),
        ("assistant", "Sure thing!"),
        ("user", "Cancel it"),
        ("assistant", "Of course."),
    ]


async def test_async_rag_chain_stores_the_question_and_answer(memory: Memory) -> None:
    llm = FakeChat(messages=iter(["At noon.", "At 22:00."]))
    rag = rag_chain(memory, llm)
    handler = AsyncMemoryCallbackHandler(memory)

    await rag.ainvoke("When is lunch?", as_user("alice", callbacks=[handler]))
    chunks = [
        c
        async for c in rag.astream(
            "When does the garage close?", as_user("bob", callbacks=[handler])
        )
    ]

    assert "".join(chunks) == "At 22:00."
    assert stored(memory, "alice") == [("user", "When is lunch?"), ("assistant", "At noon.")]
    assert stored(memory, "bob") == [
        ("user", "When does the garage close?"),
        ("assistant", "At 22:00."),
    ]


# -- bug 5: ReAct scratchpads ---------------------------------------------------------------
REACT_PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "Answer with Thought/Action/Action Input, then Final Answer."),
        ("human", "Question: {question}\n{scratchpad}"),
    ]
)


def test_a_react_loop_stores_the_question_and_the_final_answer_only(memory: Memory) -> None:
    llm = FakeChat(
        messages=iter(
            [
                "Thought: I should look up the canteen hours.\nAction: notes\nAction Input: lunch",
                "Thought: I now know the final answer.\nFinal Answer: Lunch is at noon.",
            ]
        )
    )
    step = REACT_PROMPT | llm | StrOutputParser()

    @chain
    def react(question: str) -> str:
        scratchpad = ""
        while True:
            text = step.invoke({"question": question, "scratchpad": scratchpad})
            if "Final Answer:" in text:
                return text
            scratchpad += f"{text}\nObservation: {NOTES[1]}\n"

    answer = react.invoke(
        "When is lunch?", as_user("alice", callbacks=[MemoryCallbackHandler(memory)])
    )

    assert answer.endswith("Final Answer: Lunch is at noon.")
    assert stored(memory, "alice") == [
        ("user", "When is lunch?"),
        ("assistant", "Lunch is at noon."),
    ]


def test_the_wrapper_keeps_only_the_final_answer_of_react_replies(memory: Memory) -> None:
    inner = FakeChat(
        messages=iter(
            [
                "Thought: I need the notes.\nAction: notes\nAction Input: parking",
                "Thought: I remember this one.\nAnswer: The garage closes at 22:00.",
            ]
        )
    )
    chat = ChatMemoryWrapper(inner, memory=memory)

    chat.invoke("Where do I park?")  # an intermediate step: no answer yet
    chat.invoke("When does the garage close?")

    assert stored(memory, "alice") == [
        ("user", "Where do I park?"),
        ("user", "When does the garage close?"),
        ("assistant", "The garage closes at 22:00."),
    ]


# -- bug 5: create_agent with SummarizationMiddleware ---------------------------------------
@tool
def canteen_hours(day: str) -> str:
    """Opening hours of the canteen on a day."""
    return f"On {day} the canteen serves lunch at noon."


AGENT_TURNS = ["When is lunch on Monday?", "I always eat at one.", "Thanks!"]


def agent_answers() -> list[Any]:
    return [
        reply(name="canteen_hours", args={"day": "Monday"}),
        reply("Lunch on Monday is at noon."),
        reply("Noted: you eat at one."),
        reply("You're welcome."),
    ]


def expected_agent_memories(per_call: bool = True) -> list[tuple[str, str]]:
    """What is stored: a piece that captures each model call (the middleware, the
    wrapper) stores the tool call as the call ends, and again only as a source of the
    answer; the handler captures the run once, the call a source of its answer."""
    call = [("assistant", '[tool call] canteen_hours({"day": "Monday"})')] if per_call else []
    return [
        ("user", "When is lunch on Monday?"),
        *call,
        ("assistant", "Lunch on Monday is at noon."),
        ("user", "I always eat at one."),
        ("assistant", "Noted: you eat at one."),
        ("user", "Thanks!"),
        ("assistant", "You're welcome."),
    ]


def summarizer() -> FakeChat:
    return FakeChat(messages=iter(["SUMMARY: the user asked about lunch."] * 10))


def run_agent(agent: Any, entity_id: str, config: dict[str, Any]) -> None:
    run_config = as_user(entity_id, configurable={"thread_id": f"{entity_id}-1"}, **config)
    for text in AGENT_TURNS:
        agent.invoke({"messages": [("user", text)]}, run_config)


@pytest.mark.parametrize("piece", ["middleware", "handler", "wrapper"])
def test_create_agent_with_summarization_stores_no_summary(memory: Memory, piece: str) -> None:
    for user in ("alice", "bob"):
        model: Any = FakeChat(messages=iter(agent_answers()))
        middleware: list[Any] = [
            SummarizationMiddleware(
                model=summarizer(), trigger=("messages", 4), keep=("messages", 1)
            )
        ]
        config: dict[str, Any] = {}
        if piece == "middleware":
            middleware.append(MemoryMiddleware(memory))
        elif piece == "handler":
            config["callbacks"] = [MemoryCallbackHandler(memory)]
        else:
            model = ChatMemoryWrapper(model, memory=memory)
        agent = create_agent(
            model, tools=[canteen_hours], middleware=middleware, checkpointer=InMemorySaver()
        )
        run_agent(agent, user, config)
        state = agent.get_state({"configurable": {"thread_id": f"{user}-1"}}).values
        assert any("summary" in str(m.content) for m in state["messages"])  # it did summarize

    for user in ("alice", "bob"):
        assert stored(memory, user) == expected_agent_memories(per_call=piece != "handler")


def test_a_wrapper_that_also_summarizes_stores_no_summary_call(memory: Memory) -> None:
    """The same wrapped model answering and writing the summary (one model for both)."""
    inner = FakeChat(
        messages=iter(
            [
                agent_answers()[0],
                agent_answers()[1],
                reply("SUMMARY: the user asked about lunch."),
                agent_answers()[2],
                reply("SUMMARY: the user eats at one."),
                agent_answers()[3],
            ]
        )
    )
    model = ChatMemoryWrapper(inner, memory=memory)
    summarize = SummarizationMiddleware(model=model, trigger=("messages", 4), keep=("messages", 1))
    agent = create_agent(
        model, tools=[canteen_hours], middleware=[summarize], checkpointer=InMemorySaver()
    )

    run_agent(agent, "alice", {})

    state = agent.get_state({"configurable": {"thread_id": "alice-1"}}).values
    assert "SUMMARY: the user eats at one." in state["messages"][0].content
    assert stored(memory, "alice") == expected_agent_memories()


# -- bug 6: RunnableWithMessageHistory + MemoryChatMessageHistory + the wrapper --------------
HISTORY_PROMPT = ChatPromptTemplate.from_messages(
    [("system", "Be brief."), MessagesPlaceholder("history"), ("human", "{question}")]
)


def with_history(memory: Memory, model: Any) -> RunnableWithMessageHistory:
    return RunnableWithMessageHistory(
        HISTORY_PROMPT | model,
        lambda session_id: MemoryChatMessageHistory(session_id, memory),
        input_messages_key="question",
        history_messages_key="history",
    )


@pytest.mark.parametrize("how", ["invoke", "stream"])
def test_history_and_wrapper_store_each_message_once(memory: Memory, how: str) -> None:
    inner = FakeChat(messages=iter(["Hi Dana.", "You are Dana."]))
    chat = with_history(memory, ChatMemoryWrapper(inner, memory=memory))
    config: RunnableConfig = {"configurable": {"session_id": "chat-1"}}

    for question in ("My name is Dana", "What is my name?"):
        if how == "invoke":
            chat.invoke({"question": question}, config)
        else:
            list(chat.stream({"question": question}, config))

    assert [m.content for m in inner.sent()[1:]] == [
        "My name is Dana",
        "Hi Dana.",
        "What is my name?",
    ]
    assert stored(memory, "alice") == [
        ("user", "My name is Dana"),
        ("assistant", "Hi Dana."),
        ("user", "What is my name?"),
        ("assistant", "You are Dana."),
    ]
    assert [m.content for m in MemoryChatMessageHistory("chat-1", memory).messages] == [
        "My name is Dana",
        "Hi Dana.",
        "What is my name?",
        "You are Dana.",
    ]


def test_history_and_callback_handler_store_each_message_once(memory: Memory) -> None:
    chat = with_history(memory, FakeChat(messages=iter(["Hi Dana.", "You are Dana."])))
    config: RunnableConfig = {
        "configurable": {"session_id": "chat-2"},
        "callbacks": [MemoryCallbackHandler(memory)],
    }

    chat.invoke({"question": "My name is Dana"}, config)
    chat.invoke({"question": "What is my name?"}, config)

    assert [text for _, text in stored(memory, "alice")] == [
        "My name is Dana",
        "Hi Dana.",
        "What is my name?",
        "You are Dana.",
    ]


def test_a_history_on_another_memory_leaves_capture_to_the_wrapper(
    memory: Memory, tmp_path: Any
) -> None:
    from memtrellis.testing import HashingEmbedder

    with Memory(tmp_path / "sessions", embedder=HashingEmbedder()) as sessions:
        inner = FakeChat(messages=iter(["Hi Dana."]))
        chat = RunnableWithMessageHistory(
            HISTORY_PROMPT | ChatMemoryWrapper(inner, memory=memory),
            lambda session_id: MemoryChatMessageHistory(session_id, sessions),
            input_messages_key="question",
            history_messages_key="history",
        )

        chat.invoke({"question": "My name is Dana"}, {"configurable": {"session_id": "s"}})

        assert stored(memory, "alice") == [("user", "My name is Dana"), ("assistant", "Hi Dana.")]
        assert [m.content for m in MemoryChatMessageHistory("s", sessions).messages] == [
            "My name is Dana",
            "Hi Dana.",
        ]


# -- the skip switch ----------------------------------------------------------------------
def test_skip_capture_turns_capture_off_for_one_run(memory: Memory) -> None:
    llm = FakeChat(messages=iter(["At noon.", "hunter2", "22:00", "Noted."]))
    rag = rag_chain(memory, llm)
    handler = MemoryCallbackHandler(memory)

    rag.invoke("When is lunch?", skip_capture(as_user("alice", callbacks=[handler])))
    rag.invoke("Wifi?", as_user("alice", callbacks=[handler], metadata={SKIP_CAPTURE_KEY: True}))
    rag.with_config(skip_capture()).invoke("Garage?", as_user("alice", callbacks=[handler]))
    rag.invoke("I park on level 2", as_user("alice", callbacks=[handler]))

    assert len(llm.calls) == 4  # every run ran
    assert stored(memory, "alice") == [("user", "I park on level 2"), ("assistant", "Noted.")]


def test_skip_capture_reaches_the_wrapper_and_the_agent_middleware(memory: Memory) -> None:
    inner = FakeChat(messages=iter(["skipped", "streamed", "by key", "kept"]))
    chat = ChatMemoryWrapper(inner, memory=memory)
    chat.invoke("do not keep this", skip_capture())
    list(chat.stream("nor this stream", skip_capture()))
    list(chat.stream("nor this one", {"metadata": {SKIP_CAPTURE_KEY: True}}))
    chat.invoke("keep this")
    agent = create_agent(
        FakeChat(messages=iter([reply("agent skipped"), reply("agent kept")])),
        middleware=[MemoryMiddleware(memory)],
    )
    agent.invoke({"messages": [("user", "agent: do not keep")]}, skip_capture())
    agent.invoke({"messages": [("user", "agent: keep")]}, {"metadata": {SKIP_CAPTURE_KEY: False}})

    assert [text for _, text in stored(memory, "alice")] == [
        "keep this",
        "kept",
        "agent: keep",
        "agent kept",
    ]


# -- structured output through the handler ---------------------------------------------------
class Booking(BaseModel):
    """A table booking."""

    day: str
    people: int


@pytest.mark.parametrize("include_raw", [False, True])
def test_a_structured_output_chain_stores_the_answer_as_json(
    memory: Memory, include_raw: bool
) -> None:
    llm = FakeChat(messages=iter([reply(name="Booking", args={"day": "Friday", "people": 4})]))
    prompt = ChatPromptTemplate.from_messages([("human", "Extract the booking: {text}")])
    extract = prompt | llm.with_structured_output(Booking, include_raw=include_raw)

    extract.invoke(
        {"text": "A table for four on Friday"},
        as_user("alice", callbacks=[MemoryCallbackHandler(memory)]),
    )

    assert stored(memory, "alice") == [
        ("user", "A table for four on Friday"),
        ("assistant", '{"day":"Friday","people":4}'),
    ]
