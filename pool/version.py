"""The product's version, written once: pyproject.toml reads it (dynamic version), ``python -m pool.run
--version`` prints it, every summary.json records it, and CHANGELOG.md has a section per value it has taken.

A module of its own, importing nothing, so that what records the version never imports the package's
``__init__`` (which maps the API and would make a circle)."""

__version__ = "0.1.0"
