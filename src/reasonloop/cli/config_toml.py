"""The effective configuration written as a ``reasonloop.toml`` that loads back to the same settings.

Unset optional values (``None``) are left out: their default is ``None`` too. Secrets stay
hidden as :func:`~reasonloop.config.masked_dump` hides them, in a file that still loads: a
``*_env`` setting keeps the variable's name (not a secret) with a comment saying whether it is
set, and a secret written inline becomes ``"***"`` with a comment saying it was masked.
"""

from __future__ import annotations

from typing import Any

from reasonloop.config import Settings, masked_dump

__all__ = ["settings_toml"]

MASKED_NOTE = "masked: the real value is not shown"


def settings_toml(settings: Settings) -> str:
    """``settings`` as TOML text (see the module docstring for what is left out or masked)."""
    import tomlkit

    raw = settings.model_dump(mode="json", exclude_none=True)
    doc = tomlkit.document()
    # Plain values first: once a table starts, every later key would belong to it.
    for key, value in sorted(raw.items(), key=lambda kv: _is_table(kv[1])):
        doc.add(key, value)
    _annotate(doc, raw, masked_dump(settings))
    return tomlkit.dumps(doc)


def _is_table(value: Any) -> bool:
    return isinstance(value, dict) or (bool(value) and isinstance(value, list) and isinstance(value[0], dict))


def _annotate(container: Any, raw: dict[str, Any], masked: dict[str, Any]) -> None:
    """Put what :func:`masked_dump` hides back as it may be shown, with a comment saying so."""
    for key, value in raw.items():
        shown = masked.get(key)
        if isinstance(value, dict) and isinstance(shown, dict):
            _annotate(container[key], value, shown)
        elif isinstance(value, list) and isinstance(shown, list) and value and isinstance(value[0], dict):
            for i, (item, shown_item) in enumerate(zip(value, shown, strict=True)):
                _annotate(container[key][i], item, shown_item)
        elif shown != value:
            if key.endswith("_env") and isinstance(value, str):
                container[key].comment("set" if str(shown).endswith("(set: ***)") else "not set")
            else:
                container[key] = shown
                container[key].comment(MASKED_NOTE)
