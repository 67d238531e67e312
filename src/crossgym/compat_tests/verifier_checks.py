"""Verifier conformance: examples behave as declared, determinism, no exception on garbage, the timeout is honoured,
and a verifier rebuilt from its spec in a fresh process gives the same verdicts.

Each check takes a registered verifier name and returns a CheckResult; none of them raises on a broken verifier.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crossgym.compat_tests.corpus import (
    GARBAGE_TASKS,
    Sample,
    distinct_tasks,
    example_samples,
    garbage_samples,
    samples_for,
)
from crossgym.compat_tests.results import CheckResult
from crossgym.compat_tests.verdicts import VerdictCache, verdict_of
from crossgym.protocol.task import ERROR_KINDS, Example, Verdict, VerifierSpec

log = logging.getLogger(__name__)

#: the timeout the timeout check gives a verifier, and the slack allowed on top (process start, pickling 1 MB)
TIMEOUT_S = 1.0
GRACE_S = 4.0
#: a call still running after this long is abandoned (and the garbage check stops there)
HANG_S = 30.0
#: the determinism and fresh-process checks leave out completions longer than this (the garbage check has them)
FRESH_MAX_CHARS = 20_000


def verifier_factory(name: str) -> Any:
    from crossgym.plugins.manager import registry

    return registry("verifiers").load(name)


def get_examples(name: str) -> list[Example]:
    """A verifier's examples, whether ``examples`` is a classmethod or needs an instance."""
    from crossgym.api import load_verifier

    factory = verifier_factory(name)
    try:
        return list(factory.examples())
    except TypeError:
        return list(load_verifier(VerifierSpec(name)).examples())


def unavailable_reason(name: str) -> str | None:
    """Why ``name`` cannot be checked here (a missing requirement, or its example specs do not build, e.g. a
    judge without an endpoint), else None."""
    from crossgym.api import load_verifier
    from crossgym.plugins.manager import registry
    from crossgym.protocol.errors import CrossgymError

    entry = registry("verifiers").entry(name)
    missing = entry.missing_requirements()
    if missing:
        return f"needs {', '.join(missing)}" + (f" ({entry.install})" if entry.install else "")
    try:
        for spec in {ex.task.verifier.key(): ex.task.verifier for ex in get_examples(name)}.values():
            load_verifier(spec)
    except CrossgymError as exc:
        return f"cannot be built here: {exc}"
    except Exception as exc:
        return f"cannot be built here: {type(exc).__name__}: {exc}"
    return None


def build_fresh(spec: VerifierSpec) -> Any:
    """A new verifier instance for ``spec`` (not the process-wide cached one)."""
    return verifier_factory(spec.name)(**spec.params)


def got_kind(v: Verdict) -> str:
    """"pass", "fail", "malformed", "timeout" or "exception" for a verdict."""
    if v.error is not None:
        return v.error_kind or "exception"
    return "pass" if v.passed else "fail"


def verdict_problem(v: Any) -> str | None:
    """What is wrong with a verify() result as a Verdict (None when it is a proper one)."""
    if not isinstance(v, Verdict):
        return f"verify returned {type(v).__name__}, not a Verdict"
    if not isinstance(v.reward, (int, float)) or isinstance(v.reward, bool) or not math.isfinite(v.reward):
        return f"non-finite or non-numeric reward {v.reward!r}"
    if v.error is not None and v.error_kind not in ERROR_KINDS:
        return f"error {v.error!r} does not start with one of {', '.join(ERROR_KINDS)}"
    return None


def call_bounded(fn: Callable[[], Any], limit: float) -> tuple[str, Any, float]:
    """Run ``fn`` on a daemon thread: ("ok", value, s), ("raised", exc, s) or ("hung", None, limit)."""
    box: list[tuple[str, Any]] = []

    def target() -> None:
        try:
            box.append(("ok", fn()))
        except BaseException as exc:  # noqa: BLE001 - reported, never re-raised
            box.append(("raised", exc))

    start = time.monotonic()
    t = threading.Thread(target=target, daemon=True, name="crossgym-compat-call")
    t.start()
    t.join(limit)
    if not box:
        return "hung", None, limit
    return box[0][0], box[0][1], time.monotonic() - start


