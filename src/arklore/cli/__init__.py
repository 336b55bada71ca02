"""The `arklore` command line: one module per area, each owning its Typer apps, registered in
one place (:mod:`arklore.cli.app`, whose ``main`` is the console script)."""
