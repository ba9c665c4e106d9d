"""The research strategy (:mod:`.strategy`) and its parts: settings, budget, tasks, sub-agents, report."""

from reasonloop.reasoning.strategies.research.report import render_not_established as render_not_established
from reasonloop.reasoning.strategies.research.settings import ResearchSettings
from reasonloop.reasoning.strategies.research.strategy import ResearchReasoning

__all__ = ["ResearchReasoning", "ResearchSettings"]
