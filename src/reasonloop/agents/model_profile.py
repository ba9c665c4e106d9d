"""What runs for a strategy on a given model: the model's profile, read once per agent.

A model's :class:`~reasonloop.llm.base.Capabilities` say what it can do (follow instructions or
only continue text, call tools natively, score continuations). Strategies that prompt a model
with instructions (every built-in one) cannot run on a base model: the agent runs the evidence
answer (:mod:`reasonloop.reasoning.evidence_answer`) instead and records what ran. This is the
one place that decides it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from reasonloop.llm.base import Capabilities
from reasonloop.reasoning.base import Reasoning
from reasonloop.reasoning.evidence_answer.strategy import EvidenceAnswerReasoning

__all__ = ["StrategyPlan", "plan_strategy"]

_SHARED_SETTINGS = ("max_evidence_tokens", "top_k", "retrieval")
"""Settings of the asked strategy that the evidence answer keeps, where it has them."""


@dataclass(frozen=True)
class StrategyPlan:
    """The strategy that runs and its settings, with ``ran`` naming a swap (``""`` when none)."""

    strategy: type[Reasoning]
    settings: Any
    ran: str = ""


def plan_strategy(asked: type[Reasoning], settings: BaseModel, capabilities: Capabilities) -> StrategyPlan:
    """What runs when ``asked`` (with its validated ``settings``) is run on a model with ``capabilities``."""
    if capabilities.base_model and asked.needs_instructions:
        kept = {k: getattr(settings, k) for k in _SHARED_SETTINGS if getattr(settings, k, None) is not None}
        ran = f"{asked.info.id} → evidence answer: base model"
        return StrategyPlan(EvidenceAnswerReasoning, EvidenceAnswerReasoning.validate_settings(kept), ran)
    return StrategyPlan(asked, settings)
