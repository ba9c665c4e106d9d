"""Every module of the package stays readable in one sitting: at most :data:`MAX_LINES` lines.

A module that grows past it holds more than one concept; split it by role (the rooms of
docs/architecture.md), keeping its public names importable where they were.
"""

from __future__ import annotations

from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "reasonloop"
MAX_LINES = 450


def line_counts(root: Path = SRC) -> dict[str, int]:
    return {
        str(path.relative_to(root.parent)): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(root.rglob("*.py"))
    }


def test_no_module_is_over_the_line_limit():
    counts = line_counts()
    assert len(counts) > 100, "the package's modules were not found"
    over = {name: lines for name, lines in counts.items() if lines > MAX_LINES}
    assert not over, f"modules over {MAX_LINES} lines (split them by role): {over}"


def test_the_count_sees_a_long_module(tmp_path):
    package = tmp_path / "reasonloop"
    package.mkdir()
    (package / "long.py").write_text("x = 1\n" * (MAX_LINES + 1), encoding="utf-8")
    (package / "short.py").write_text("x = 1\n", encoding="utf-8")
    assert line_counts(package) == {"reasonloop/long.py": MAX_LINES + 1, "reasonloop/short.py": 1}
