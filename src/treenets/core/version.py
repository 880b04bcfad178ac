"""The version of treenets: the one place it is written (pyproject.toml reads it from here). It is the version of
the CHANGELOG's top entry (`0.11` is 0.11.0), which tests/test_version.py holds."""

__version__ = "0.11.0"
