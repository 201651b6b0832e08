"""Prompts are code: one module per LLM task, its English and Chinese text next to the
pydantic model of its answer and the JSON schema for structured output.

* :mod:`~memtrellis.extraction.prompts.extract`: fine-mode extraction of a window.
* :mod:`~memtrellis.extraction.prompts.rewrite`: make memories self-contained.
* :mod:`~memtrellis.extraction.prompts.judge`: drop memories the messages do not support.

Every builder takes the window (and the items) and returns chat messages
(``[{"role": "system", ...}, {"role": "user", ...}]``) in the window's language.
"""
