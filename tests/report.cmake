# The HTML report, rendered by headless Chromium.
hs_pytest(report test_report.py)
hs_pytest(schema test_schema.py)
