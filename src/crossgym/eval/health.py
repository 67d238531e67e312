"""Cheap health checks over rollouts (metrics.json ``health``): things that make an eval or a training run
misleading rather than merely low, each with a count, a rate and, past a threshold, one warning line saying what
to do.

- ``truncated``: single-turn completions whose token ids reach the sampling's ``max_tokens`` (known only when the
  record has token ids and its provenance the sampling); ``env_truncated``: episodes cut at the environment's
  max_turns;
- ``empty``: completions with no text;
- ``repetitive``: long completions that compress to almost nothing (a runaway generation repeating itself);
- ``verifier_errors``: timeouts and exceptions (the verifier's fault, not the completion's), ``malformed`` apart
  (warned when most completions are: the format is never produced), and nearly every rollout passing;
- ``zero_variance_groups``: tasks with several samples all scored alike (GRPO learns nothing from such a group);
- ``reward_without_pass``: the share of the total reward earned by rollouts that did not pass, and the components
  that earned it: reward coming mostly from partial credit (format) while the task itself stays unsolved.

One streaming pass (Health), holding no Rollout: memory grows with tasks, not samples.
"""

from __future__ import annotations

import math
import zlib
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from crossgym.protocol.episode import Rollout
from crossgym.scoring.records import provenance_of

TRUNCATED_WARN = 0.2
EMPTY_WARN = 0.1
REPETITIVE_WARN = 0.1
VERIFIER_ERROR_WARN = 0.05
MALFORMED_WARN = 0.5
SOLVED_WARN = 0.95
ZERO_VARIANCE_WARN = 0.5
#: reward_without_pass is flagged when most reward comes from rollouts that did not pass and few pass
UNEARNED_WARN = 0.5
LOW_PASS = 0.1
#: a completion at least this long that zlib compresses below RATIO of its size is "repetitive"
REPETITIVE_MIN_CHARS = 400
REPETITIVE_RATIO = 0.12


def _rate(count: int, n: int) -> float:
    return count / n if n else 0.0


def _max_tokens(r: Rollout) -> int | None:
    sampling = provenance_of(r).extra.get("sampling")
    value = sampling.get("max_tokens") if isinstance(sampling, dict) else None
    return int(value) if isinstance(value, (int, float)) and value > 0 else None


def _repetitive(text: str) -> bool:
    if len(text) < REPETITIVE_MIN_CHARS:
        return False
    data = text.encode("utf-8", "replace")
    return len(zlib.compress(data, 6)) < REPETITIVE_RATIO * len(data)


class Health:
    """The health document in one streaming pass, holding no Rollout: ``add`` each rollout, then ``doc``. Per task it
    keeps its samples, its first finite reward, whether another differed, and whether all/any passed."""

    def __init__(self) -> None:
        self.n = self.known = self.truncated = self.env_truncated = self.empty = self.repetitive = 0
        self.verifier_errors = self.malformed = self.passed = self.failing = 0
        self.caps: set[int] = set()
        self.tasks: dict[str, list[Any]] = {}  # id -> [samples, first finite reward, varied, all passed, any passed]
        self.total: float = 0
        self.unearned: float = 0
        self.comp_sum: dict[str, float] = defaultdict(float)

    def add(self, r: Rollout) -> None:
        self.n += 1
        prov = provenance_of(r)
        if prov.extra.get("env_truncated"):
            self.env_truncated += 1
        cap = _max_tokens(r)
        if cap is not None and r.completion.token_ids is not None and r.turns <= 1:
            self.known += 1
            self.caps.add(cap)
            self.truncated += len(r.completion.token_ids) >= cap
        text = r.completion.text
        self.empty += not text.strip()
        self.repetitive += _repetitive(text)
        v = r.verdict
        kind = v.error_kind
        self.verifier_errors += kind in ("timeout", "exception")
        self.malformed += kind == "malformed"
        reward, passed = v.reward, v.passed
        self.passed += 1 if passed else 0
        t = self.tasks.get(r.task.id)
        if t is None:
            t = self.tasks[r.task.id] = [0, None, False, True, False]
        t[0] += 1
        if not math.isnan(reward):
            if t[1] is None:
                t[1] = reward
            elif reward != t[1]:
                t[2] = True
            self.total += max(0.0, reward)
            if not passed:
                self.unearned += max(0.0, reward)
                self.failing += 1
                for name, value in v.components.items():
                    self.comp_sum[f"{r.task.verifier.name}.{name}"] += value
        t[3] = t[3] and bool(passed)
        t[4] = t[4] or bool(passed)

    def doc(self) -> dict[str, Any]:
        n = self.n
        multi = [t for t in self.tasks.values() if t[0] >= 2]
        flat = [t for t in multi if not t[2]]
        all_pass = sum(1 for t in flat if t[3])
        all_fail = sum(1 for t in flat if not t[4])
        doc: dict[str, Any] = {
            "n_rollouts": n,
            "truncated": {"count": self.truncated, "rate": _rate(self.truncated, self.known), "known": self.known,
                          "max_tokens": sorted(self.caps)},
            "env_truncated": {"count": self.env_truncated, "rate": _rate(self.env_truncated, n)},
            "empty": {"count": self.empty, "rate": _rate(self.empty, n)},
            "repetitive": {"count": self.repetitive, "rate": _rate(self.repetitive, n)},
            "verifier_errors": {"count": self.verifier_errors, "rate": _rate(self.verifier_errors, n)},
            "malformed": {"count": self.malformed, "rate": _rate(self.malformed, n)},
            "zero_variance_groups": {"groups": len(multi), "count": len(flat), "rate": _rate(len(flat), len(multi)),
                                     "all_pass": all_pass, "all_fail": all_fail,
                                     "other": len(flat) - all_pass - all_fail},
            "reward_without_pass": self._reward_without_pass(),
        }
        doc["warnings"] = _warnings(doc)
        return doc

    def _reward_without_pass(self) -> dict[str, Any]:
        total, failing = self.total, self.failing
        share = self.unearned / total if total > 0 else 0.0
        pass_rate = _rate(self.passed, self.n)
        components = {k: v / failing for k, v in sorted(self.comp_sum.items(), key=lambda kv: -kv[1]) if v > 0}
        return {"share": share, "pass_rate": pass_rate, "components": components,
                "flag": total > 0 and share >= UNEARNED_WARN and pass_rate < LOW_PASS}


