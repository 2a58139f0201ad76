"""The ``lnbench`` command line: thin Typer commands over the experiments' registry."""
