"""The suite's /proc scan holds on a shared machine: whatever other processes run there."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.mcp_proxy._support import processes_marked

MARK = "S3CLAIM_TEST_SCAN"


@contextmanager
def _sleeper(tmp_path: Path, *, env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """A process named and called with bytes that are not UTF-8, as anyone's may be: its
    executable a link named b'\\xff...' (so /proc/PID/stat's name is not UTF-8) and an
    argument b'\\xfe'. It is running once it has read a line from us."""
    link = os.path.join(os.fsencode(tmp_path), b"\xffpython\xfe")
    os.symlink(sys.executable, link)
    code = b"import sys; sys.stdin.readline(); print(flush=True); sys.stdin.readline()"
    with subprocess.Popen(
        [link, b"-c", code, b"\xfe"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(b"\n")
            process.stdin.flush()
            process.stdout.readline()  # it runs, under its own name
            yield process
        finally:
            process.kill()


def test_a_stranger_whose_name_and_arguments_are_not_utf8_is_passed_over(
    tmp_path: Path,
) -> None:
    with _sleeper(tmp_path, env={"PATH": os.environ["PATH"]}):
        assert processes_marked(MARK, uuid.uuid4().hex) == []


def test_a_marked_process_with_such_arguments_is_found_with_them(tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    with _sleeper(tmp_path, env={"PATH": os.environ["PATH"], MARK: mark}) as process:
        ((pid, cmdline),) = processes_marked(MARK, mark)
        assert pid == process.pid
        assert os.fsencode(cmdline).endswith(b" \xfe")
