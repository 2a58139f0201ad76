"""The ``lnbench`` console script: a Ctrl-C while the heavy modules (torch, matplotlib, ...) are
still importing is one line and exit code 130, like a Ctrl-C later on, not a traceback."""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from lnbench.cli.app import app
    except KeyboardInterrupt:
        sys.stderr.write("lnbench: interrupted: stopped by Ctrl-C while starting; nothing was written\n")
        raise SystemExit(130) from None
    app(prog_name="lnbench")


if __name__ == "__main__":
    main()
