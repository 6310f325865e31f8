"""Background: side work of a check-in on a worker thread, in its caller's context."""

from __future__ import annotations

import contextvars
import threading

import pytest

from s3claim._background import Background

_label: contextvars.ContextVar[str] = contextvars.ContextVar("label", default="unset")


def test_meanwhile_runs_here_on_this_thread_and_beside_on_a_worker() -> None:
    background = Background(2, "test-meanwhile")
    _label.set("caller")
    here, beside = background.meanwhile(
        lambda: threading.current_thread().name,
        lambda: (threading.current_thread().name, _label.get()),
    )
    assert here == threading.current_thread().name
    assert beside[0].startswith("test-meanwhile") and beside[1] == "caller"


def test_meanwhile_raises_what_beside_raised_once_here_is_done() -> None:
    background = Background(1, "test-meanwhile-fails")
    done: list[str] = []

    def fails() -> None:
        raise LookupError("beside failed")

    with pytest.raises(LookupError, match="beside failed"):
        background.meanwhile(lambda: done.append("here"), fails)
    assert done == ["here"]


def test_meanwhile_waits_for_beside_when_here_raises() -> None:
    background = Background(1, "test-meanwhile-here-fails")
    finished = threading.Event()

    def slow() -> None:
        finished.wait(0.05)  # still running when `here` raises
        finished.set()

    def fails() -> None:
        raise KeyError("here failed")

    with pytest.raises(KeyError, match="here failed"):
        background.meanwhile(fails, slow)
    assert finished.is_set()
