"""Failure modes: the rollouts that did not pass, grouped by what went wrong.

- **errors** (the verdict carries an error kind: ``timeout``, ``malformed``, ``exception``) apart from
- **failures** (an honest judgement that the completion is wrong), each grouped by the verifier's reason class:
  the reason with quoted values and numbers stripped (``expected 12, got '7'`` -> ``expected <n>, got <s>``);
- **components**: the Verdict component that failed (value 0, or below the best value the same component reaches
  on the same task), per verifier.

Each mode has a count, its share of all rollouts, the same per task source, and a few examples (task id, a
completion excerpt, the reason) drawn from as many sources as there are. Every failure also counts under its
``fault`` (crossgym.scoring.failure): ``infra`` (the verifier, its sandbox or the environment broke: a trainer masks
it) or ``model`` (a wrong or malformed answer); each error mode says its fault.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from crossgym.protocol.episode import Rollout
from crossgym.scoring.failure import fault

HONEST = "fail"
EXAMPLES = 3
#: classes listed per group; the rest are counted in ``other``
MAX_MODES = 20
EXCERPT = 240
REASON_CHARS = 300
CLASS_CHARS = 160

_QUOTED = re.compile(r"'(?:[^'\\\n]|\\.){0,200}'|\"(?:[^\"\\\n]|\\.){0,200}\"|`[^`\n]{0,200}`")
_NUMBER = re.compile(r"(?<![A-Za-z_])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![A-Za-z_])")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_SPACE = re.compile(r"\s+")


def reason_class(reason: str) -> str:
    """The class of a verifier's reason: its first line with quoted values and numbers replaced by placeholders."""
    text = (reason or "").strip().split("\n", 1)[0]
    if not text:
        return "(no reason given)"
    text = _QUOTED.sub("<s>", text)
    text = _HEX.sub("<n>", text)
    text = _NUMBER.sub("<n>", text)
    text = _SPACE.sub(" ", text).strip()
    return text[:CLASS_CHARS] + ("..." if len(text) > CLASS_CHARS else "")


def failure_kind(rollout: Rollout) -> str:
    """``fail`` for an honest failure, else the verdict's error kind."""
    v = rollout.verdict
    return HONEST if v.error is None else (v.error_kind or "exception")


def _reason(rollout: Rollout) -> str:
    v = rollout.verdict
    if v.reason:
        return v.reason
    if v.error:
        return v.error.split(":", 1)[1].strip() if ":" in v.error else v.error
    return ""


def _excerpt(text: str, limit: int = EXCERPT) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"


def example(rollout: Rollout, source: str) -> dict[str, Any]:
    return {"task": rollout.task.id, "source": source, "reward": rollout.verdict.reward,
            "completion": _excerpt(rollout.completion.text), "reason": _reason(rollout)[:REASON_CHARS]}


def _spread(rollouts: list[tuple[str, Rollout]], k: int) -> list[tuple[str, Rollout]]:
    """Up to k items, round-robin over sources (so the examples are not all from the first one)."""
    by_source: dict[str, list[tuple[str, Rollout]]] = defaultdict(list)
    for item in rollouts:
        by_source[item[0]].append(item)
    out: list[tuple[str, Rollout]] = []
    queues = list(by_source.values())
    i = 0
    while len(out) < k and any(queues):
        q = queues[i % len(queues)]
        if q:
            out.append(q.pop(0))
        i += 1
    return out


def _modes(items: list[tuple[tuple[str, ...], str, Rollout]], fields: tuple[str, ...], n_total: int,
           n_by_source: Counter[str]) -> dict[str, Any]:
    groups: dict[tuple[str, ...], list[tuple[str, Rollout]]] = defaultdict(list)
    for key, source, r in items:
        groups[key].append((source, r))
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    modes = []
    for key, members in ordered[:MAX_MODES]:
        per_source = Counter(s for s, _ in members)
        modes.append({**dict(zip(fields, key, strict=True)), "count": len(members),
                      "share": len(members) / n_total if n_total else 0.0,
                      "by_source": {s: {"count": c, "share": c / n_by_source[s]}
                                    for s, c in sorted(per_source.items())},
                      "examples": [example(r, s) for s, r in _spread(members, EXAMPLES)]})
    rest = sum(len(m) for _, m in ordered[MAX_MODES:])
    return {"modes": modes, "other": {"classes": max(0, len(ordered) - MAX_MODES), "count": rest}}


def _failed_components(rollouts: Sequence[Rollout]) -> list[list[str]]:
    """For each rollout, the components that failed (only for rollouts that did not pass)."""
    best: dict[tuple[str, str], float] = {}
    for r in rollouts:
        for name, value in r.verdict.components.items():
            key = (r.task.id, name)
            best[key] = max(best.get(key, value), value)
    out: list[list[str]] = []
    for r in rollouts:
        if r.verdict.passed:
            out.append([])
            continue
        out.append([name for name, value in r.verdict.components.items()
                    if value <= 0.0 or value < best[(r.task.id, name)]])
    return out


def failure_modes(rollouts: Sequence[Rollout], source_of: Callable[[Rollout], str]) -> dict[str, Any]:
    """The failure-mode document of metrics.json (``failure_modes``)."""
    n = len(rollouts)
    n_by_source = Counter(source_of(r) for r in rollouts)
    kinds: Counter[str] = Counter()
    faults: Counter[str] = Counter()
    errors: list[tuple[tuple[str, ...], str, Rollout]] = []
    honest: list[tuple[tuple[str, ...], str, Rollout]] = []
    components: list[tuple[tuple[str, ...], str, Rollout]] = []
    for r, failed in zip(rollouts, _failed_components(rollouts), strict=True):
        if r.verdict.passed:
            continue
        source = source_of(r)
        kind = failure_kind(r)
        kinds[kind] += 1
        faults[fault(r.verdict)] += 1
        cls = reason_class(_reason(r))
        (honest if kind == HONEST else errors).append(((kind, cls, fault(r.verdict)) if kind != HONEST else (cls,),
                                                       source, r))
        for name in failed:
            components.append(((r.task.verifier.name, name), source, r))
    n_failed = sum(kinds.values())
    return {
        "n_rollouts": n, "failed": n_failed, "errors_total": n_failed - kinds.get(HONEST, 0),
        "honest_failures": kinds.get(HONEST, 0),
        "by_kind": dict(sorted(kinds.items(), key=lambda kv: -kv[1])),
        "by_fault": {"infra": faults.get("infra", 0), "model": faults.get("model", 0)},
        "errors": _modes(errors, ("kind", "reason", "fault"), n, n_by_source),
        "failures": _modes(honest, ("reason",), n, n_by_source),
        "components": _modes(components, ("verifier", "component"), n, n_by_source),
        "definition": ("errors: verdicts with an error kind (timeout, malformed, exception); failures: honest "
                       "judgements that did not pass, by reason class (numbers and quoted values stripped); "
                       "components: a Verdict component at 0 or below its best value on the same task; by_fault: "
                       "infra (the verifier, its sandbox or the environment failed: mask it) vs model (wrong or "
                       "malformed)"),
    }


def top_modes(doc: dict[str, Any], limit: int = 5) -> list[dict[str, Any]]:
    """The biggest modes, errors and failures together, each with its ``kind`` (for summaries)."""
    rows = [dict(m) for m in doc["errors"]["modes"]]
    rows += [{**m, "kind": HONEST} for m in doc["failures"]["modes"]]
    rows.sort(key=lambda m: -m["count"])
    return rows[:limit]
