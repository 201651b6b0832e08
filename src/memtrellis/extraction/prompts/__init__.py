"""Prompts are code: one module per LLM task, its English and Chinese text next to the
pydantic model of its answer and the JSON schema for structured output.

* `extract`: fine-mode extraction of a window.
* `rewrite`: make memories self-contained.
* `judge`: drop memories the messages do not support.
* `custom`: an application's instructions or whole system prompt for `extract`.

Every builder takes the window (and the items) and returns chat messages
(``[{"role": "system", ...}, {"role": "user", ...}]``) in the window's language.
"""
