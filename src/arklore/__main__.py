"""``python -m arklore``: the ``arklore`` command, for a venv whose scripts are not on PATH."""

from arklore.cli.app import main

if __name__ == "__main__":
    main()
