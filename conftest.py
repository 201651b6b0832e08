"""pytest's set-up for every run of the core's checks, the doctests under ``src/`` run alone
included (``pytest src/memtrellis/store``): each run writes its temporary files into one
directory of its own, removed at the end, so doctests and notebooks that call
``tempfile.mkdtemp()`` leave no store in the machine's temp directory. It sits at the root
because ``tests/conftest.py`` is not read when only ``src/`` is collected.
``pytest_configure`` is historic: it runs for the whole session."""

from __future__ import annotations

from contextlib import ExitStack

import pytest

from memtrellis.testing import own_tempdir

_CLEANUP = ExitStack()


def pytest_configure(config: pytest.Config) -> None:
    _CLEANUP.enter_context(own_tempdir())


def pytest_unconfigure(config: pytest.Config) -> None:
    _CLEANUP.close()
