"""The ``reasonloop`` command line. Each group of commands lives in its own module."""

from reasonloop.cli.app import app, main

__all__ = ["app", "main"]
