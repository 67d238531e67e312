"""Run untrusted code (model-written Python, programs, shell commands) fast, with nothing escaping.

Tiers: ``default`` (a clean pre-started server forking one confined child per task: uid per slot when root,
rlimits, Landlock, seccomp, wall deadline) and ``strong`` (the same server inside bubblewrap namespaces;
one bubblewrap per shell task). Choose with ``tier=`` or $CROSSGYM_SANDBOX_TIER (default|strong|auto).
See docs/sandbox.md for what each tier contains and what it cannot.
"""

from .api import (
    arun_program,
    arun_python,
    arun_python_tests,
    arun_python_tests_many,
    arun_shell,
    close_all,
    describe,
    get_sandbox,
    run_program,
    run_python,
    run_python_tests,
    run_python_tests_many,
    run_shell,
    shell_session,
)
from .pool import Sandbox
from .result import ExecResult, Limits, TestDetail, TestRunResult
from .session import ShellSession

__all__ = [
    "ExecResult", "Limits", "Sandbox", "ShellSession", "TestDetail", "TestRunResult",
    "arun_program", "arun_python", "arun_python_tests", "arun_python_tests_many", "arun_shell", "close_all",
    "describe", "get_sandbox", "run_program", "run_python", "run_python_tests", "run_python_tests_many",
    "run_shell", "shell_session",
]
