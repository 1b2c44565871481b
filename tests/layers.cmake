# Includes only go down the layers (docs/architecture.md): base, formats,
# analyzers, then the snapshot and the CLI (tests/test_layers.py).
hs_pytest(layers test_layers.py)
