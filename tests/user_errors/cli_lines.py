"""The one line a refused command prints: shared by the user-error tests (imported as a sibling module)."""

from __future__ import annotations

import pytest

from crossgym.cli import main


def one_line(argv: list[str], capsys: pytest.CaptureFixture[str], *, fix: bool = True) -> str:
    """The one stderr line of a refused command: exit 2, no traceback on either stream, ``crossgym: error: ...``
    and (``fix``) a ``(fix: ...)``."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    captured = capsys.readouterr()
    assert exc.value.code == 2, (argv, exc.value.code, captured.err)
    assert "Traceback" not in captured.err and "Traceback" not in captured.out
    lines = captured.err.splitlines()
    assert len(lines) == 1, (argv, captured.err[:2000])
    assert lines[0].startswith("crossgym: error: "), lines[0]
    assert not fix or "(fix: " in lines[0], lines[0]
    return lines[0]
