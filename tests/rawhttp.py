"""A hostile web server on 127.0.0.1 for the tests: each path answered with raw bytes or by a function writing to
the socket, so it can send what no HTTP server library would (a malformed status line or chunk, 101 headers, a
100 KB header line, a body a byte at a time). Every connection ends when the server is closed."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable

Handler = Callable[[socket.socket, threading.Event], None]


def answer(body: bytes, status: str = "200 OK", headers: dict[str, str] | None = None) -> bytes:
    """A well-formed HTTP/1.1 answer that closes its connection."""
    head = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", "Connection: close"]
    head += [f"{name}: {value}" for name, value in (headers or {}).items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def drip(data: bytes, every_s: float) -> Handler:
    """Send ``data`` a byte every ``every_s`` seconds (until the server is closed)."""

    def send(connection: socket.socket, stop: threading.Event) -> None:
        for byte in data:
            if stop.wait(every_s):
                return
            connection.sendall(bytes([byte]))

    return send


def then(first: bytes, rest: Handler) -> Handler:
    """Send ``first`` at once, then as ``rest`` does."""

    def send(connection: socket.socket, stop: threading.Event) -> None:
        connection.sendall(first)
        rest(connection, stop)

    return send


def after(delay_s: float, data: bytes) -> Handler:
    """Send ``data`` once ``delay_s`` seconds have passed."""

    def send(connection: socket.socket, stop: threading.Event) -> None:
        if not stop.wait(delay_s):
            connection.sendall(data)

    return send


class RawServer:
    """Answers ``routes[path]`` (bytes sent as they are, or a Handler); 404 for any other path."""

    def __init__(self) -> None:
        self.routes: dict[str, bytes | Handler] = {}
        self.requests: list[str] = []
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.5)  # how late a close is noticed where shutdown does not wake accept
        self.port = self._listener.getsockname()[1]
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept at once (Linux)
        for thread in self._threads:
            thread.join(timeout=5)
        self._listener.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:  # shut down
                return
            thread = threading.Thread(target=self._serve, args=(connection,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, connection: socket.socket) -> None:
        with connection:
            connection.settimeout(5)
            request = b""
            deadline = time.monotonic() + 5
            try:
                while b"\r\n\r\n" not in request and time.monotonic() < deadline:
                    chunk = connection.recv(65536)
                    if not chunk:
                        return
                    request += chunk
                path = request.split(b" ", 2)[1].decode("latin-1")
                self.requests.append(path)
                route = self.routes.get(path, answer(b"not found", "404 Not Found"))
                if isinstance(route, bytes):
                    connection.sendall(route)
                else:
                    route(connection, self._stop)
            except OSError:  # the client gave up first: what the tests want of it
                return
