""""What to do next": one line per common pattern an eval shows, overall or for one task source, saying what to do.

Patterns, in the order a person should deal with them:

- ``verifier_erroring``: infrastructure failures (the verifier raised or timed out, its sandbox or the environment
  failed: ``fault`` infra) on at least :data:`VERIFIER_WARN` of the rollouts: nothing else is trustworthy until
  that is fixed, and RL would learn from the verifier's failures;
- ``format_never_produced``: at least :data:`FORMAT_WARN` of the completions are malformed;
- ``none_solved``: no rollout passes (GRPO gets no signal from groups that all fail);
- ``all_solved``: at least :data:`SOLVED_WARN` pass (little left to learn).

A pattern that holds overall is said once; a source gets its own line only for a pattern that does not hold
overall. With none of them, one line says so and points at the failure modes and `crossgym compare`.
"""

from __future__ import annotations

from typing import Any

VERIFIER_WARN = 0.05
FORMAT_WARN = 0.5
SOLVED_WARN = 0.95
#: "none solved" is not said where most rollouts are infrastructure failures (the verifier is the cause then)
INFRA_DOMINATES = 0.5
PATTERNS = ("verifier_erroring", "format_never_produced", "none_solved", "all_solved")


def _rates(group: dict[str, Any]) -> tuple[int, float, float, float | None]:
    """(rollouts, infra rate, malformed rate, pass@1) of a metrics group (the whole run or one source)."""
    n = int(group.get("n_rollouts") or 0)
    errs = group.get("errors") or {}
    malformed = int(errs.get("malformed", 0))
    infra = int(errs.get("total", 0)) - malformed
    return n, (infra / n if n else 0.0), (malformed / n if n else 0.0), group.get("pass@1")


def _failing_verifiers(metrics: dict[str, Any]) -> list[str]:
    out = []
    for name, g in (metrics.get("by_verifier") or {}).items():
        errs = g.get("errors") or {}
        if int(errs.get("total", 0)) - int(errs.get("malformed", 0)) > 0:
            out.append(name)
    return out


def _line(pattern: str, scope: str, group: dict[str, Any], metrics: dict[str, Any]) -> str:
    n, infra, malformed, p1 = _rates(group)
    errs = group.get("errors") or {}
    where = "all" if scope == "all" else f"the {scope!r}"
    if pattern == "verifier_erroring":
        names = _failing_verifiers(metrics) if scope == "all" else []
        check = ", ".join(f"`crossgym check {v}`" for v in names[:3]) or "`crossgym check VERIFIER`"
        return (f"Fix the verifier first: it failed on {infra:.0%} of {where} rollouts ({errs.get('timeout', 0)} "
                f"timeouts, {errs.get('exception', 0)} exceptions). These are infrastructure failures, not the "
                f"model's: run {check}, raise its timeout if it times out, and in training set on_error: none "
                f"(TRL) so those samples are masked instead of scored as failures.")
    if pattern == "format_never_produced":
        return (f"The answer format is rarely produced: {malformed:.0%} of {where} completions are malformed. State "
                f"the format in the prompt or a system prompt with one worked example, check the chat template (empty "
                f"completions), or add a format reward under verifiers: before training.")
    if pattern == "none_solved":
        of = "" if scope == "all" else f" of {scope!r}"
        return (f"Nothing is solved: none of the {n} rollouts{of} passed, so GRPO gets no signal from them. Check "
                f"that a known-good answer passes (`crossgym verify --verifier NAME --task FILE --completion TEXT`), then "
                f"use easier tasks, a stronger model, more samples (--n) or partial credit.")
    return (f"Everything is solved: {p1:.0%} of {where} rollouts pass, so there is little left to learn. Use harder "
            f"tasks (or drop this source) before training.")


def _holds(pattern: str, group: dict[str, Any]) -> bool:
    n, infra, malformed, p1 = _rates(group)
    if not n:
        return False
    if pattern == "verifier_erroring":
        return infra >= VERIFIER_WARN
    if pattern == "format_never_produced":
        return malformed >= FORMAT_WARN
    if pattern == "none_solved":
        return p1 is not None and p1 == 0.0 and infra < INFRA_DOMINATES
    return p1 is not None and p1 >= SOLVED_WARN


def next_steps(metrics: dict[str, Any]) -> list[dict[str, str]]:
    """The "what to do next" lines of an eval's metrics: ``{"pattern", "scope" ("all" or a source), "line"}``."""
    out: list[dict[str, str]] = []
    sources = metrics.get("by_source") or {}
    for pattern in PATTERNS:
        if _holds(pattern, metrics):
            out.append({"pattern": pattern, "scope": "all", "line": _line(pattern, "all", metrics, metrics)})
            continue
        if len(sources) > 1:
            out += [{"pattern": pattern, "scope": name, "line": _line(pattern, name, g, metrics)}
                    for name, g in sources.items() if _holds(pattern, g)]
    if not out and metrics.get("n_rollouts"):
        out.append({"pattern": "none", "scope": "all",
                    "line": "No common problem found: the failure modes below say where the model fails. Train, then "
                            "run `crossgym compare BEFORE AFTER` on two evals of the same tasks to tell a real change "
                            "from noise."})
    return out
