"""``python -m syntax_nmt.demo`` (``make demo``)."""

from syntax_nmt.demo.cli import cli_main

if __name__ == "__main__":
    cli_main()
