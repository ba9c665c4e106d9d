"""Per-question results on disk: one JSON line per finished question, so a run resumes.

An evaluation writes into a folder: ``manifest.json`` says what is being measured (set, model,
strategies and their settings) and ``results.jsonl`` holds one line per (strategy, question),
appended and flushed as each finishes. Reopening the folder for the same manifest skips what is
there; a line recording an error is tried again. A different manifest is refused rather than
mixing two evaluations in one file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reasonloop.errors import ConfigError

__all__ = ["ResultStore"]


class ResultStore:
    """``results.jsonl`` + ``manifest.json`` in ``folder`` (created if missing).

    Raises:
        ConfigError: the folder holds results of a different evaluation.
    """

    def __init__(self, folder: str | Path, manifest: dict[str, Any]) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / "results.jsonl"
        manifest_path = self.folder / "manifest.json"
        wanted = json.loads(json.dumps(manifest, sort_keys=True, default=str))
        if manifest_path.is_file():
            found = json.loads(manifest_path.read_text(encoding="utf-8"))
            if found != wanted:
                changed = sorted(k for k in set(found) | set(wanted) if found.get(k) != wanted.get(k))
                raise ConfigError(
                    f"{self.folder} holds results of another evaluation (differs in {', '.join(changed)}); "
                    "use another --out folder or remove it",
                    folder=str(self.folder),
                )
        else:
            manifest_path.write_text(json.dumps(wanted, indent=2, sort_keys=True), encoding="utf-8")
        self.done: dict[tuple[str, str], dict[str, Any]] = {}
        self.errors: dict[tuple[str, str], dict[str, Any]] = {}
        if self.path.is_file():
            with self.path.open(encoding="utf-8") as fh:
                for raw in fh:
                    try:
                        row = json.loads(raw)
                    except json.JSONDecodeError:
                        continue  # a line cut short by a killed run: that question runs again
                    self._keep(row)
        self._fh = self.path.open("a", encoding="utf-8")
        if self.path.stat().st_size and not self.path.read_bytes().endswith(b"\n"):
            self._fh.write("\n")  # end the line a killed run left cut short, so the next one stands alone

    def has(self, strategy: str, item_id: str) -> bool:
        return (strategy, item_id) in self.done

    def add(self, row: dict[str, Any]) -> None:
        """Append ``row`` (with ``strategy`` and ``id``) and flush it to disk."""
        self._fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        self._fh.flush()
        self._keep(row)

    def _keep(self, row: dict[str, Any]) -> None:
        key = (row["strategy"], row["id"])
        if row.get("error"):
            self.errors[key] = row
        else:
            self.done[key] = row
            self.errors.pop(key, None)

    def rows(self, strategy: str, ids: list[str]) -> list[dict[str, Any]]:
        """The finished rows of ``strategy`` for ``ids``, in that order."""
        return [self.done[(strategy, i)] for i in ids if (strategy, i) in self.done]

    def failed(self, strategy: str, ids: list[str]) -> list[dict[str, Any]]:
        """The rows of ``strategy`` among ``ids`` whose last attempt failed."""
        return [self.errors[(strategy, i)] for i in ids if (strategy, i) in self.errors]

    def close(self) -> None:
        self._fh.close()
