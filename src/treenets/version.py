"""The version of treenets (also in pyproject.toml)."""

__version__ = "0.1.0"
