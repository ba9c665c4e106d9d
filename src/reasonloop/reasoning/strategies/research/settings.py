"""The research strategy's settings: its rounds, sub-agents and budgets.

A module of their own so that the parts of the research (its budget, its sub-agents) read them
without importing the strategy that puts the parts together.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from reasonloop.plugin_table import field_text
from reasonloop.reasoning.base import ReasoningSettings

__all__ = ["ResearchSettings"]


class ResearchSettings(ReasoningSettings):
    max_rounds: int = Field(
        default=3,
        ge=1,
        le=8,
        **field_text(
            en=("Research rounds", "Most rounds of research; after each one a judge decides whether it is enough."),
            zh=("研究轮数上限", "最多的研究轮数；每轮之后由评判决定是否足够。"),
        ),
    )
    max_agents: int = Field(
        default=4,
        ge=1,
        le=12,
        **field_text(
            en=("Questions per round", "Most research questions (one sub-agent each) in one round."),
            zh=("每轮问题上限", "一轮中最多的研究问题数（每个一个子代理）。"),
        ),
    )
    max_concurrency: int = Field(
        default=3,
        ge=1,
        le=12,
        **field_text(
            en=("Parallel sub-agents", "Most sub-agents researching at once."),
            zh=("并行子代理上限", "同时研究的子代理最多数量。"),
        ),
    )
    agent: Literal["react", "toolcall"] = Field(
        default="react",
        **field_text(
            en=("Sub-agent", "How each sub-agent uses tools: react (any model) or toolcall (native tool calls)."),
            zh=("子代理", "子代理如何使用工具：react（任何模型）或 toolcall（原生工具调用）。"),
        ),
    )
    agent_rounds: int = Field(
        default=4,
        ge=1,
        le=20,
        **field_text(
            en=("Sub-agent rounds", "Most model turns of one sub-agent before it must answer."),
            zh=("子代理轮数上限", "单个子代理必须作答之前最多的模型轮次。"),
        ),
    )
    max_tool_calls: int = Field(
        default=24,
        ge=1,
        **field_text(
            en=("Tool calls", "Most tool calls of the whole run, shared by its sub-agents."),
            zh=("工具调用上限", "整个运行最多的工具调用次数，由子代理分享。"),
        ),
    )
    max_tokens: int | None = Field(
        default=None,
        ge=1,
        **field_text(
            en=("Token budget", "Tokens of the whole run, sub-agents included; empty: no limit."),
            zh=("词元预算", "整个运行（含子代理）的词元数；留空表示不限。"),
        ),
    )
    timeout_s: float | None = Field(
        default=None,
        gt=0,
        **field_text(
            en=("Time limit (s)", "Seconds the whole run may take; the report is written in time; empty: no limit."),
            zh=("时间上限（秒）", "整个运行可用的秒数；报告会按时写出；留空表示不限。"),
        ),
    )
    report_share: float = Field(
        default=0.15,
        ge=0,
        lt=1,
        **field_text(
            en=("Report reserve", "Share of the time and token budgets held back for judging and the report."),
            zh=("报告预留", "为评判和写报告预留的时间与词元预算比例。"),
        ),
    )
