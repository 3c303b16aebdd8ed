"""A hostile web server for tests, on 127.0.0.1 (or another loopback address): each path answers with raw bytes, as
slowly, as long or as broken as a test asks, and the server counts what it managed to send. Nothing leaves the
machine; every behaviour ends when the client goes away or the server closes.

The bad-server corpus is ``BROKEN``: answers that are no HTTP a client may trust, each of which the robots.txt
check and adoption must turn into a finding, never a crash or a hang.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

Behaviour = Callable[["Conversation"], None]
T = TypeVar("T")


class Conversation:
    """One connection: the path asked for, and ways to answer on it that stop when the server closes."""

    def __init__(self, server: Hostile, sock: socket.socket, path: str) -> None:
        self.server, self.sock, self.path = server, sock, path

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)
        self.server.sent[self.path] = self.server.sent.get(self.path, 0) + len(data)

    def wait(self, seconds: float) -> None:
        if self.server.stopped.wait(seconds):
            raise ConnectionAbortedError("server closed")


class Hostile:
    """Answers each path with its behaviour (the path with its query, else without it; 404 otherwise); ``asked``
    lists the paths in order, ``sent`` the body bytes each path's answers managed to send before the client went
    away."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.routes: dict[str, Behaviour] = {}
        self.asked: list[str] = []
        self.sent: dict[str, int] = {}
        self.stopped = threading.Event()
        self._listener = socket.create_server((host, 0))
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        self.base = f"http://{host}:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, path: str) -> str:
        return self.base + path

    def close(self) -> None:
        self.stopped.set()
        self._listener.close()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                sock, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        with sock, contextlib.suppress(OSError):
            sock.settimeout(5)
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 65_536:
                data = sock.recv(4096)
                if not data:
                    return
                head += data
            path = head.split(b" ", 2)[1].decode("latin-1") if head.count(b" ") >= 2 else "/"
            self.asked.append(path)
            behaviour = self.routes.get(path) or self.routes.get(path.partition("?")[0]) or reply(404, b"not found")
            behaviour(Conversation(self, sock, path))


def reply(status: int, body: bytes, headers: dict[str, str] | None = None) -> Behaviour:
    """A plain answer with a Content-Length."""

    def answer(talk: Conversation) -> None:
        lines = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}", "Connection: close"]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        talk.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        talk.send(body)

    return answer


def redirect(location: str, status: int = 302) -> Behaviour:
    return reply(status, b"", {"Location": location})


def endless(size: int, first: bytes = b"", last: bytes = b"", fill: bytes = b"# filler\n") -> Behaviour:
    """A body of ``size`` bytes announced with its length (``first``, filler, ``last``), made as it is sent."""

    def answer(talk: Conversation) -> None:
        talk.sock.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n".encode())
        talk.send(first)
        left = size - len(first) - len(last)
        block = fill * (65_536 // len(fill))
        while left > 0:
            talk.send(block[:left])
            left -= min(left, len(block))
        talk.send(last)

    return answer


def trickle(head: bytes, body: bytes, every: float = 0.05) -> Behaviour:
    """``head`` (a status line and headers, or part of them) at once, then ``body`` one byte every ``every`` s:
    each byte well within any socket timeout, the whole far longer than a test may wait."""

    def answer(talk: Conversation) -> None:
        talk.sock.sendall(head)
        for byte in body:
            talk.wait(every)
            talk.send(bytes([byte]))

    return answer


def slow(body: bytes, every: float) -> Behaviour:
    """A 200 answer whose headers come at once and whose ``body`` comes one byte every ``every`` s."""
    return trickle(f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode(), body, every)


def hang() -> Behaviour:
    """Reads the request and never answers (until the server closes)."""

    def answer(talk: Conversation) -> None:
        talk.wait(60)

    return answer


def raw(data: bytes) -> Behaviour:
    """These bytes as the whole answer, then the connection closed."""

    def answer(talk: Conversation) -> None:
        talk.send(data)

    return answer


_OK = b"HTTP/1.1 200 OK\r\n"
BROKEN: dict[str, Behaviour] = {
    "closed at once": raw(b""),
    "a bad status line": raw(b"HTTP/1.1 OK\r\nContent-Length: 2\r\n\r\nok"),
    "no HTTP at all": raw(b"\x00\x01\x02\xff garbage\r\n\r\n"),
    "101 headers": raw(_OK + b"".join(b"X-H%d: v\r\n" % i for i in range(101)) + b"\r\n"),
    "a 100 KB header": raw(_OK + b"X-Big: " + b"v" * 100_000 + b"\r\n\r\n"),
    "a bad chunk size": raw(_OK + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"),
    "a body cut short": raw(_OK + b"Content-Length: 1000\r\n\r\nUser-agent: *\n"),
}


@contextlib.contextmanager
def hostile(host: str = "127.0.0.1") -> Iterator[Hostile]:
    server = Hostile(host)
    try:
        yield server
    finally:
        server.close()


def closed_port() -> int:
    """A port on 127.0.0.1 nobody listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def elapsed(action: Callable[[], T]) -> tuple[T, float]:
    """What ``action`` returned, and the seconds it took."""
    start = time.monotonic()
    result = action()
    return result, time.monotonic() - start
