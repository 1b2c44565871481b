# Includes only go down the layers (docs/architecture.md): base, formats,
# analyzers, then the snapshot and the CLI (tests/test_layers.py).
hs_pytest(layers test_layers.py)

# The man page, the completion and --help against the parser (tests/test_cli_docs.py).
hs_pytest(cli_docs test_cli_docs.py)
