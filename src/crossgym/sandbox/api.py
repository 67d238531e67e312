"""The sandbox's public functions, on shared per-tier pools that are safe from threads and asyncio."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from . import config, execute, testing
from .pool import Sandbox
from .result import ExecResult, Limits, TestRunResult
from .session import ShellSession, default_shell

_pools: dict[str, Sandbox] = {}
_pools_lock = threading.Lock()
Files = Mapping[str, "str | bytes"]


def get_sandbox(tier: str | None = None) -> Sandbox:
    """The shared pool for a tier (argument, else $CROSSGYM_SANDBOX_TIER, else auto); started on first use."""
    name = config.resolve_tier(tier)
    with _pools_lock:
        pool = _pools.get(name)
        if pool is None:
            pool = _pools[name] = Sandbox(name)
        return pool


def run_python(source: str, *, stdin: str | bytes | None = None, files: Files | None = None,
               timeout: float | None = None, limits: Limits | None = None, env: Mapping[str, str] | None = None,
               tier: str | None = None, sandbox: Sandbox | None = None) -> ExecResult:
    """Run Python source as ``python3 main.py`` would (in a forked, confined interpreter: stdlib only)."""
    result, _ = execute.run(sandbox or get_sandbox(tier), "python", {"source": source}, files=files, stdin=stdin,
                            timeout=timeout, limits=limits, env=env)
    return result


def run_program(argv: Sequence[str], *, stdin: str | bytes | None = None, files: Files | None = None,
                timeout: float | None = None, limits: Limits | None = None, env: Mapping[str, str] | None = None,
                return_files: bool = False, tier: str | None = None, sandbox: Sandbox | None = None) -> ExecResult:
    """Execute a program (argv[0] is looked up on /usr/local/bin:/usr/bin:/bin) in a fresh scratch directory."""
    argv = [str(a) for a in argv]
    if not argv:
        raise ValueError("argv is empty")
    result, _ = execute.run(sandbox or get_sandbox(tier), "exec", {"argv": argv}, files=files, stdin=stdin,
                            timeout=timeout, limits=limits, env=env, return_files=return_files)
    return result


def run_shell(commands: str | Sequence[str], *, files: Files | None = None, stdin: str | bytes | None = None,
              timeout: float | None = None, limits: Limits | None = None, env: Mapping[str, str] | None = None,
              shell: str | None = None, tier: str | None = None, sandbox: Sandbox | None = None) -> ExecResult:
    """Run a shell script (a list is joined line by line) in a scratch directory seeded with ``files``;
    the result carries the final files and which of them changed."""
    script = commands if isinstance(commands, str) else "\n".join(commands)
    result, _ = execute.run(sandbox or get_sandbox(tier), "exec", {"argv": [shell or default_shell(), "-c", script]},
                            files=files, stdin=stdin, timeout=timeout, limits=limits, env=env, return_files=True)
    return result


def run_python_tests(solution: str, tests: str | Sequence[str], *, entry_point: str | None = None,
                     prelude: str | None = None, timeout: float | None = None, test_timeout: float | None = None,
                     limits: Limits | None = None, files: Files | None = None, tier: str | None = None,
                     sandbox: Sandbox | None = None) -> TestRunResult:
    """Judge ``solution`` with ``tests`` in a harness the solution cannot reach; partial credit per unit.

    ``tests``: a list of snippets (one unit each), or source with top-level asserts, ``def test_*()``
    functions, or a HumanEval ``check(candidate)`` (pass ``entry_point``). ``prelude`` is trusted code
    (a problem's prompt) whose names are never taken from the solution. ``test_timeout`` bounds each unit.
    """
    return testing.run_tests(sandbox or get_sandbox(tier), solution, tests, entry_point=entry_point,
                             prelude=prelude, timeout=timeout, test_timeout=test_timeout, limits=limits,
                             files=files)


def run_python_tests_many(solutions: Sequence[str], tests: str | Sequence[str], *, entry_point: str | None = None,
                          prelude: str | None = None, timeout: float | None = None,
                          test_timeout: float | None = None, limits: Limits | None = None, tier: str | None = None,
                          sandbox: Sandbox | None = None) -> list[TestRunResult]:
    """Judge a group of solutions (a GRPO group: completions of one problem) with the same ``tests``, in one
    harness that plans the tests once; one verdict per solution, each as :func:`run_python_tests` gives it.

    Each solution runs in its own fresh process with its own ``timeout``; between two solutions every process
    the last one left is killed and the scratch directory is emptied. ``exec`` of each verdict is the group's.
    """
    return testing.run_tests_many(sandbox or get_sandbox(tier), solutions, tests, entry_point=entry_point,
                                  prelude=prelude, timeout=timeout, test_timeout=test_timeout, limits=limits)


def shell_session(files: Files | None = None, *, timeout: float | None = None, limits: Limits | None = None,
                  env: Mapping[str, str] | None = None, shell: str | None = None, tier: str | None = None,
                  sandbox: Sandbox | None = None) -> ShellSession:
    """A :class:`ShellSession` on the shared pool of ``tier``."""
    return ShellSession(files, sandbox=sandbox or get_sandbox(tier), timeout=timeout, limits=limits, env=env,
                        shell=shell)


def describe(tier: str | None = None) -> dict[str, Any]:
    """Tiers available here, the one in use and what it contains, and which pools are running."""
    info = config.describe(tier)
    with _pools_lock:
        info["running"] = sorted(name for name, pool in _pools.items() if pool._proc is not None)
    return info


def close_all() -> None:
    """Stop every shared pool (they restart on next use)."""
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.close()


async def arun_python(source: str, **kwargs: Any) -> ExecResult:
    """:func:`run_python` without blocking the event loop."""
    import asyncio

    return await asyncio.to_thread(run_python, source, **kwargs)


async def arun_program(argv: Sequence[str], **kwargs: Any) -> ExecResult:
    """:func:`run_program` without blocking the event loop."""
    import asyncio

    return await asyncio.to_thread(run_program, argv, **kwargs)


async def arun_shell(commands: str | Sequence[str], **kwargs: Any) -> ExecResult:
    """:func:`run_shell` without blocking the event loop."""
    import asyncio

    return await asyncio.to_thread(run_shell, commands, **kwargs)


async def arun_python_tests_many(solutions: Sequence[str], tests: str | Sequence[str],
                                 **kwargs: Any) -> list[TestRunResult]:
    """:func:`run_python_tests_many` without blocking the event loop."""
    import asyncio

    return await asyncio.to_thread(run_python_tests_many, solutions, tests, **kwargs)


async def arun_python_tests(solution: str, tests: str | Sequence[str], **kwargs: Any) -> TestRunResult:
    """:func:`run_python_tests` without blocking the event loop."""
    import asyncio

    return await asyncio.to_thread(run_python_tests, solution, tests, **kwargs)
