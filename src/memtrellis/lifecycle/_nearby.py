"""The memories a plan has added so far, searchable by vector (private).

A plan relates each new memory to the closest memories of its scope: the index's nearest
ones, and the ones this same plan added before it (not in the index yet). Relating it to
*every* earlier one made an ``add`` of a long document quadratic in its windows (each
relation reads both texts); `NewVectors` keeps their unit vectors in one growing matrix
per entity, so finding the closest few is one matrix-vector product.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["NewVectors"]


class NewVectors:
    """Unit vectors of the memories added so far, per entity; the nearest by cosine.

    Examples:
        >>> new = NewVectors()
        >>> new.add("ana", "m1", [1.0, 0.0])
        >>> new.add("ana", "m2", [0.0, 2.0])
        >>> new.add("bo", "m3", [1.0, 0.0])
        >>> [(i, round(s, 3)) for i, s in new.nearest("ana", [1.0, 0.1], 1)]
        [('m1', 0.995)]
    """

    def __init__(self) -> None:
        self._rows: dict[str, np.ndarray] = {}
        self._ids: dict[str, list[str]] = {}

    def add(self, entity_id: str, memory_id: str, vector: Sequence[float]) -> None:
        """Remember ``vector`` (normalised) for one more memory of ``entity_id``."""
        row = _unit(vector)
        ids = self._ids.setdefault(entity_id, [])
        rows = self._rows.get(entity_id)
        if rows is None or rows.shape[1] != row.shape[0]:
            rows = np.zeros((8, row.shape[0]), dtype=np.float64)
            ids.clear()
        elif len(ids) == rows.shape[0]:  # full: double, so growing costs O(n) in all
            rows = np.concatenate([rows, np.zeros_like(rows)])
        rows[len(ids)] = row
        ids.append(memory_id)
        self._rows[entity_id] = rows

    def nearest(self, entity_id: str, vector: Sequence[float], n: int) -> list[tuple[str, float]]:
        """Up to ``n`` memories of ``entity_id`` closest to ``vector``, best first, with
        their cosine similarity."""
        ids = self._ids.get(entity_id) or []
        rows = self._rows.get(entity_id)
        query = _unit(vector)
        if not ids or rows is None or rows.shape[1] != query.shape[0] or n < 1:
            return []
        scores = rows[: len(ids)] @ query
        best = np.argsort(-scores, kind="stable")[:n]
        return [(ids[int(k)], float(scores[k])) for k in best]


def _unit(vector: Sequence[float]) -> np.ndarray:
    row = np.asarray(vector, dtype=np.float64)
    norm = float(np.linalg.norm(row))
    return row / norm if norm else row
