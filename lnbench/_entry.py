"""The ``lnbench`` console script. Its first act: a Ctrl-C from here until a command starts
writing is one line and exit code 130, at once, even in the middle of an import (NumPy, torch),
not a traceback (:func:`lnbench.launchers.interrupts.exit_at_once`). The commands take over
from there (:func:`lnbench.cli.console.guarded`); once the command is over, Ctrl-C is ignored
while Python shuts down."""

from __future__ import annotations

import signal
import warnings

from lnbench.launchers import interrupts

STARTING = "lnbench: interrupted: stopped by Ctrl-C while starting; nothing was written"


def one_line_warning(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, line: str | None = None
) -> str:
    """A warning as the command line shows it: one line, ``lnbench: warning: <message>`` (not
    Python's file, line number and source line)."""
    return f"lnbench: warning: {message}\n"


def main() -> None:
    interrupts.exit_at_once(STARTING)
    warnings.formatwarning = one_line_warning
    from lnbench.cli.app import app

    try:
        app(prog_name="lnbench")
    finally:
        # The command is over. Python's shutdown resets handlers to the default, under which a
        # Ctrl-C in that moment (torch's teardown) ends the process silently by SIGINT; an ignored
        # signal stays ignored, and the command's own exit code stands.
        signal.signal(signal.SIGINT, signal.SIG_IGN)


if __name__ == "__main__":
    main()
