"""The ``lnbench`` console script. Its first act: a Ctrl-C from here until a command starts
writing is one line and exit code 130, at once, even in the middle of an import (NumPy, torch),
not a traceback (:func:`lnbench.launchers.interrupts.exit_at_once`). The commands take over
from there (:func:`lnbench.cli.console.guarded`)."""

from __future__ import annotations

from lnbench.launchers import interrupts

STARTING = "lnbench: interrupted: stopped by Ctrl-C while starting; nothing was written"


def main() -> None:
    interrupts.exit_at_once(STARTING)
    from lnbench.cli.app import app

    app(prog_name="lnbench")


if __name__ == "__main__":
    main()
