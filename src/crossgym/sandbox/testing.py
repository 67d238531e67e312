"""run_python_tests: the solution in one process, the tests and their verdicts in another it cannot reach."""

from __future__ import annotations

import base64
import functools
import marshal
from collections.abc import Mapping, Sequence
from importlib.util import MAGIC_NUMBER
from typing import Any

from crossgym.protocol.task import safe_text

from . import execute
from .pool import Sandbox
from .result import Limits, TestDetail, TestRunResult
from .transport import Raw

CLEAR_S = 2.0  # the most clearing up after one solution of a group may take
PLAN_HERE_CHARS = 64_000  # larger test suites are planned by the harness itself


def spec_of(tests: str | Sequence[str], entry_point: str | None, prelude: str | None) -> dict[str, Any]:
    """The tests part of a harness's payload, with the plan made here (once per distinct suite) when it can be."""
    tests = tests if isinstance(tests, str) else list(tests)
    spec: dict[str, Any] = {"tests": tests, "entry_point": entry_point, "prelude": prelude}
    size = len(tests) if isinstance(tests, str) else sum(map(len, tests))
    if size + len(prelude or "") <= PLAN_HERE_CHARS:
        spec["plan"] = _planned(tests if isinstance(tests, str) else tuple(tests), entry_point, prelude)
    return spec


@functools.lru_cache(maxsize=256)
def _planned(tests: str | tuple[str, ...], entry: str | None, prelude: str | None) -> dict[str, Any] | None:
    """The harness's plan of a trusted test suite (code objects, marshalled, and the unit names), made in this
    process: a GRPO group or an epoch judges the same suite many times, and each harness is a fresh process. The
    harness uses it when its interpreter has the same bytecode (magic number), else plans again itself."""
    import sys

    from ._runtime import plan
    from ._runtime.prelude import compile_prelude

    if getattr(sys, "get_int_max_str_digits", lambda: 4300)() != 4300:
        return None  # this process parses big int literals as the harness would not (-X int_max_str_digits)
    try:
        module, names, kinds = plan.build(tests if isinstance(tests, str) else list(tests), entry)
        code = compile_prelude(prelude) if prelude else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # the harness finds the same problem and reports it
    return {"magic": MAGIC_NUMBER.hex(), "module": base64.b64encode(marshal.dumps(module)).decode(),
            "names": names, "kinds": kinds, "imports": plan.imports(tests if isinstance(tests, str) else list(tests),
                                                                  prelude),
            "prelude": None if code is None else base64.b64encode(marshal.dumps(code)).decode()}


def run_tests(sandbox: Sandbox, solution: str, tests: str | Sequence[str], *, entry_point: str | None,
              prelude: str | None, timeout: float | None, test_timeout: float | None, limits: Limits | None,
              files: Mapping[str, str | bytes] | None) -> TestRunResult:
    """See :func:`crossgym.sandbox.run_python_tests`."""
    timeout = float(timeout if timeout is not None else execute.DEFAULT_TIMEOUT)
    margin = min(0.5, 0.1 * timeout)
    spec = dict(spec_of(tests, entry_point, prelude), solution=solution, budget_s=timeout - margin,
                unit_timeout=test_timeout, output_cap=output_cap(limits, 1))
    result, raw = execute.run(sandbox, "tests", {"tests": spec}, files=files, stdin=None, timeout=timeout,
                              limits=limits, env=None, result_pipe=True,
                              header={"solutions": 1, "shared": True})  # no sibling: the task's directory
    return parse(raw, result)


