"""LangChain's own standard suites: ChatModelUnitTests and RetrieversIntegrationTests."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests
from langchain_tests.unit_tests import ChatModelUnitTests
from memtrellis import Memory

from fakes import FakeChat
from langchain_memtrellis import ChatMemoryWrapper, MemoryRetriever


class TestChatMemoryWrapperUnit(ChatModelUnitTests):
    """The wrapper around a fake inner model that can bind tools, on a real store."""

    @pytest.fixture(autouse=True)
    def _store(self, memory: Memory) -> None:
        self.store = memory

    @property
    def chat_model_class(self) -> type[BaseChatModel]:
        return ChatMemoryWrapper

    @property
    def chat_model_params(self) -> dict[str, Any]:
        return {"llm": FakeChat(messages=iter(["hello"])), "memory": self.store}


class TestMemoryRetrieverIntegration(RetrieversIntegrationTests):
    """The retriever against a real embedded store (Chroma PersistentClient)."""

    @pytest.fixture(autouse=True)
    def _store(self, memory: Memory) -> None:
        memory.add(
            [
                "Alice likes green tea",
                "Alice likes hiking in the Alps",
                "Alice likes jazz records",
                "Alice's sister Clara lives in Lisbon",
                "Alice works as a nurse",
            ]
        )
        self.store = memory

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return MemoryRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"memory": self.store, "k": 2}

    @property
    def retriever_query_example(self) -> str:
        return "What does Alice like?"
