"""S3 servers on 127.0.0.1 for the tests and the benchmarks, and a wire counter for clients.

Two kinds of server, for two kinds of figure:

- `MotoServer`: moto's HTTP server in this process. Requests and bytes are counted here, the
  same as the test suite counts them; its in-process backend lets 10,000 objects be seeded
  without 10,000 PUTs. moto reads the whole object for every ranged GET, so its latencies grow
  with the object whatever the client asks for: it is never used to *time* a fetch.
- `S3rver`: the npm package s3rver, a file-backed S3 that streams ranges from disk, started as
  a subprocess. Fetch latency, concurrency and fetch memory are measured against it. When it
  cannot be installed or started, `MotoSubprocess` (moto's server in a child process) stands
  in and the report says so. `S3rver(tls=True)` serves https, on a self-signed certificate
  made at start (`certificate`, which `make_client` trusts).

Every server binds 127.0.0.1 on a free port and is stopped by its process group's id;
nothing here reaches past loopback.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import boto3
from botocore.config import Config

from devkit.third_party import S3RVER_VERSION, NpmUnavailable, install_s3rver

__all__ = [
    "ChildServer",
    "Endpoint",
    "MotoServer",
    "MotoServerCommand",
    "MotoSubprocess",
    "S3rver",
    "S3rverUnavailable",
    "Wire",
    "free_port",
    "make_client",
    "start_timing_server",
    "stop_session",
]

_START_TIMEOUT = 30.0


class Endpoint(Protocol):
    url: str
    name: str
    credentials: tuple[str, str]

    def stop(self) -> None: ...


def make_client(endpoint: Endpoint, *, pool: int = 10) -> Any:
    """A client that makes one attempt per call, path-style, on the endpoint's credentials
    (trusting its certificate, when it serves https on one of its own)."""
    key, secret = endpoint.credentials
    certificate = getattr(endpoint, "certificate", None)
    return boto3.client(
        "s3",
        endpoint_url=endpoint.url,
        verify=str(certificate) if certificate else None,
        region_name="us-east-1",
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        config=Config(
            retries={"total_max_attempts": 1},
            s3={"addressing_style": "path"},
            max_pool_connections=pool,
        ),
    )


@dataclass
class Wire:
    """What a client sent and received: HTTP requests per operation, response body bytes."""

    requests: Counter[str] = field(default_factory=Counter)
    response_bytes: Counter[str] = field(default_factory=Counter)
    request_bytes: Counter[str] = field(default_factory=Counter)
    seconds: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    """Time from sending a request to its parsed answer, per operation (failed calls: none)."""
    _sent_at: dict[int, float] = field(default_factory=dict, repr=False)

    @classmethod
    def attach(cls, client: Any) -> Wire:
        wire = cls()
        client.meta.events.register("before-send.s3.*", wire._on_send)
        client.meta.events.register("after-call.s3.*", wire._on_response)
        return wire

    def _on_send(self, request: Any, event_name: str, **_: Any) -> None:
        operation = event_name.rsplit(".", 1)[-1]
        self.requests[operation] += 1
        self._sent_at[threading.get_ident()] = time.perf_counter()
        body = request.body
        if isinstance(body, bytes | bytearray):
            self.request_bytes[operation] += len(body)
        elif body is not None and hasattr(body, "seek") and hasattr(body, "tell"):
            here = body.tell()
            body.seek(0, os.SEEK_END)
            self.request_bytes[operation] += body.tell() - here
            body.seek(here)

    def _on_response(self, http_response: Any, event_name: str, **_: Any) -> None:
        # The body of a GetObject is still unread here; its Content-Length is what will arrive.
        length = http_response.headers.get("content-length")
        operation = event_name.rsplit(".", 1)[-1]
        self.response_bytes[operation] += int(length or 0)
        sent = self._sent_at.pop(threading.get_ident(), None)
        if sent is not None:
            self.seconds[operation] += time.perf_counter() - sent

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())

    @property
    def total_response_bytes(self) -> int:
        return sum(self.response_bytes.values())

    def clear(self) -> None:
        self.requests.clear()
        self.response_bytes.clear()
        self.request_bytes.clear()
        self.seconds.clear()


class MotoServer:
    """moto's threaded HTTP server in this process, sharing its backend with `seed`."""

    name = "moto (in-process)"
    credentials = ("testing", "testing")

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.url = f"http://{host}:{port}"

    def seed(self, bucket: str, keys: list[str], body: bytes) -> None:
        """Objects straight into the backend the server serves: fast, and no request counted."""
        from moto.core import DEFAULT_ACCOUNT_ID  # type: ignore[attr-defined]
        from moto.s3.models import s3_backends

        backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
        for key in keys:
            backend.put_object(bucket, key, body)

    def stop(self) -> None:
        self._server.stop()


class S3rverUnavailable(RuntimeError):
    """s3rver could not be installed or started; the message says why."""


