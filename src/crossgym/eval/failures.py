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

Built in two streaming passes (FailureModes) that hold no Rollout: counts first, then the failed components (which
need each component's best value per task) and the examples of the modes that are listed; the examples are the
ones a pass over the whole list would pick (the first of each source, round-robin).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from crossgym.protocol.episode import Rollout
from crossgym.scoring.failure import fault

T = TypeVar("T")

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


def _spread(rollouts: list[tuple[str, T]], k: int) -> list[tuple[str, T]]:
    """Up to k items, round-robin over sources (so the examples are not all from the first one)."""
    by_source: dict[str, list[tuple[str, T]]] = defaultdict(list)
    for item in rollouts:
        by_source[item[0]].append(item)
    out: list[tuple[str, T]] = []
    queues = list(by_source.values())
    i = 0
    while len(out) < k and any(queues):
        q = queues[i % len(queues)]
        if q:
            out.append(q.pop(0))
        i += 1
    return out


class _Mode:
    """One failure mode's running tally: its count, per source, and (when kept) the first examples per source."""

    __slots__ = ("by_source", "count", "examples")

    def __init__(self) -> None:
        self.count = 0
        self.by_source: Counter[str] = Counter()
        #: source -> its first EXAMPLES examples, sources in first-seen order (None: not collected)
        self.examples: dict[str, list[dict[str, Any]]] | None = None

    def tally(self, source: str) -> None:
        self.count += 1
        self.by_source[source] += 1

    def keep(self, r: Rollout, source: str) -> None:
        if self.examples is None:
            return
        kept = self.examples.get(source)
        if kept is None:
            kept = self.examples[source] = []
        if len(kept) < EXAMPLES:
            kept.append(example(r, source))

    def picked(self) -> list[dict[str, Any]]:
        """The examples ``_spread`` draws from this mode's members (round-robin over sources, first seen first):
        the first EXAMPLES of each source are all it can reach."""
        flat = [(s, e) for s, kept in (self.examples or {}).items() for e in kept]
        return [e for _, e in _spread(flat, EXAMPLES)]


def _modes(groups: dict[tuple[str, ...], _Mode], fields: tuple[str, ...], n_total: int,
           n_by_source: Counter[str]) -> dict[str, Any]:
    ordered = sorted(groups.items(), key=lambda kv: (-kv[1].count, kv[0]))
    modes = []
    for key, m in ordered[:MAX_MODES]:
        modes.append({**dict(zip(fields, key, strict=True)), "count": m.count,
                      "share": m.count / n_total if n_total else 0.0,
                      "by_source": {s: {"count": c, "share": c / n_by_source[s]}
                                    for s, c in sorted(m.by_source.items())},
                      "examples": m.picked()})
    rest = sum(m.count for _, m in ordered[MAX_MODES:])
    return {"modes": modes, "other": {"classes": max(0, len(ordered) - MAX_MODES), "count": rest}}


def _top(groups: dict[tuple[str, ...], _Mode]) -> None:
    """Collect examples (in the second pass) for the modes that will be listed."""
    for _, m in sorted(groups.items(), key=lambda kv: (-kv[1].count, kv[0]))[:MAX_MODES]:
        m.examples = {}


class FailureModes:
    """The failure-mode document in two streaming passes, holding no Rollout: ``add`` each rollout (counts by kind,
    fault and reason class; each component's best value per task), ``start_second``, ``add_second`` each again in
    the same order (failed components; examples of the listed modes), then ``doc``. Memory grows with tasks x
    components and with reason classes, not with rollouts."""

    def __init__(self, source_of: Callable[[Rollout], str]) -> None:
        self.source_of = source_of
        self.n = 0
        self.n_by_source: Counter[str] = Counter()
        self.kinds: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.best: dict[tuple[str, str], float] = {}
        self.errors: dict[tuple[str, ...], _Mode] = {}
        self.honest: dict[tuple[str, ...], _Mode] = {}
        self.components: dict[tuple[str, ...], _Mode] = {}

    def _key(self, r: Rollout) -> tuple[dict[tuple[str, ...], _Mode], tuple[str, ...]]:
        kind = failure_kind(r)
        cls = reason_class(_reason(r))
        if kind == HONEST:
            return self.honest, (cls,)
        return self.errors, (kind, cls, fault(r.verdict))

    def add(self, r: Rollout) -> None:
        self.n += 1
        source = self.source_of(r)
        self.n_by_source[source] += 1
        best = self.best
        for name, value in r.verdict.components.items():
            key = (r.task.id, name)
            best[key] = max(best.get(key, value), value)
        if r.verdict.passed:
            return
        self.kinds[failure_kind(r)] += 1
        self.faults[fault(r.verdict)] += 1
        groups, key2 = self._key(r)
        mode = groups.get(key2)
        if mode is None:
            mode = groups[key2] = _Mode()
        mode.tally(source)

    def start_second(self) -> None:
        _top(self.errors)
        _top(self.honest)

    def add_second(self, r: Rollout) -> None:
        if r.verdict.passed:
            return
        source = self.source_of(r)
        groups, key = self._key(r)
        groups[key].keep(r, source)
        for name, value in r.verdict.components.items():
            if value <= 0.0 or value < self.best[(r.task.id, name)]:
                ckey = (r.task.verifier.name, name)
                mode = self.components.get(ckey)
                if mode is None:
                    mode = self.components[ckey] = _Mode()
                    mode.examples = {}
                mode.tally(source)
                mode.keep(r, source)

    def doc(self) -> dict[str, Any]:
        kinds, n = self.kinds, self.n
        n_failed = sum(kinds.values())
        return {
            "n_rollouts": n, "failed": n_failed, "errors_total": n_failed - kinds.get(HONEST, 0),
            "honest_failures": kinds.get(HONEST, 0),
            "by_kind": dict(sorted(kinds.items(), key=lambda kv: -kv[1])),
            "by_fault": {"infra": self.faults.get("infra", 0), "model": self.faults.get("model", 0)},
            "errors": _modes(self.errors, ("kind", "reason", "fault"), n, self.n_by_source),
            "failures": _modes(self.honest, ("reason",), n, self.n_by_source),
            "components": _modes(self.components, ("verifier", "component"), n, self.n_by_source),
            "definition": ("errors: verdicts with an error kind (timeout, malformed, exception); failures: honest "
                           "judgements that did not pass, by reason class (numbers and quoted values stripped); "
                           "components: a Verdict component at 0 or below its best value on the same task; by_fault: "
                           "infra (the verifier, its sandbox or the environment failed: mask it) vs model (wrong or "
                           "malformed)"),
        }


def failure_modes(rollouts: Iterable[Rollout], source_of: Callable[[Rollout], str]) -> dict[str, Any]:
    """The failure-mode document of metrics.json (``failure_modes``): two passes over ``rollouts`` (a list or any
    re-iterable), see FailureModes."""
    if iter(rollouts) is rollouts:  # a one-shot iterator cannot be read twice
        rollouts = list(rollouts)
    fm = FailureModes(source_of)
    for r in rollouts:
        fm.add(r)
    fm.start_second()
    for r in rollouts:
        fm.add_second(r)
    return fm.doc()


def top_modes(doc: dict[str, Any], limit: int = 5) -> list[dict[str, Any]]:
    """The biggest modes, errors and failures together, each with its ``kind`` (for summaries)."""
    rows = [dict(m) for m in doc["errors"]["modes"]]
    rows += [{**m, "kind": HONEST} for m in doc["failures"]["modes"]]
    rows.sort(key=lambda m: -m["count"])
    return rows[:limit]
