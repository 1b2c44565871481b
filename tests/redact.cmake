# Redaction: secrets gone, analysis unchanged.
hs_fixture(secrets fixtures/secrets.c)
hs_pytest(redact test_redact.py)
# Snapshots of a changing heap, for heapdiff.
hs_fixture(phases fixtures/phases.c)