# ------------------------------------------------------------------ 1. examples
def check_examples(name: str, cache: VerdictCache | None = None) -> CheckResult:
    """Every example passes, fails or is malformed as declared; there is at least one of each kind."""
    res = CheckResult("examples")
    try:
        examples = get_examples(name)
    except Exception as exc:
        return res.fail(f"examples() raised {type(exc).__name__}: {exc}")
    kinds = {ex.expect for ex in examples}
    missing = {"pass", "fail", "malformed"} - kinds
    if missing:
        res.fail(f"examples() lacks a {', '.join(sorted(missing))} case")
    for s in example_samples(examples):
        res.checked += 1
        try:
            v = verdict_of(s, cache)
        except Exception as exc:
            res.fail(f"verify raised {type(exc).__name__}: {exc}", s.describe())
            continue
        problem = verdict_problem(v)
        if problem:
            res.fail(problem, s.describe())
        elif got_kind(v) != s.expect:
            res.fail(f"example {s.id} declared {s.expect}, got {got_kind(v)} ({v.error or v.reason})",
                     {**s.describe(), "expected": s.expect, "got": got_kind(v)})
    return res


# ------------------------------------------------------------------ 2. determinism
def check_determinism(name: str, corpus_dir: Path | None = None, extra: list[Sample] | None = None,
                      cache: VerdictCache | None = None) -> CheckResult:
    """Each sample scored by the cached instance, then by a fresh instance in reverse order, gives equal Verdicts."""
    res = CheckResult("determinism")
    samples = [s for s in _scorable(name, corpus_dir, extra) if len(_text(s)) <= FRESH_MAX_CHARS]
    first = [verdict_of(s, cache) for s in samples]
    fresh: dict[str, Any] = {}
    for s, a in reversed(list(zip(samples, first, strict=True))):
        key = s.task.verifier.key()
        if key not in fresh:
            fresh[key] = build_fresh(s.task.verifier)
        again = fresh[key].verify(s.task, s.completion)
        if a.error == "timeout" or again.error == "timeout":
            res.extra["timeouts"] = res.extra.get("timeouts", 0) + 1
            continue
        res.checked += 1
        if a.to_dict() != again.to_dict():
            res.fail("the same task and completion gave different verdicts",
                     {**s.describe(), "first": a.to_dict(), "second": again.to_dict()})
    return res


