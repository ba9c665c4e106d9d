"""ASGI entry point for servers started by import string (``uvicorn --factory``, several workers).

``reasonloop serve`` passes the config file through ``REASONLOOP_SERVE_CONFIG`` so every
worker process loads the same settings.
"""

from __future__ import annotations

import os

from fastapi import FastAPI

from reasonloop.config import load_settings
from reasonloop.server.app import create_app
from reasonloop.server.transport.process import tune_for_serving

__all__ = ["CONFIG_ENV", "app_from_env"]

CONFIG_ENV = "REASONLOOP_SERVE_CONFIG"


def app_from_env() -> FastAPI:
    """The app for the config file named by ``REASONLOOP_SERVE_CONFIG`` (or ``./reasonloop.toml``)."""
    app = create_app(load_settings(os.environ.get(CONFIG_ENV) or None))
    tune_for_serving()
    return app
