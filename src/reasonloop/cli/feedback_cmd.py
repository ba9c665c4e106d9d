"""``reasonloop feedback good|bad``: judge an answer from outside a run.

The judgement lands in the same store as the ``feedback`` tool's (``[tools.feedback] path``,
default ``<kb.path>/feedback.sqlite``), so later runs of the same user and conversation see
it as guidance in their system prompt. ``--user`` and ``--conversation`` default to the
ones ``reasonloop ask`` uses when given none.

Example::

    reasonloop feedback bad --reason "imprecise: quote sources" --conversation c1
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated

import typer

from reasonloop.cli.console import console, escape
from reasonloop.cli.root import app, state

__all__ = ["Judgement"]


class Judgement(StrEnum):
    good = "good"
    bad = "bad"


@app.command("feedback")
def feedback(
    rating: Annotated[Judgement, typer.Argument(help="good or bad: your judgement of an answer.")],
    reason: Annotated[str, typer.Option("--reason", "-r", help="Why, in your words.")] = "",
    conversation: Annotated[str, typer.Option("--conversation", help="Conversation the answer belongs to.")] = "",
    user: Annotated[str, typer.Option("--user", help="Who is judging.")] = "",
    run_id: Annotated[str, typer.Option("--run", help="Id of the run that gave the answer.")] = "",
    as_json: Annotated[bool, typer.Option("--json", help="Print the stored judgement as JSON.")] = False,
) -> None:
    """Record a judgement of an answer, to guide later answers.

    It guides the answers for the same user and conversation.
    """
    from reasonloop.tools.feedback import FeedbackStore

    store = FeedbackStore.from_settings(state.settings)

    async def go() -> tuple[str, str]:
        item = await store.add(user, conversation, rating.value, reason, run_id=run_id)
        guidance = await store.recent_guidance(user, conversation or None, state.settings.tools.feedback.recent)
        return item.model_dump_json(), guidance

    import asyncio

    try:
        stored, guidance = asyncio.run(go())
    finally:
        store.close()
    if as_json:
        print(json.dumps({"feedback": json.loads(stored), "guidance": guidance}, ensure_ascii=False))
        return
    data = json.loads(stored)
    console.print(
        f"recorded: [bold]{data['rating']}[/]"
        + (f" ({escape(data['reason'])})" if data["reason"] else "")
        + f" · {store.path}",
        highlight=False,
    )
    if guidance:
        console.print(f"[dim]guidance for the next answers: {escape(guidance)}[/]", highlight=False)