# ------------------------------------------------------------------ 3 + 4. garbage and timeout
def check_garbage_and_timeout(name: str, corpus_dir: Path | None = None, *, timeout: float = TIMEOUT_S,
                              grace: float = GRACE_S, tasks: int = GARBAGE_TASKS) -> tuple[CheckResult, CheckResult]:
    """Score the whole garbage corpus (raw entries included) on up to ``tasks`` example tasks, with ``timeout=``.

    Garbage: verify never raises and always returns a proper Verdict. Timeout: every call returns within
    ``timeout * 1.5 + grace`` seconds (skipped when the verifier takes no ``timeout`` param). An entry that overran
    or timed out once is not scored again on the other tasks, so a slow verifier costs one deadline per entry.
    """
    garbage, honoured = CheckResult("garbage"), CheckResult("timeout")
    n_tasks = tasks
    try:
        tasks_ = distinct_tasks(get_examples(name), n_tasks)
    except Exception as exc:
        msg = f"no example tasks to score garbage on: {type(exc).__name__}: {exc}"
        return garbage.fail(msg), CheckResult("timeout", "skip", msg)
    cache: dict[str, Any] = {}
    use_timeout = True

    def verifier_for(spec: VerifierSpec) -> Any:
        nonlocal use_timeout
        key = spec.key()
        if key not in cache:
            try:
                cache[key] = build_fresh(VerifierSpec(spec.name, {**spec.params, "timeout": timeout}))
            except Exception as exc:  # takes no timeout param: score with its own
                log.debug("verifier %s takes no timeout=%s: %s", name, timeout, exc)
                use_timeout = False
                cache[key] = build_fresh(spec)
        return cache[key]

    limit = timeout * 1.5 + grace
    slowest = 0.0
    overran: set[str] = set()
    for s in garbage_samples(tasks_, corpus_dir, raw=True):
        entry = s.id.rpartition("@")[0]
        if entry in overran:
            honoured.extra["not_rescored"] = honoured.extra.get("not_rescored", 0) + 1
            continue
        v = verifier_for(s.task.verifier)
        kind, value, elapsed = call_bounded(functools.partial(v.verify, s.task, s.completion),
                                            max(HANG_S, 4 * (v_timeout(v) * 1.5 + grace)))
        garbage.checked += 1
        if kind == "hung":
            garbage.fail(f"verify did not return within {elapsed:g} s", s.describe())
            honoured.fail(f"verify did not return within {elapsed:g} s (timeout {v_timeout(v):g} s)", s.describe())
            break  # the hung call keeps its thread; do not pile more on
        if kind == "raised":
            garbage.fail(f"verify raised {type(value).__name__}: {value}", s.describe())
            continue
        problem = verdict_problem(value)
        if problem:
            garbage.fail(problem, s.describe())
        if s.raw and problem is None and value.error_kind != "malformed":
            garbage.fail(f"a non-Completion input gave {got_kind(value)}, not a malformed verdict", s.describe())
        kinds = garbage.extra.setdefault("verdicts", {})
        if isinstance(value, Verdict):
            kinds[got_kind(value)] = kinds.get(got_kind(value), 0) + 1
            if value.error == "timeout":
                overran.add(entry)  # it met its deadline; the same text on the next task would again
        if use_timeout:
            honoured.checked += 1
            slowest = max(slowest, elapsed)
            if elapsed > limit:
                overran.add(entry)
                honoured.fail(f"verify took {elapsed:.2f} s with timeout={timeout:g} s", s.describe())
    if not use_timeout and honoured.status == "pass":
        honoured.status, honoured.detail = "skip", "the verifier takes no timeout param"
    honoured.extra["slowest_s"] = round(slowest, 3)
    return garbage, honoured


def v_timeout(v: Any) -> float:
    t = getattr(v, "timeout", None)
    return float(t) if isinstance(t, (int, float)) and math.isfinite(t) else TIMEOUT_S


# ------------------------------------------------------------------ 5. fresh process
def fresh_samples(name: str, corpus_dir: Path | None = None, extra: list[Sample] | None = None, *,
                  max_chars: int = FRESH_MAX_CHARS) -> list[Sample]:
    """The samples the fresh-process check scores for ``name``."""
    return [s for s in _scorable(name, corpus_dir, extra) if len(_text(s)) <= max_chars]


def check_fresh_process(name: str, corpus_dir: Path | None = None, extra: list[Sample] | None = None,
                        *, max_chars: int = FRESH_MAX_CHARS, cache: VerdictCache | None = None,
                        there: list[dict[str, Any]] | None = None) -> CheckResult:
    """The verifier rebuilt from each sample's spec in a new interpreter gives the same Verdicts (``there``: the
    fresh interpreter's verdicts for ``fresh_samples(...)`` when the caller scored several verifiers in one)."""
    from crossgym.compat_tests.fresh import verdicts_in_fresh_process

    res = CheckResult("fresh_process")
    samples = fresh_samples(name, corpus_dir, extra, max_chars=max_chars)
    here = [verdict_of(s, cache) for s in samples]
    try:
        if there is None:
            there = verdicts_in_fresh_process([(s.task, s.completion) for s in samples])
    except Exception as exc:
        return CheckResult("fresh_process", "error", f"{type(exc).__name__}: {exc}")
    if len(there) != len(samples):
        return CheckResult("fresh_process", "error", f"{len(there)} fresh verdicts for {len(samples)} samples")
    for s, a, b in zip(samples, here, there, strict=True):
        if "build_error" in b:
            return res.fail(f"the fresh process could not score: {b['build_error']}", s.describe())
        if a.error == "timeout" or b.get("error") == "timeout":
            continue
        res.checked += 1
        if a.to_dict() != Verdict.from_dict(b).to_dict():
            res.fail("the verdict differs in a fresh process", {**s.describe(), "here": a.to_dict(), "fresh": b})
    return res


