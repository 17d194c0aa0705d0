"""The example project's own tests: its demo, its seed command, its agents, its settings.

They run in the suite's test database, beside the tests' own app, under the example's
URLs and SYMFONIC settings (``conftest.py``)."""

#: The example's app, which tests/settings.py installs so that these tests find its tables.
EXAMPLE_APPS = ["example_project.shop"]
