from syntax_nmt.export.cli import cli_main

cli_main()
