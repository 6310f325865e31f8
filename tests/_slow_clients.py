"""Clients that take their time, for the header timeout of our HTTP servers (`s3claim.mcp`):
connections whose request never finishes, and a reader that drains a large body slowly."""

from __future__ import annotations

import http.client
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

__all__ = ["read_slowly", "stalled", "stalled_readers", "status_of", "still_open"]

_PARTS = (
    b"GET /claims/",  # a request line cut short
    b"GET /claims/x HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: bytes=0-",  # headers cut short
    b"",  # nothing at all
)
_RECEIVE_BUFFER = 16_384
_PIECE = 65_536


@contextmanager
def stalled(url: str, count: int) -> Iterator[list[socket.socket]]:
    """`count` connections to the server of `url`, each sending a part of a request and no
    more (a request line cut short, headers cut short, or nothing), closed at the end."""
    parts = urlsplit(url)
    assert parts.hostname == "127.0.0.1" and parts.port is not None
    socks: list[socket.socket] = []
    try:
        for n in range(count):
            sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
            socks.append(sock)
            if _PARTS[n % len(_PARTS)]:
                sock.sendall(_PARTS[n % len(_PARTS)])
        yield socks
    finally:
        for sock in socks:
            sock.close()


def still_open(socks: list[socket.socket], *, within: float) -> list[int]:
    """The indices of the connections the server has not closed `within` seconds from now
    (whatever it sent before closing is read and dropped)."""
    deadline = time.monotonic() + within
    held: list[int] = []
    for index, sock in enumerate(socks):
        while True:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                if not sock.recv(4096):
                    break
            except TimeoutError:
                held.append(index)
                break
            except ConnectionError:  # reset: closed too
                break
    return held


def read_slowly(url: str, *, size: int, seconds: float) -> tuple[int, bytes, float]:
    """GET `url` on a connection with a small receive buffer, reading its body of about `size`
    bytes in pieces spread over about `seconds`, so the server waits on the reader:
    (status, body, seconds the body took)."""
    parts = urlsplit(url)
    assert parts.hostname == "127.0.0.1" and parts.port is not None
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _RECEIVE_BUFFER)  # before connect
    sock.settimeout(30)
    sock.connect((parts.hostname, parts.port))
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    connection.sock = sock
    try:
        connection.request("GET", f"{parts.path}?{parts.query}" if parts.query else parts.path)
        response = connection.getresponse()
        pause = seconds * _PIECE / max(size, 1)
        started = time.monotonic()
        body = bytearray()
        while piece := response.read(_PIECE):
            body += piece
            time.sleep(pause)
        return response.status, bytes(body), time.monotonic() - started
    finally:
        connection.close()


@contextmanager
def stalled_readers(url: str, count: int) -> Iterator[list[socket.socket]]:
    """`count` connections each sending the whole GET of `url`, then reading nothing: their
    receive buffers are small, so the server is left holding what it has not sent."""
    parts = urlsplit(url)
    assert parts.hostname == "127.0.0.1" and parts.port is not None
    target = f"{parts.path}?{parts.query}" if parts.query else parts.path
    request = f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect
            sock.settimeout(10)
            sock.connect((parts.hostname, parts.port))
            sock.sendall(request)
            socks.append(sock)
        yield socks
    finally:
        for sock in socks:
            sock.close()


def status_of(sock: socket.socket) -> int:
    """The status of the answer a stalled reader's connection holds (read now, its start)."""
    head = b""
    while b"\r\n" not in head:
        piece = sock.recv(64)
        if not piece:
            break
        head += piece
    return int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 0
