"""LlamaIndex integration of memtrellis: long-term memory for any LlamaIndex LLM, offline.

* [`MemtrellisMemoryBlock`][llama_index.memory.memtrellis.MemtrellisMemoryBlock]: a block of
  ``llama_index.core.memory.Memory`` that recalls memory context for the latest message and captures
  each message of the conversation once.
* [`MemtrellisMemory`][llama_index.memory.memtrellis.MemtrellisMemory]: a whole LlamaIndex
  ``BaseMemory`` (chat history plus long-term memory), for code that takes a memory.
* [`MemoryRetriever`][llama_index.memory.memtrellis.MemoryRetriever]: memtrellis recall as a
  ``BaseRetriever`` (nodes with provenance, confidence and the explanation of each score).
* [`MemtrellisEventHandler`][llama_index.memory.memtrellis.MemtrellisEventHandler]: captures the
  chat turns of any pipeline from instrumentation events.
* [`MemtrellisToolSpec`][llama_index.memory.memtrellis.MemtrellisToolSpec]: agent tools to save,
  search and forget one entity's memories.
* [`MemtrellisLLM`][llama_index.memory.memtrellis.MemtrellisLLM]: wraps any LLM, placing memory
context and capturing turns.
* [`LlamaIndexExtractionLLM`][llama_index.memory.memtrellis.LlamaIndexExtractionLLM]: a LlamaIndex
  LLM as memtrellis' extraction model (``Memory(llm=llamaindex_llm)`` uses it through the
  ``memtrellis.llm_adapters`` entry point).

Examples:
    >>> import tempfile
    >>> from llama_index.core.llms import MockLLM
    >>> from memtrellis import Memory
    >>> from memtrellis.testing import HashingEmbedder
    >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
    >>> llm = MemtrellisLLM(llm=MockLLM(), memory=memory)
    >>> retriever = MemoryRetriever(memory)
    >>> memory.close()
"""

from llama_index.memory.memtrellis._tokenizer import ensure_offline_tokenizer

ensure_offline_tokenizer()

from llama_index.memory.memtrellis.adapters import LlamaIndexExtractionLLM  # noqa: E402
from llama_index.memory.memtrellis.base_memory import MemtrellisMemory  # noqa: E402
from llama_index.memory.memtrellis.block import MemtrellisMemoryBlock  # noqa: E402
from llama_index.memory.memtrellis.events import MemtrellisEventHandler  # noqa: E402
from llama_index.memory.memtrellis.llm import MemtrellisLLM  # noqa: E402
from llama_index.memory.memtrellis.retriever import MemoryRetriever  # noqa: E402
from llama_index.memory.memtrellis.tools import MemtrellisToolSpec  # noqa: E402

__all__ = [
    "LlamaIndexExtractionLLM",
    "MemoryRetriever",
    "MemtrellisEventHandler",
    "MemtrellisLLM",
    "MemtrellisMemory",
    "MemtrellisMemoryBlock",
    "MemtrellisToolSpec",
]
