"""A scripted OpenAI-compatible chat-completions server for tests and benchmarks.

Tests exercise the real client over real sockets, so instead of patching
``openai`` this serves the wire protocol: a ``ThreadingHTTPServer`` on 127.0.0.1
that answers each request with the next scripted :class:`Reply` (built in
``devtools.replies``), or an echo when the script runs dry.

Run it as a process to drive the app by hand or from a benchmark::

    python -m devtools.scripted_server [--port N] [--tokens-per-second R] [--reply-words N]

The first stdout line is the ``base_url``. Over 400 lines as one file: the request
handler and the server share the script, its gates and its counters.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import itertools
import json
import math
import select
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from devtools.replies import (
    Framing,
    HoldMode,
    Reply,
    choiceless,
    cutoff,
    drop,
    echo,
    empty,
    error,
    malformed,
    message_text,
    overflow,
    pieces,
    reset,
    stall,
    text,
    tool_calls,
    words,
)

__all__ = [
    "Framing",
    "HoldMode",
    "Reply",
    "ScriptedServer",
    "choiceless",
    "cutoff",
    "drop",
    "echo",
    "empty",
    "error",
    "main",
    "malformed",
    "overflow",
    "reset",
    "stall",
    "text",
    "tool_calls",
    "words",
]


def _estimate_usage(body: dict[str, Any], completion_chars: int) -> dict[str, int]:
    prompt_chars = sum(
        len(message_text(m)) for m in body.get("messages") or [] if isinstance(m, dict)
    )
    prompt = math.ceil(prompt_chars / 4)
    completion = math.ceil(completion_chars / 4)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


class _Gate:
    """A one-shot latch a held reply waits on; ``release()`` opens it."""

    def __init__(self, opened: bool = False) -> None:
        self.event = threading.Event()
        if opened:
            self.event.set()


class _ClientGone(Exception):
    """The client closed the connection while a reply was held."""


class _Server(ThreadingHTTPServer):
    """Quiet about clients that vanish between requests (a killed app's keep-alive
    connection): that is the client's business, not a server error worth a traceback."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class ScriptedServer:
    """A real HTTP server on 127.0.0.1 that answers from a FIFO script.

    Tests synchronise with it through :meth:`wait_requests` and the hold gates
    rather than sleeps, so they are fast and deterministic.
    """

    def __init__(
        self,
        *,
        models: Sequence[str] = ("scripted-model",),
        port: int = 0,
        fallback: Callable[[dict[str, Any]], Reply] = echo,
    ) -> None:
        self.models = list(models)
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []
        self.disconnects = 0
        self.resets = 0
        """Connections the server aborted with a reset (`reset` replies), bytes before it sent."""
        self._fallback = fallback
        self._port = port
        self._cond = threading.Condition()
        self._queue: collections.deque[Reply] = collections.deque()
        self._gates: collections.deque[_Gate] = collections.deque()
        self._prereleased = 0
        self._stopping = False
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.base_url = ""

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> ScriptedServer:
        """Bind a free port and serve in a daemon thread, so tests never collide."""
        handler = type("_BoundHandler", (_Handler,), {"scripted": self})
        self._httpd = _Server(("127.0.0.1", self._port), handler)
        self._httpd.daemon_threads = True
        port = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="scripted-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and open every gate so no handler thread is left blocked."""
        with self._cond:
            self._stopping = True
            for gate in self._gates:
                gate.event.set()
            self._gates.clear()
            self._cond.notify_all()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripting ---------------------------------------------------------

    def script(self, *replies: Reply) -> None:
        """Queue replies; each incoming chat request consumes exactly one."""
        with self._cond:
            self._queue.extend(replies)

    def always(self, reply: Reply) -> None:
        """Answer every request the script does not cover with ``reply``, e.g. a model
        that never stops calling tools."""
        with self._cond:
            self._fallback = lambda body: reply

    def release(self) -> None:
        """Open the gate of the oldest held reply.

        Called before the held reply is dispatched, it pre-opens the next gate,
        so tests need not race the handler thread.
        """
        with self._cond:
            if self._gates:
                self._gates.popleft().event.set()
            else:
                self._prereleased += 1

    @property
    def pending(self) -> int:
        """Scripted replies not yet consumed, to assert a test used its whole script."""
        with self._cond:
            return len(self._queue)

    async def wait_requests(self, n: int, timeout: float = 5) -> None:
        """Wait until ``n`` chat requests have arrived, without blocking the event loop."""
        await self._wait(lambda: len(self.requests) >= n, timeout, f"{n} requests")

    async def wait_disconnects(self, n: int = 1, timeout: float = 5) -> None:
        """Wait until clients have closed ``n`` connections while a reply was held.

        This is how a test proves a cancelled client really closed its response.
        """
        await self._wait(lambda: self.disconnects >= n, timeout, f"{n} disconnects")

    def block_until_reset(self, n: int = 1, timeout: float = 5) -> None:
        """Block the calling thread until ``n`` `reset` replies were sent and reset.

        For a test that must keep its event loop busy while the server acts, so that
        the bytes and the reset both wait in the client's socket when the loop resumes.
        """
        with self._cond:
            if not self._cond.wait_for(lambda: self.resets >= n or self._stopping, timeout):
                raise TimeoutError(f"scripted server: waited {timeout}s for {n} resets")

    async def _wait(self, predicate: Callable[[], bool], timeout: float, what: str) -> None:
        def block() -> bool:
            with self._cond:
                return self._cond.wait_for(lambda: predicate() or self._stopping, timeout)

        if not await asyncio.to_thread(block) or not predicate():
            raise TimeoutError(f"scripted server: waited {timeout}s for {what}")

    # -- used by the handler -------------------------------------------------

    def _dispatch(
        self, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[Reply, _Gate | None]:
        with self._cond:
            self.requests.append(body)
            self.request_headers.append(headers)
            reply = self._queue.popleft() if self._queue else self._fallback(body)
            gate = None
            if reply.hold:
                gate = _Gate(opened=self._stopping or self._prereleased > 0)
                if self._prereleased > 0:
                    self._prereleased -= 1
                elif not self._stopping:
                    self._gates.append(gate)
            self._cond.notify_all()
            return reply, gate

    def _note_disconnect(self) -> None:
        with self._cond:
            self.disconnects += 1
            self._cond.notify_all()

    def _next_id(self) -> int:
        return next(self._ids)


class _Handler(BaseHTTPRequestHandler):
    """Speaks just enough HTTP/1.1 (keep-alive, chunked SSE) for the openai SDK."""

    protocol_version = "HTTP/1.1"
    scripted: ScriptedServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silence per-request logging: test output should show only failures."""

    # -- routing -----------------------------------------------------------

    def do_GET(self) -> None:
        """Serve the model list so clients that probe ``/models`` work."""
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            data = [
                {"id": name, "object": "model", "created": 0, "owned_by": "scripted"}
                for name in self.scripted.models
            ]
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._not_found()

    def do_POST(self) -> None:
        """Answer chat completions from the script; anything else is a 404."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.split("?")[0].rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._not_found()
            return
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("body is not an object")
        except ValueError as exc:
            self._send_json(400, _error_body(f"invalid JSON body: {exc}", "invalid_request_error"))
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        reply, gate = self.scripted._dispatch(body, headers)
        try:
            if reply.hold == "before" and gate is not None:
                self._await_gate(gate)
            if reply.kind == "error":
                self._send_json(reply.status, reply.body or {}, reply.headers)
            elif body.get("stream"):
                self._stream(body, reply, gate)
            else:
                self._complete(body, reply)
        except (_ClientGone, BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _not_found(self) -> None:
        self._send_json(404, _error_body(f"no route for {self.command} {self.path}", "not_found"))

    # -- plumbing ------------------------------------------------------------

    def _send_json(
        self, status: int, obj: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _await_gate(self, gate: _Gate) -> None:
        """Block until released, noticing if the client hangs up meanwhile."""
        while not gate.event.wait(0.01):
            if self._client_closed():
                self.scripted._note_disconnect()
                raise _ClientGone

    def _client_closed(self) -> bool:
        sock = self.connection
        try:
            readable, _, _ = select.select([sock], [], [], 0)
            if not readable:
                return False
            return sock.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    _chunked = True
    """The response being streamed uses chunked transfer encoding (else: ended by a close)."""

    def _write_chunk(self, payload: bytes) -> None:
        if self._chunked:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))
        elif payload:
            self.wfile.write(payload)

    def _event(self, obj: dict[str, Any] | str) -> None:
        data = obj if isinstance(obj, str) else json.dumps(obj)
        self._write_chunk(f"data: {data}\n\n".encode())

    # -- replies -------------------------------------------------------------

    def _stream(self, body: dict[str, Any], reply: Reply, gate: _Gate | None) -> None:
        self._chunked = reply.kind != "cutoff" or reply.framing == "chunked"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        if self._chunked:
            self.send_header("Transfer-Encoding", "chunked")
        if reply.kind == "cutoff":
            # The server closes after it: said in a header, so a client never reuses the
            # connection for its next request while the close is on its way (a failed
            # request that no retry would save, where max_retries is 0).
            self.send_header("Connection", "close")
        self.end_headers()

        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        cid = f"chatcmpl-scripted-{self.scripted._next_id()}"
        model = str(body.get("model") or "scripted-model")
        created = int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            obj: dict[str, Any] = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": None,
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
            }
            if include_usage:
                obj["usage"] = None
            return obj

        if reply.kind in ("empty", "choiceless"):
            if reply.kind == "choiceless":
                for usage in ({}, _estimate_usage(body, 0)):
                    bare = chunk({})
                    bare["choices"] = []
                    bare["usage"] = usage or None
                    self._event(bare)
            self._event("[DONE]")
            self._write_chunk(b"")
            return
        deltas = list(self._deltas(reply))
        if reply.kind == "cutoff" and reply.cut is not None:
            deltas = deltas[: reply.cut]
        # Hold after the first piece (thinking or text), so the client has something to
        # show; "answer" holds after the thinking, before the first text.
        hold_after = 1 if reply.pieces or reply.reasoning else 0
        if reply.hold == "answer":
            hold_after = len(reply.reasoning)
        start = time.monotonic()
        for i, delta in enumerate(deltas):
            if reply.per_second and i:
                lag = start + i / reply.per_second - time.monotonic()
                if lag > 0:
                    time.sleep(lag)
            self._event(chunk(delta))
            if i == hold_after and reply.hold in (True, "answer") and gate is not None:
                self._await_gate(gate)
        if reply.kind == "drop":
            # End the handler without the terminating chunk: the client sees a torn stream.
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if reply.kind == "reset":
            self._reset()
            return
        if reply.kind == "cutoff":
            # The body ends as a whole one would, only too soon: no finish, no [DONE].
            self._write_chunk(b"")
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_WR)
            return
        if reply.kind == "malformed":
            self._event(reply.raw)
            self._event(chunk({}, "stop"))
            self._event("[DONE]")
            self._write_chunk(b"")
            return
        finish = "tool_calls" if reply.calls else "stop"
        self._event(chunk({}, finish))
        if include_usage:
            usage = reply.usage or _estimate_usage(body, _completion_chars(reply))
            final = chunk({})
            final["choices"] = []
            final["usage"] = usage
            self._event(final)
        if reply.done:
            self._event("[DONE]")
        self._write_chunk(b"")

    def _reset(self) -> None:
        """Close with SO_LINGER 0, so the kernel sends RST instead of an orderly FIN."""
        self.wfile.flush()
        self.close_connection = True
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        with self.scripted._cond:
            self.scripted.resets += 1
            self.scripted._cond.notify_all()

    def _deltas(self, reply: Reply) -> Iterator[dict[str, Any]]:
        """The deltas in wire order: role first, then thinking, text, tool-call fragments.

        Thinking comes as DeepSeek sends it (``content`` null beside
        ``reasoning_content``) or as Ollama does (``content`` empty beside ``reasoning``).
        """
        yield {"role": "assistant", "content": ""}
        field = reply.reasoning_field
        for piece in reply.reasoning:
            yield {"content": None if field == "reasoning_content" else "", field: piece}
        for piece in reply.pieces:
            yield {"content": piece}
        for index, (name, args) in enumerate(reply.calls):
            call_id = f"call_{self.scripted._next_id():04d}"
            yield {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }
                ]
            }
            for frag in pieces(args, max(1, math.ceil(len(args) / 3))):
                yield {"tool_calls": [{"index": index, "function": {"arguments": frag}}]}

    def _complete(self, body: dict[str, Any], reply: Reply) -> None:
        if reply.kind == "reset":
            self._reset()
            return
        if reply.kind in ("drop", "malformed", "empty", "choiceless", "cutoff"):
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
        if reply.reasoning:
            message[reply.reasoning_field] = reply.thought
        if reply.calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{self.scripted._next_id():04d}",
                    "type": "function",
                    "function": {"name": name, "arguments": args},
                }
                for name, args in reply.calls
            ]
        self._send_json(
            200,
            {
                "id": f"chatcmpl-scripted-{self.scripted._next_id()}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": str(body.get("model") or "scripted-model"),
                "system_fingerprint": None,
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "logprobs": None,
                        "finish_reason": "tool_calls" if reply.calls else "stop",
                    }
                ],
                "usage": reply.usage or _estimate_usage(body, _completion_chars(reply)),
            },
        )


def _completion_chars(reply: Reply) -> int:
    calls = sum(len(name) + len(args) for name, args in reply.calls)
    return len(reply.thought) + len(reply.content) + calls


def _error_body(message: str, err_type: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": err_type, "code": None, "param": None}}


def main(argv: Sequence[str] | None = None) -> int:
    """Serve echo (or long paced) replies forever, for manual runs and benchmarks."""
    parser = argparse.ArgumentParser(prog="python -m devtools.scripted_server", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: free)")
    parser.add_argument(
        "--tokens-per-second", type=float, default=None, help="pace streamed chunks at this rate"
    )
    parser.add_argument(
        "--reply-words", type=int, default=0, help="answer with this many words instead of echo"
    )
    args = parser.parse_args(argv)
    rate = args.tokens_per_second

    def fallback(body: dict[str, Any]) -> Reply:
        if args.reply_words > 0:
            return words(args.reply_words, per_second=rate)
        reply = echo(body)
        return Reply(kind="text", pieces=reply.pieces, per_second=rate)

    server = ScriptedServer(port=args.port, fallback=fallback).start()
    print(server.base_url, flush=True)
    stop = threading.Event()
    with contextlib.suppress(KeyboardInterrupt):
        stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