class ChildServer:
    """A server in a child process on 127.0.0.1, data in a temporary directory."""

    name = "server"
    credentials = ("S3RVER", "S3RVER")
    certificate: Path | None = None
    """The self-signed certificate an https server presents (None: plain http)."""

    def __init__(
        self,
        argv: list[str],
        *,
        ready: re.Pattern[str],
        port: int | None,
        env: dict[str, str] | None = None,
        files: dict[str, bytes] | None = None,
        scheme: str = "http",
    ) -> None:
        self._dir = tempfile.mkdtemp(prefix="s3claim-dev-")
        for name, data in (files or {}).items():  # what argv names as {dir}/NAME
            Path(self._dir, name).write_bytes(data)
        argv = [a.replace("{dir}", self._dir) for a in argv]
        self._scheme = scheme
        self._process = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
        self.url = self._wait_ready(ready, port)

    def _wait_ready(self, ready: re.Pattern[str], port: int | None) -> str:
        deadline = time.monotonic() + _START_TIMEOUT
        assert self._process.stdout is not None
        seen: list[str] = []
        if port is not None:  # a server that prints nothing useful: poll its port
            while time.monotonic() < deadline and self._process.poll() is None:
                with socket.socket() as probe:
                    if probe.connect_ex(("127.0.0.1", port)) == 0:
                        return f"{self._scheme}://127.0.0.1:{port}"
                time.sleep(0.05)
        else:
            while time.monotonic() < deadline:
                line = self._process.stdout.readline()
                if not line:
                    break
                seen.append(line.strip())
                found = ready.search(line)
                if found:
                    return f"{self._scheme}://127.0.0.1:{found.group(1)}"
        self.stop()
        said = " | ".join(seen[-5:]) or "no output"
        raise S3rverUnavailable(f"{self.name} did not start: {said}")

    def stop(self) -> None:
        stop_session(self._process, timeout=10)
        if self._process.stdout is not None:
            self._process.stdout.close()
        shutil.rmtree(self._dir, ignore_errors=True)


class S3rver(ChildServer):
    """s3rver from the npm registry, installed into devkit/.node on first use; with `tls`,
    on https, with a certificate for 127.0.0.1 made here (`certificate`)."""

    name = f"s3rver {S3RVER_VERSION}"

    def __init__(self, *, tls: bool = False) -> None:
        binary = install_s3rver()
        # --silent: one log line per request would fill the pipe nobody reads after start.
        argv = [str(binary), "-d", "{dir}/data", "-a", "127.0.0.1", "-p", "0", "--silent"]
        files = None
        if tls:
            argv += ["--key", "{dir}/key.pem", "--cert", "{dir}/cert.pem"]
            files = dict(zip(("cert.pem", "key.pem"), self_signed_loopback(), strict=True))
        super().__init__(
            argv,
            ready=re.compile(r"listening on 127\.0\.0\.1:(\d+)"),
            port=None,
            # s3rver encrypts ListObjectsV2 continuation tokens with DES, which OpenSSL 3
            # (Node 18+) only offers from its legacy provider: without it every truncated
            # listing is a 500.
            env={"NODE_OPTIONS": "--openssl-legacy-provider"},
            files=files,
            scheme="https" if tls else "http",
        )
        if tls:
            self.certificate = Path(self._dir, "cert.pem")


class MotoSubprocess(ChildServer):
    """The fallback timing server: moto in a child process (whole-object reads per GET)."""

    name = "moto (subprocess; fallback)"
    credentials = ("testing", "testing")

    def __init__(self) -> None:
        port = free_port()
        super().__init__(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            ready=re.compile(r"$^"),
            port=port,
        )


class MotoServerCommand(ChildServer):
    """moto's own `moto_server` command, typed as a user types it: `moto_server -p PORT`.

    The moto the project installs (the `demo` extra), unpatched, on its default host
    (127.0.0.1): what terraform/README.md tells a user to start for `examples/local`.
    """

    name = "moto_server"
    credentials = ("testing", "testing")

    def __init__(self) -> None:
        binary = Path(sys.executable).parent / "moto_server"
        if not binary.exists():
            raise FileNotFoundError(f"{binary} is missing: the demo extra installs it")
        port = free_port()
        super().__init__([str(binary), "-p", str(port)], ready=re.compile(r"$^"), port=port)


def start_timing_server() -> tuple[Endpoint, str | None]:
    """s3rver if it can be had, else moto in a child process and the reason why not."""
    try:
        return S3rver(), None
    except (S3rverUnavailable, NpmUnavailable, OSError, subprocess.SubprocessError) as exc:
        return MotoSubprocess(), str(exc)


def stop_session(process: subprocess.Popen[Any], *, timeout: float) -> None:
    """End a child started with `start_new_session=True`, and its children: TERM, then KILL."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=timeout)


def free_port() -> int:
    """A port free on 127.0.0.1 now (a child server binds it next)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def self_signed_loopback() -> tuple[bytes, bytes]:
    """(certificate, private key), PEM: self-signed for 127.0.0.1, valid for a day."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return (
        certificate.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )
