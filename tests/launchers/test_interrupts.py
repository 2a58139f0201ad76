"""Signals deferred out of imports and worker start-up, raised once, never twice."""

import os
import signal
import sys
import textwrap

import pytest

from lnbench.launchers import interrupts


@pytest.fixture
def module_that_is_interrupted(tmp_path, monkeypatch):
    """A module whose import sends this process SIGINT halfway through its body."""
    (tmp_path / "halfway.py").write_text(
        textwrap.dedent(
            """
            import os, signal, time
            FIRST = True
            os.kill(os.getpid(), signal.SIGINT)
            t = time.monotonic()
            while time.monotonic() - t < 0.2:  # bytecode runs: an undeferred handler would raise here
                pass
            DONE = True
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "halfway"
    sys.modules.pop("halfway", None)


def test_a_signal_inside_an_import_is_raised_once_the_import_is_done(module_that_is_interrupted):
    with pytest.raises(KeyboardInterrupt) as exc:
        with interrupts.handling():
            __import__(module_that_is_interrupted)
            while True:  # the retry delivers it within a few tens of milliseconds
                pass
    assert exc.value.args == ("Ctrl-C",)
    assert sys.modules[module_that_is_interrupted].DONE  # the module is whole: a second import would work


def test_a_signal_inside_a_deferred_block_is_raised_when_the_block_ends():
    steps = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts.handling():
            with interrupts.deferred():
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(3):
                    steps.append(len(steps))
                    interrupts.time.sleep(0.05)  # several retries come and go
            steps.append("after")
            while True:
                pass
    assert steps[:3] == [0, 1, 2]


def test_after_the_first_interrupt_further_signals_are_ignored():
    cleaned = False
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # whatever pytest started with
    with pytest.raises(KeyboardInterrupt):
        with interrupts.handling():
            try:
                os.kill(os.getpid(), signal.SIGINT)
                while True:
                    pass
            finally:  # the cleanup of the first interrupt is not cut short by a second one
                os.kill(os.getpid(), signal.SIGTERM)
                interrupts.time.sleep(0.05)
                cleaned = True
    assert cleaned
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the previous handler is back
    signal.signal(signal.SIGINT, before)


def test_sigterm_is_named():
    with pytest.raises(KeyboardInterrupt) as exc:
        with interrupts.handling():
            os.kill(os.getpid(), signal.SIGTERM)
            while True:
                pass
    assert exc.value.args == ("SIGTERM",)


def test_raise_pending_raises_a_signal_deferred_by_an_import_at_once(monkeypatch):
    """A Ctrl-C during an import is kept pending; raise_pending() raises it at the caller's safe
    point (driver.write_html: right after the renderer's import, before the page is written),
    not up to RETRY_SECONDS later; inside a deferred() block it waits for the block's end."""
    monkeypatch.setattr(interrupts, "_raised", False)
    monkeypatch.setattr(interrupts, "_pending", None)
    interrupts.raise_pending()  # nothing pending: nothing happens
    monkeypatch.setattr(interrupts, "_pending", signal.SIGINT)
    with interrupts.deferred():
        interrupts.raise_pending()  # deferred: still pending
    assert interrupts._pending == signal.SIGINT
    with pytest.raises(KeyboardInterrupt, match="Ctrl-C"):
        interrupts.raise_pending()
    assert interrupts._pending is None and interrupts._raised
