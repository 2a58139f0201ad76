"""``python -m lnbench``: the command line."""

from lnbench._entry import main

main()
