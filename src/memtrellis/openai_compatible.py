"""An [`LLM`][memtrellis.LLM] for any endpoint that speaks OpenAI's chat-completions API.

OpenAI itself, and the many servers that copy its API (llama.cpp's ``llama-server``,
vLLM, Ollama's ``/v1``, LM Studio, LiteLLM's proxy, hosted routers): one POST to
``{base_url}/chat/completions`` per call, over the standard library's HTTP client, so it
needs no SDK. Give it to ``Memory(llm=...)`` for fine-mode extraction and the relation
judge. The API key is read from an environment variable (``OPENAI_API_KEY`` unless told
otherwise) when the call is made, and never shown in ``repr``.

Examples:
    >>> llm = OpenAICompatibleLLM("gpt-4o-mini", api_key_env="NO_SUCH_KEY_VARIABLE")
    >>> llm.endpoint, llm.response_format
    ('https://api.openai.com/v1/chat/completions', None)
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from memtrellis.errors import InvalidInputError, MemtrellisError
from memtrellis.llm import ChatMessage

__all__ = ["DEFAULT_BASE_URL", "EndpointError", "OpenAICompatibleLLM"]

#: OpenAI's own API; any other server is one ``base_url=`` away.
DEFAULT_BASE_URL = "https://api.openai.com/v1"
_FORMATS = ("json_schema", "json_object")
_BODY_SHOWN = 300


class EndpointError(MemtrellisError):
    """The endpoint answered with an HTTP error or with something that is not a reply.

    Extraction counts it as a failed call (tried again, then the window is kept as a
    fallback memory); the message holds the status and the start of the body.

    Examples:
        >>> str(EndpointError("HTTP 503 from http://127.0.0.1:8080/v1/chat/completions"))
        'HTTP 503 from http://127.0.0.1:8080/v1/chat/completions'
    """


class OpenAICompatibleLLM:
    """A chat model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    Args:
        model: The model name the endpoint expects (``"gpt-4o-mini"``; a local server
            often accepts any name).
        base_url: Everything before ``/chat/completions``, e.g. ``http://127.0.0.1:8080/v1``.
        api_key: The key itself; when ``None`` it is read from ``api_key_env`` at each call,
            and no ``Authorization`` header is sent when that variable is unset (local
            servers need none).
        api_key_env: The environment variable holding the key.
        temperature: Sampling temperature of every call (0: as repeatable as the server
            allows).
        max_tokens: Longest reply, in the model's tokens (``None``: the server's default).
            Small local models can ramble; a bound keeps a call short.
        timeout: Seconds one HTTP request may take; past it the call raises
            ``TimeoutError``, which extraction counts as a timeout and tries again.
        response_format: How a call that comes with a JSON schema (extraction, the
            relation judge) asks for JSON: ``"json_schema"`` (the schema itself, as OpenAI,
            llama.cpp and vLLM take it), ``"json_object"`` (any JSON) or ``None`` (plain
            text: the prompt describes the format, for servers that take neither).
            memtrellis parses and repairs the reply either way.
        headers: More HTTP headers of every request.
        extra_body: More fields of every request body (``{"top_p": 0.9}``).

    Raises:
        InvalidInputError: An argument is out of range.

    Examples:
        >>> from memtrellis import LLM
        >>> local = OpenAICompatibleLLM("local", base_url="http://127.0.0.1:8080/v1/",
        ...                             response_format="json_schema", max_tokens=256)
        >>> local.endpoint, isinstance(local, LLM)
        ('http://127.0.0.1:8080/v1/chat/completions', True)
        >>> local.request_body([{"role": "user", "content": "hi"}])["max_tokens"]
        256
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        temperature: float = 0.0,
        max_tokens: int | None = None,
        timeout: float = 120.0,
        response_format: Literal["json_schema", "json_object"] | None = None,
        headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidInputError("model must be a non-empty name")
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise InvalidInputError("base_url must be an http:// or https:// URL")
        if max_tokens is not None and (isinstance(max_tokens, bool) or max_tokens < 1):
            raise InvalidInputError("max_tokens must be a positive integer or None")
        if not timeout > 0:
            raise InvalidInputError("timeout must be positive")
        if response_format is not None and response_format not in _FORMATS:
            raise InvalidInputError(f"response_format must be one of {_FORMATS} or None")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.api_key_env = api_key_env
        self.temperature = float(temperature)
        self.max_tokens = max_tokens
        self.timeout = float(timeout)
        self.response_format = response_format
        self.headers = dict(headers or {})
        self.extra_body = dict(extra_body or {})

    @property
    def endpoint(self) -> str:
        """The URL every call is POSTed to."""
        return f"{self.base_url}/chat/completions"

    def __repr__(self) -> str:
        return f"OpenAICompatibleLLM(model={self.model!r}, base_url={self.base_url!r})"

    def request_body(
        self, messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The JSON body of one call (what is sent, the key aside).

        Examples:
            >>> llm = OpenAICompatibleLLM("m", response_format="json_object")
            >>> body = llm.request_body([{"role": "user", "content": "hi"}], {"type": "object"})
            >>> body["model"], body["messages"][0]["content"], body["response_format"]
            ('m', 'hi', {'type': 'json_object'})
        """
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": str(m["role"]), "content": str(m["content"])} for m in messages],
            "temperature": self.temperature,
        }
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if schema is not None and self.response_format == "json_object":
            body["response_format"] = {"type": "json_object"}
        elif schema is not None and self.response_format == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": dict(schema), "strict": False},
            }
        body.update(self.extra_body)
        return body

    def complete(self, messages: Sequence[ChatMessage]) -> str:
        """The reply's text to ``messages``.

        Raises:
            TimeoutError: No answer within ``timeout`` seconds.
            EndpointError: An HTTP error, an unreachable server or a body without a reply.
        """
        return self._post(self.request_body(messages))

    def complete_json(self, messages: Sequence[ChatMessage], schema: Mapping[str, Any]) -> str:
        """The reply's text, asked for as JSON matching ``schema`` when ``response_format``
        says how (else a plain `complete`).

        Raises:
            TimeoutError: No answer within ``timeout`` seconds.
            EndpointError: An HTTP error, an unreachable server or a body without a reply.
        """
        return self._post(self.request_body(messages, schema))

    def _key(self) -> str | None:
        return self._api_key if self._api_key is not None else os.environ.get(self.api_key_env)

    def _post(self, body: Mapping[str, Any]) -> str:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = self._key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        headers.update(self.headers)
        request = urllib.request.Request(
            self.endpoint, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            shown = exc.read()[:_BODY_SHOWN].decode("utf-8", "replace")
            raise EndpointError(f"HTTP {exc.code} from {self.endpoint}: {shown}") from None
        except TimeoutError as exc:
            raise TimeoutError(f"no answer from {self.endpoint} in {self.timeout:g} s") from exc
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise TimeoutError(f"no answer from {self.endpoint} in {self.timeout:g} s") from exc
            raise EndpointError(f"cannot reach {self.endpoint}: {exc.reason}") from exc
        return _reply_text(raw, self.endpoint)


def _reply_text(raw: bytes, endpoint: str) -> str:
    """``choices[0].message.content`` of a response body (text parts joined)."""
    try:
        data = json.loads(raw)
        content = data["choices"][0]["message"].get("content")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        shown = raw[:_BODY_SHOWN].decode("utf-8", "replace")
        raise EndpointError(f"no reply in the answer of {endpoint}: {shown}") from None
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)
