"""``python -m lnbench``: the command line."""

from lnbench.cli import app

app(prog_name="lnbench")
