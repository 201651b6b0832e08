"""Recall: hybrid dense + keyword retrieval with graph expansion and a token budget."""

from memtrellis.recall.hybrid import RRF_K, RecallRequest, hybrid_recall, memory_line

__all__ = ["RRF_K", "RecallRequest", "hybrid_recall", "memory_line"]
