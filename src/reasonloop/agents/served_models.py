"""The models served on the server's machine that a run may pick instead of the server's own.

Offered only while ``[llm] provider = "auto"`` looks for served models (``[llm] discover``): a run
names one by the id ``GET /v1/llm`` lists, and only a model that discovery found is accepted, so
a client can never point the server at an address of its choosing. Each picked model's client is
built once and shared by every run that picks it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from reasonloop.config import Settings
from reasonloop.errors import RequestInvalid
from reasonloop.llm.base import LLM
from reasonloop.llm.discovery import discover, last_found
from reasonloop.registry import Registry

__all__ = ["ServedModels"]


class ServedModels:
    """Lists the served models and builds the one a run picks.

    Args:
        settings: The server's settings (``[llm]``: whether to look, where, and the options every
            picked model shares: timeouts, retries, sampling).
        registry: Where the provider classes come from.
        enabled: False when the runner was given its model in code: runs then use that one only.
    """

    def __init__(self, settings: Settings, registry: Registry | None = None, *, enabled: bool = True) -> None:
        self.llm_settings = settings.llm
        self.registry = registry
        self.enabled = enabled
        self._built: dict[str, LLM] = {}
        self._lock = asyncio.Lock()

    @property
    def offered(self) -> bool:
        """Whether runs may pick a served model at all."""
        llm = self.llm_settings
        return self.enabled and llm.provider == "auto" and llm.discover and not llm.base_url

    def check(self, model_id: str) -> None:
        """Refuse a model that is not offered, before the run is recorded.

        Raises:
            RequestInvalid: ``field`` is ``model``.
        """
        if not self.offered:
            raise RequestInvalid(
                'this server answers with its configured model only ([llm] provider is not "auto" or discover is off)',
                field="model",
            )
        found = last_found(self.llm_settings)
        if found is None or found.find(model_id) is None:
            raise RequestInvalid(
                f"no model {model_id!r} was found on the server's machine (GET /v1/llm lists them)", field="model"
            )

    async def get(self, model_id: str) -> LLM:
        """The client of a model :meth:`check` accepted (built on first use)."""
        async with self._lock:
            llm = self._built.get(model_id)
            if llm is None:
                found = last_found(self.llm_settings)
                model = found.find(model_id) if found is not None else None
                if model is None:  # checked when the run was asked for; a newer look no longer lists it
                    raise RequestInvalid(
                        f"model {model_id!r} is no longer served on the server's machine", field="model"
                    )
                registry = self.registry or Registry.default()
                llm = registry.get("llm", model.server)(model.llm_settings(self.llm_settings))
                llm.chosen_by = (
                    f"picked for this run among the models served on the server's machine ({model.describe()})"
                )
                self._built[model_id] = llm
            return llm

    async def view(self, in_use: Any, problem: str = "") -> dict[str, Any]:
        """``GET /v1/llm``: the model runs use (an LLM, a spec, or None with the ``problem``), and
        the served ones a run may pick."""
        found = await discover(self.llm_settings) if self.offered else None
        return {
            "in_use": {
                "name": in_use.name if isinstance(in_use, LLM) else str(in_use or ""),
                "chosen_by": in_use.chosen_by if isinstance(in_use, LLM) else "",
                "problem": problem,
            },
            "offered": self.offered,
            "found": [m.as_dict() for m in found.models] if found is not None else [],
        }

    async def aclose(self) -> None:
        built, self._built = list(self._built.values()), {}
        for llm in built:
            await llm.aclose()
