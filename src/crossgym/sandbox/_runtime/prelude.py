"""A problem's prompt (the trusted prelude), compiled alone: for the tests' namespace in the harness and the plan
made in the caller, and run first in each solution's process. No imports: every zygote loads it."""

from __future__ import annotations

if False:  # annotations only: the server does not import typing
    from typing import Any


def compile_prelude(prelude: str) -> Any:
    """A problem's prompt compiled alone, for the tests' namespace. A prompt is often the head of the solution: it
    may end in the signature the model completes (``def add(a, b):``, a method of ``class Solution:``), which does
    not compile alone; it is then compiled with an empty body there (``pass``), as the whole solution would give it
    one. Raises the first SyntaxError when that does not help either."""
    try:
        return compile(prelude, "prelude.py", "exec", dont_inherit=True, optimize=0)
    except SyntaxError:
        lines = prelude.rstrip().splitlines()
        last = lines[-1] if lines else ""
        body = prelude.rstrip() + "\n" + last[:len(last) - len(last.lstrip())] + "    pass\n"
        try:
            return compile(body, "prelude.py", "exec", dont_inherit=True, optimize=0)
        except SyntaxError:
            pass
        raise
