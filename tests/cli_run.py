"""Running the command line in-process, as the CLI tests do."""

from __future__ import annotations

from reasonloop.cli import main


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """Run ``reasonloop ARGV`` in this process; returns (exit code, stdout, stderr)."""
    try:
        main(list(argv))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err