def run_tests_many(sandbox: Sandbox, solutions: Sequence[str], tests: str | Sequence[str], *,
                   entry_point: str | None, prelude: str | None, timeout: float | None, test_timeout: float | None,
                   limits: Limits | None) -> list[TestRunResult]:
    """See :func:`crossgym.sandbox.run_python_tests_many`."""
    left = [str(s) for s in solutions]
    timeout = float(timeout if timeout is not None else execute.DEFAULT_TIMEOUT)
    margin = min(0.5, 0.1 * timeout)
    verdicts: list[TestRunResult] = []
    while left:
        spec = dict(spec_of(tests, entry_point, prelude), solutions=left, budget_s=timeout - margin,
                    unit_timeout=test_timeout, output_cap=output_cap(limits, len(left)))
        total = timeout * len(left) + CLEAR_S * (len(left) - 1)
        result, raw = execute.run(sandbox, "tests", {"tests": spec}, files=None, stdin=None, timeout=total,
                                  limits=limits, env=None, result_pipe=True, header={"solutions": len(left)})
        header = raw.results[0] if raw.results and "total" in raw.results[0] else None
        runs: list[list[dict[str, Any]]] = [[] for _ in left]
        started = 0
        current: list[dict[str, Any]] | None = None
        for msg in raw.results[1:] if header else []:
            if "solution" in msg:
                index = int(msg["solution"])
                current = runs[index] if 0 <= index < len(runs) else None
                started = max(started, index + 1)
            elif current is not None:
                current.append(msg)
        if header is None or header.get("error") or not 0 < started < len(left) or raw.timed_out:
            return verdicts + [verdict(header, run, raw, result) for run in runs]
        # the harness ended during a member (its hard stop: a C call of the tests that never returned): the members
        # after it never ran there, and get the verdicts of a group of their own, as if judged without it
        verdicts += [verdict(header, run, raw, result) for run in runs[:started]]
        left = left[started:]
    return verdicts


def output_cap(limits: Limits | None, solutions: int) -> int:
    """Bytes of each solution's stdout (and of its stderr) the harness passes on: together never more than the
    caller keeps, nor enough to make it end the task (a flooding solution ends nobody's run but its own)."""
    limits = limits or Limits()
    return max(0, min(limits.output_bytes, limits.max_output_bytes // (2 * solutions + 2)))


def parse(raw: Raw, result: Any) -> TestRunResult:
    """Build the verdict from the harness's private result lines only (never from stdout)."""
    header = raw.results[0] if raw.results and "total" in raw.results[0] else None
    return verdict(header, raw.results[1:] if header else [], raw, result)


def verdict(header: dict[str, Any] | None, messages: list[dict[str, Any]], raw: Raw, result: Any) -> TestRunResult:
    """One solution's verdict from its result lines (after the harness's header)."""
    units: dict[int, dict[str, Any]] = {}
    problems: list[str] = []
    setups: list[TestDetail] = []  # a statement of the tests that failed outside any unit: one failure more
    done = False
    error: str | None
    for msg in messages:
        if "unit" in msg:  # a unit run again that failed then is failed (see Reporter._write)
            seen = units.setdefault(int(msg["unit"]), msg)
            if seen is not msg and seen.get("ok") and not msg.get("ok"):
                units[int(msg["unit"])] = msg
        elif "solution_error" in msg:
            problems.append(safe_text(f"solution: {msg['solution_error']}"))
        elif "setup_error" in msg:
            problems.append(safe_text(f"setup: {msg['setup_error']}"))
            if not msg.get("not_run"):  # after the run's deadline: the units say so already
                setups.append(TestDetail("setup", False, safe_text(str(msg["setup_error"]))))
        elif msg.get("done"):
            done = True
    names = [str(n) for n in (header or {}).get("names", [])]
    total = int((header or {}).get("total", 0))
    unfinished = "timeout" if raw.timed_out else f"not run (harness ended, exit {raw.exit})"
    details = []
    for i, name in enumerate(names[:total]):
        unit = units.get(i)
        if unit is None:
            details.append(TestDetail(name, False, unfinished if not done else "not run"))
        else:
            err = unit.get("error")  # the solution's exception text: made to encode as UTF-8
            details.append(TestDetail(name, bool(unit["ok"]), None if err is None else safe_text(str(err))))
    if header is None:
        error = "timeout" if raw.timed_out else f"the harness did not start (exit {raw.exit})"
    elif header.get("error"):
        error = f"tests: {header['error']}"
    elif not done:
        error = unfinished if raw.timed_out else f"the harness ended early (exit {raw.exit})"
    elif total == 0:
        error = "tests: no test found (no assert, check() or test_*() function)"
    else:
        error = problems[0] if problems else None
    if total:  # without a unit the run is no test at all, whatever failed
        if header is not None and not done and len(units) >= total:  # every unit reported, yet the run never
            setups.append(TestDetail("unfinished", False, error))  # ended (a later statement held the harness
        details += setups  # in one C call until the deadline): one failure more, never a full fraction
        total += len(setups)
    return TestRunResult(passed=sum(d.passed for d in details), total=total,
                         details=tuple(details), error=error, exec=result)
