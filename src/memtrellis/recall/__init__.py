"""Recall: hybrid dense + keyword retrieval with graph expansion and a token budget."""

from memtrellis.recall.hybrid import DENSE_WEIGHT, RecallRequest, hybrid_recall, memory_line

__all__ = ["DENSE_WEIGHT", "RecallRequest", "hybrid_recall", "memory_line"]
