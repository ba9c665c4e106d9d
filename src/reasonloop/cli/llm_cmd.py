"""``reasonloop llm "prompt"``: stream tokens from the configured (or given) model."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from reasonloop.cli.console import err_console
from reasonloop.cli.root import app, state

LOCAL_MODEL_HINT = (
    "note: answering with the embedded Gemma 3 270M base model. It runs offline to prove the pipeline; "
    "it is tiny and not instruction-tuned, so do not expect good answers. Configure a real model with "
    "--llm provider:model or [llm] in reasonloop.toml."
)


def print_local_model_hint() -> None:
    """Say, on stderr, that the embedded model proves the pipeline but answers poorly."""
    err_console.print(LOCAL_MODEL_HINT, style="yellow", markup=False)


def print_model_note(model: Any) -> None:
    """On stderr: which served model ``auto`` picked and how to change it, or the embedded model's hint."""
    if getattr(model, "chosen_by", ""):
        err_console.print("note: " + model.chosen_by, style="cyan", markup=False, highlight=False)
    elif model.id == "local":
        print_local_model_hint()


@app.command("llm")
def llm(
    prompt: Annotated[str, typer.Argument(help="The prompt.")],
    llm_spec: Annotated[str | None, typer.Option("--llm", help="provider:model, e.g. openai:gpt-4o-mini")] = None,
    system: Annotated[str | None, typer.Option("--system", help="System message.")] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens")] = None,
    temperature: Annotated[float | None, typer.Option("--temperature")] = None,
) -> None:
    """Stream a completion for PROMPT (token usage goes to stderr)."""
    from reasonloop.llm.base import Done, Message, TextDelta, ToolCallDelta
    from reasonloop.llm.resolve import create_llm

    model = create_llm(llm_spec, state.settings)
    print_model_note(model)
    messages = ([Message.system(system)] if system else []) + [Message.user(prompt)]

    async def go() -> None:
        try:
            async for chunk in model.stream(messages, max_tokens=max_tokens, temperature=temperature):
                if isinstance(chunk, TextDelta):
                    sys.stdout.write(chunk.text)
                    sys.stdout.flush()
                elif isinstance(chunk, ToolCallDelta) and chunk.name:
                    sys.stdout.write(f"\n[tool call {chunk.name}]")
                elif isinstance(chunk, Done):
                    sys.stdout.write("\n")
                    estimated = " (estimated)" if chunk.usage_estimated else ""
                    err_console.print(
                        f"{model.name}: {chunk.prompt_tokens} prompt + {chunk.completion_tokens} completion "
                        f"tokens{estimated}, finish={chunk.finish_reason}",
                        style="dim",
                    )
        finally:
            await model.aclose()

    import asyncio

    asyncio.run(go())
