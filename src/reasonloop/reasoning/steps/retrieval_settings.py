"""The settings of the retrieval step of a run: query transforms and reranking overrides."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from reasonloop.plugin_table import field_text

__all__ = ["RetrievalSettings"]


class RetrievalSettings(BaseModel):
    """How the retrieval step of a run searches: query transforms and reranking."""

    model_config = ConfigDict(extra="forbid")

    condense: bool = Field(
        default=True,
        **field_text(
            en=("Condense follow-ups", "Rewrite a follow-up question into a standalone query before searching."),
            zh=("改写追问", "检索前把追问改写成独立的查询。"),
        ),
    )
    multi_query: int = Field(
        default=0,
        ge=0,
        le=5,
        **field_text(
            en=(
                "Extra phrasings",
                "Other phrasings the model writes and searches too, fused with the question's hits (0: off).",
            ),
            zh=("额外问法", "模型另写并一同检索的问法数，结果与原问题的命中融合（0：关闭）。"),
        ),
    )
    hyde: bool = Field(
        default=False,
        **field_text(
            en=("Hypothetical answer (HyDE)", "Also search the embedding of a hypothetical answer the model writes."),
            zh=("假设回答（HyDE）", "同时检索模型所写假设回答的向量。"),
        ),
    )
    rerank: bool | None = Field(
        default=None,
        **field_text(
            en=(
                "Rerank",
                "Off skips the knowledge base's reranker for this run; empty or on uses it where one is configured.",
            ),
            zh=("重排序", "关闭则本次运行跳过知识库的重排序器；留空或开启则在已配置时使用。"),
        ),
    )
    rerank_candidates: int | None = Field(
        default=None,
        ge=1,
        le=500,
        **field_text(
            en=(
                "Rerank candidates",
                "How many fused candidates the reranker orders; empty: the knowledge base's rerank_depth.",
            ),
            zh=("重排序候选数", "重排序器排序的融合候选数；留空则用知识库的 rerank_depth。"),
        ),
    )
