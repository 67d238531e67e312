"""Run untrusted code (model-written Python, programs, shell commands) fast, with nothing escaping.

Tiers: ``default`` (a clean pre-started server forking one confined child per task: uid per slot when root,
rlimits, Landlock, seccomp, wall deadline) and ``strong`` (the same server inside bubblewrap namespaces;
one bubblewrap per shell task). Choose with ``tier=`` or $CROSSGYM_SANDBOX_TIER (default|strong|auto).
See docs/sandbox.md for what each tier contains and what it cannot.

Process model (one kind of each process; arrows are forks; ``rw``: where it may write)::

    caller --socket--> server (one per pool; never reads a payload: the caller's pipes go to the task)
                        |-> cg-sweeper  (SCHED_IDLE; rw: the pool's .trash, where leftovers are renamed)
                        `-> cg-zygote   (one per slot; makes the slot's directories and Landlock rulesets)
                              |-> cg-task = harness  (slot uid; rw: its own directory and its solutions')
                              |     `-> solution processes, one burst before the payload is read; each has its
                              |         own request/reply/stdout/stderr pipes (the harness reads them all), its
                              |         own directory (rw) and Landlock domain: no sibling, no harness reachable
                              `-> cg-spawner (replacement processes and those beyond the burst, made alike)

Each solution of a group gets the verdict it gets alone; a task's leftovers never delay a report or reach the
next task of its slot (see docs/sandbox.md, "Leftovers" and "The process model").
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
