"""A scripted OpenAI-compatible chat-completions server on loopback, for tests of
`memtrellis.openai_compatible` and of the QA benchmark: real HTTP and JSON, the model's
replies scripted."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[dict[str, Any]], tuple[int, Any]]


class Endpoint:
    """A chat-completions server on 127.0.0.1 that records what it was sent."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                endpoint.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                if self.path != "/v1/chat/completions":
                    status, payload = 404, {"error": "not found"}
                else:
                    status, payload = endpoint.reply(body)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def chat(content: Any) -> tuple[int, Any]:
    return 200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
