"""A local OpenAI-compatible server for tests: /v1/chat/completions on 127.0.0.1, answered
from a script of model steps, so the real `openai` SDK client (sync or async) talks HTTP to
it with `base_url` as it would to any compatible provider — no network, no key. It answers
Anthropic's /v1/messages from the same script too, for the `anthropic` client."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from keel.assemble.values import ModelStep
from keel.testing import anthropic_message, chat_completion

ANSWERS = {"/v1/chat/completions": chat_completion, "/v1/messages": anthropic_message}


@dataclass
class Double:
    """The server's script and what it was sent; `base_url` is for `openai.OpenAI`."""

    base_url: str
    steps: list[ModelStep]
    bodies: list[dict[str, Any]] = field(default_factory=list)


@contextmanager
def openai_double(steps: Sequence[ModelStep]) -> Iterator[Double]:
    """Serve `steps` in order until the block ends; a request past them is a 400."""
    lock = threading.Lock()
    double = Double(base_url="", steps=list(steps))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                double.bodies.append(body)
                number = len(double.bodies)
            answer = ANSWERS.get(self.path)
            if answer is None or number > len(double.steps):
                self._answer(400, {"error": {"message": f"no step {number} at {self.path}"}})
                return
            self._answer(200, answer(double.steps[number - 1], number, body["model"], 100))

        def _answer(self, status: int, data: dict[str, Any]) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    double.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield double
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
