"""Prompt templates: text files per language, rendered strictly, user instructions appended.

Templates live in ``reasoning/formats/prompts/<language>/<name>.txt`` and use ``$name``
placeholders (:class:`string.Template`); a missing variable is an error, never an empty
hole. Languages without their own templates use English ones, which tell the model to
answer in the question's language.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from string import Template
from weakref import WeakKeyDictionary

from reasonloop.errors import ConfigError
from reasonloop.llm.base import Message, ToolSpec
from reasonloop.reasoning.formats.language import LANGUAGE_NAMES
from reasonloop.tools.base import Tool

__all__ = ["PROMPT_DIR", "conversation", "describe_tools", "render", "system_prompt", "template_language", "tool_spec"]

PROMPT_DIR = Path(__file__).with_name("prompts")


@lru_cache(maxsize=128)
def _template(name: str, language: str) -> Template:
    path = PROMPT_DIR / language / f"{name}.txt"
    try:
        return Template(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"no prompt template {name!r} for language {language!r} ({path})") from None


@lru_cache(maxsize=64)
def template_language(language: str) -> str:
    """The template set used for ``language`` (its own, or English)."""
    return language if (PROMPT_DIR / language).is_dir() else "en"


def render(name: str, language: str = "en", **variables: object) -> str:
    """Render template ``name`` in ``language``.

    Raises:
        ConfigError: the template does not exist or uses a variable that was not given.
    """
    lang = template_language(language)
    variables.setdefault("language_name", LANGUAGE_NAMES.get(language, "the language of the question"))
    try:
        return _template(name, lang).substitute(variables).strip()
    except KeyError as exc:
        raise ConfigError(f"prompt template {lang}/{name}.txt needs variable {exc.args[0]!r}") from None
    except ValueError as exc:
        raise ConfigError(f"prompt template {lang}/{name}.txt is malformed: {exc}") from None


def system_prompt(name: str, language: str, instructions: list[str], **variables: object) -> str:
    """A rendered template with the user's instructions appended after the built-in rules."""
    if not variables:  # the same few prompts start every run: render each once
        return _plain_system_prompt(name, language, tuple(instructions))
    return _system_prompt(name, language, instructions, variables)


@lru_cache(maxsize=256)
def _plain_system_prompt(name: str, language: str, instructions: tuple[str, ...]) -> str:
    return _system_prompt(name, language, instructions, {})


def _system_prompt(name: str, language: str, instructions: Sequence[str], variables: dict[str, object]) -> str:
    text = render(name, language, **variables)
    if instructions:
        head = render("instructions_header", language)
        text += "\n\n" + head + "\n" + "\n".join(f"- {line.strip()}" for line in instructions if line.strip())
    return text


_SPECS: WeakKeyDictionary[Tool, ToolSpec] = WeakKeyDictionary()


def tool_spec(tool: Tool) -> ToolSpec:
    """``tool.spec()``, computed once per tool object (building a JSON schema costs ~0.3 ms)."""
    spec = _SPECS.get(tool)
    if spec is None:
        spec = _SPECS[tool] = tool.spec()
    return spec


def describe_tools(tools: Iterable[Tool]) -> str:
    """One line per tool for text-format prompts: name, description, parameters."""
    lines = []
    for tool in tools:
        props = tool_spec(tool).parameters.get("properties", {})
        params = ", ".join(
            f"{name}: {spec.get('type', 'any')}" + (f" ({spec['description']})" if spec.get("description") else "")
            for name, spec in props.items()
        )
        lines.append(
            f"- {tool.name}: {tool.description.strip().splitlines()[0] if tool.description else ''} Input: {{{params}}}"
        )
    return "\n".join(lines) if lines else "(no tools)"


def conversation(system: str, history: Sequence[Message], user: str) -> list[Message]:
    """``[system, *history, user]``: the messages of a turn that sees the conversation."""
    return [Message.system(system), *history, Message.user(user)]
