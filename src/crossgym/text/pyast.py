"""Python's ``ast`` from several threads at once.

CPython before 3.13 keeps the AST converters' recursion depth in one counter per interpreter (CPython gh-106905).
When a thread switch lands inside ``ast.parse`` or ``compile`` of a tree (a garbage collection running a finaliser
is enough), the next thread's conversion moves the same counter and one of them fails with ``SystemError: AST
constructor recursion depth mismatch``. In crossgym that was a right answer scored as an exception: code_tests plans
its tests with ``ast`` in the caller, and trainers and ``verify_many`` score from several threads. Every parse and
compile of a tree in crossgym holds :data:`LOCK` (the sandbox's test planner takes the same one); it costs nothing
uncontended, and parsing holds the GIL anyway.
"""

from __future__ import annotations

import ast
import threading
from typing import Any

#: held around every ``ast.parse`` and ``compile(tree)`` crossgym makes in a process
LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>", mode: str = "exec") -> Any:
    """``ast.parse`` under :data:`LOCK`."""
    with LOCK:
        return ast.parse(source, filename, mode)