def health_checks(rollouts: Iterable[Rollout]) -> dict[str, Any]:
    """The health document of metrics.json: one pass over ``rollouts`` (see Health)."""
    health = Health()
    for r in rollouts:
        health.add(r)
    return health.doc()


def _warnings(doc: dict[str, Any]) -> list[str]:
    out = []
    t = doc["truncated"]
    if t["known"] and t["rate"] >= TRUNCATED_WARN:
        out.append(f"{t['rate']:.0%} of completions hit max_tokens ({', '.join(map(str, t['max_tokens']))}): "
                   "answers are cut off; raise max_tokens (grpo.max_completion_length) or ask for shorter answers")
    if doc["empty"]["rate"] >= EMPTY_WARN:
        out.append(f"{doc['empty']['rate']:.0%} of completions are empty: check the chat template and stop strings")
    if doc["repetitive"]["rate"] >= REPETITIVE_WARN:
        out.append(f"{doc['repetitive']['rate']:.0%} of completions repeat themselves (runaway generations): lower "
                   "the temperature or add a stop string")
    if doc["malformed"]["rate"] >= MALFORMED_WARN:
        out.append(f"{doc['malformed']['rate']:.0%} of completions are malformed (the answer format is rarely "
                   "produced): say the format in the prompt or system prompt, show an example, or add a format "
                   "reward")
    if doc["reward_without_pass"]["pass_rate"] >= SOLVED_WARN:
        out.append(f"{doc['reward_without_pass']['pass_rate']:.0%} of rollouts pass: little is left to learn "
                   "from these tasks; use harder ones")
    if doc["verifier_errors"]["rate"] >= VERIFIER_ERROR_WARN:
        out.append(f"the verifier erred or timed out on {doc['verifier_errors']['rate']:.0%} of rollouts: fix it "
                   "before training (`crossgym check NAME`); RL would learn from its failures")
    z = doc["zero_variance_groups"]
    if z["groups"] and z["rate"] >= ZERO_VARIANCE_WARN:
        why = ("every sample solves them: use harder tasks" if z["all_pass"] >= z["all_fail"]
               else "no sample solves them: use easier tasks or shape the reward")
        out.append(f"{z['rate']:.0%} of tasks score all their samples alike (GRPO learns nothing from them); "
                   f"mostly {why}")
    u = doc["reward_without_pass"]
    if u["flag"]:
        comps = ", ".join(list(u["components"])[:3]) or "partial credit"
        out.append(f"{u['share']:.0%} of the reward goes to rollouts that did not pass (from {comps}) while only "
                   f"{u['pass_rate']:.0%} pass: the model can learn the format without the task")
    return out
