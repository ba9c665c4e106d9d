"""Old dotted paths of modules that moved to another room keep importing, with a DeprecationWarning.

`MOVED` maps each old module path to its new one. Importing an old path imports the new module
once and makes the old name an alias of it (the same module object, so `isinstance` checks,
monkeypatching and pickled dotted paths written by an earlier release keep working). Entries
are removed one release after the move.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import warnings
from types import ModuleType

MOVED: dict[str, str] = {
    # reasoning/ in rooms by role: strategies/, steps/, formats/ (and the question's terms and the
    # passages' sentences, which citations use too, out of evidence_answer/)
    "reasonloop.reasoning.qa": "reasonloop.reasoning.strategies.qa",
    "reasonloop.reasoning.decompose": "reasonloop.reasoning.strategies.decompose",
    "reasonloop.reasoning.react": "reasonloop.reasoning.strategies.react",
    "reasonloop.reasoning.toolcall": "reasonloop.reasoning.strategies.toolcall",
    "reasonloop.reasoning.rewoo": "reasonloop.reasoning.strategies.rewoo",
    "reasonloop.reasoning.toolexec": "reasonloop.reasoning.steps.toolexec",
    "reasonloop.reasoning.llmcall": "reasonloop.reasoning.steps.llmcall",
    "reasonloop.reasoning.retrieval": "reasonloop.reasoning.steps.retrieval",
    "reasonloop.reasoning.retrieval_settings": "reasonloop.reasoning.steps.retrieval_settings",
    "reasonloop.reasoning.budget": "reasonloop.reasoning.steps.budget",
    "reasonloop.reasoning.finish": "reasonloop.reasoning.steps.finish",
    "reasonloop.reasoning.citations": "reasonloop.reasoning.steps.citations",
    "reasonloop.reasoning.query_transforms": "reasonloop.reasoning.steps.query_transforms",
    "reasonloop.reasoning.intent": "reasonloop.reasoning.steps.intent",
    "reasonloop.reasoning.evidence_answer.terms": "reasonloop.reasoning.steps.terms",
    "reasonloop.reasoning.evidence_answer.sentences": "reasonloop.reasoning.steps.sentences",
    "reasonloop.reasoning.react_parser": "reasonloop.reasoning.formats.react_parser",
    "reasonloop.reasoning.rewoo_plan": "reasonloop.reasoning.formats.rewoo_plan",
    "reasonloop.reasoning.text_calls": "reasonloop.reasoning.formats.text_calls",
    "reasonloop.reasoning.toolcall_text": "reasonloop.reasoning.formats.toolcall_text",
    "reasonloop.reasoning.answer_spotter": "reasonloop.reasoning.formats.answer_spotter",
    "reasonloop.reasoning.format_watch": "reasonloop.reasoning.formats.format_watch",
    "reasonloop.reasoning.prompts": "reasonloop.reasoning.formats.prompts",
    "reasonloop.reasoning.language": "reasonloop.reasoning.formats.language",
}


class _AliasLoader:  # the loader protocol; importlib.abc is not imported to keep `import reasonloop` light
    def __init__(self, new: str) -> None:
        self._new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # a placeholder; exec_module puts the moved module in its place

    def exec_module(self, module: ModuleType) -> None:
        warnings.warn(
            f"{module.__name__} moved to {self._new}; the old path is kept for one release",
            DeprecationWarning,
            stacklevel=2,
        )
        # The import system returns what sys.modules holds after this call: the new module itself,
        # with its own __spec__ and __name__ untouched.
        sys.modules[module.__name__] = importlib.import_module(self._new)


class _MovedFinder:
    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


_FINDER = _MovedFinder()


def install() -> None:
    """Put the finder after the standard ones, so a module still at its old path is found there first."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)
