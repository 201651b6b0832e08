"""A shared/exclusive lock for threads: many users at once, or one replacer alone."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["SharedExclusiveLock"]


class SharedExclusiveLock:
    """Any number of ``shared`` holders, or one ``exclusive`` holder.

    A waiting ``exclusive`` caller stops new ``shared`` holders from entering, so a steady
    stream of readers cannot starve it. Neither side is re-entrant.

    Examples:
        >>> lock = SharedExclusiveLock()
        >>> with lock.shared(), lock.shared():  # shared holders do not wait for each other
        ...     pass
        >>> with lock.exclusive():
        ...     pass
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._users = 0
        self._exclusive = False
        self._waiting = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        """Hold the lock together with other shared holders."""
        with self._cond:
            self._cond.wait_for(lambda: not self._exclusive and not self._waiting)
            self._users += 1
        try:
            yield
        finally:
            with self._cond:
                self._users -= 1
                if not self._users:
                    self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the lock alone, once every shared holder has left."""
        with self._cond:
            self._waiting += 1
            try:
                self._cond.wait_for(lambda: not self._exclusive and not self._users)
            finally:
                self._waiting -= 1
            self._exclusive = True
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()