# ------------------------------------------------------------------ frozen references
def check_frozen(name: str, corpus_dir: Path | None = None, cache: VerdictCache | None = None) -> CheckResult:
    """The frozen corpus still scores as when it was frozen, unless the verifier's version changed since (a
    scoring change without a version bump breaks `crossgym reverify` and every stored reward)."""
    from crossgym.compat_tests.corpus import verifier_corpus

    res = CheckResult("frozen")
    samples = verifier_corpus(name, corpus_dir)
    if not samples:
        return CheckResult("frozen", "skip", "no frozen corpus for this verifier (tests/compat/make_corpus.py)")
    version = str(getattr(verifier_factory(name), "version", ""))
    stale = 0
    for s in samples:
        ref = s.reference
        if not ref or ref.get("error") == "timeout":
            continue
        if str(ref.get("version")) != version:
            stale += 1
            continue
        v = verdict_of(s, cache)
        if v.error == "timeout":
            continue
        res.checked += 1
        if v.reward != ref.get("reward") or v.passed != ref.get("passed") or v.error_kind != ref.get("error"):
            res.fail(f"scoring changed without a version bump (version {version}): frozen reward "
                     f"{ref.get('reward')!r}, now {v.reward!r}",
                     {**s.describe(), "frozen": ref, "now": v.to_dict()})
    if stale:
        res.extra["other_version"] = stale
        if not res.checked and res.status == "pass":
            res.status, res.detail = "skip", f"frozen at another version ({stale} samples); re-freeze it"
    return res


def _scorable(name: str, corpus_dir: Path | None, extra: list[Sample] | None) -> list[Sample]:
    """Examples, the frozen corpus and ``extra``: the samples with meaningful verdicts (garbage has its own check)."""
    return [s for s in samples_for(name, get_examples(name), corpus_dir, garbage_tasks=0, extra=extra or ())
            if not s.raw]


def _text(s: Sample) -> str:
    return "".join(m.content for m in s.completion.messages)


def conformance(name: str, corpus_dir: Path | None = None, *, fresh: bool = True,
                garbage_tasks: int = GARBAGE_TASKS, cache: VerdictCache | None = None,
                fresh_verdicts: list[dict[str, Any]] | None = None) -> dict[str, CheckResult]:
    """Every conformance check for one verifier, by check name; a check that crashes is an "error" result.
    ``cache``: the run's verdicts (shared with parity); ``fresh_verdicts``: see ``check_fresh_process(there=)``."""
    checks: list[tuple[str, Callable[[], Any]]] = [
        ("examples", lambda: check_examples(name, cache)),
        ("determinism", lambda: check_determinism(name, corpus_dir, cache=cache)),
        ("garbage+timeout", lambda: check_garbage_and_timeout(name, corpus_dir, tasks=garbage_tasks)),
        ("frozen", lambda: check_frozen(name, corpus_dir, cache)),
    ]
    if fresh:
        checks.append(("fresh_process", lambda: check_fresh_process(name, corpus_dir, cache=cache,
                                                                    there=fresh_verdicts)))
    out: dict[str, CheckResult] = {}
    for label, fn in checks:
        try:
            got = fn()
        except Exception as exc:
            log.debug("check %s crashed on %s", label, name, exc_info=True)
            got = tuple(CheckResult(n, "error", f"{type(exc).__name__}: {exc}") for n in label.split("+"))
        for r in got if isinstance(got, tuple) else (got,):
            out[r.name] = r
    return out
