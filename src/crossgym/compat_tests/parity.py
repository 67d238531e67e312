"""Reward parity: a verifier's reward through a backend's native path equals Verdict.reward exactly.

Reward semantics (DESIGN.md, identical on every backend): reward = Verdict.reward; a verifier error or timeout
scores ``on_error`` (default 0.0); a "malformed" verdict keeps its own reward. The reference is computed here with
``crossgym.load_verifier``; samples whose reference verdict timed out are left out (a deadline is not a reward).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from crossgym.compat_tests.corpus import Sample
from crossgym.compat_tests.drivers import Driver
from crossgym.compat_tests.results import as_float32, explain_difference, same_reward
from crossgym.compat_tests.verdicts import VerdictCache
from crossgym.protocol.task import Verdict

log = logging.getLogger(__name__)

#: the default on_error every backend applies to verifier errors and timeouts
ON_ERROR = 0.0


def expected_reward(v: Verdict, on_error: float | None = ON_ERROR) -> float | None:
    """The reward a backend must hand its trainer for verdict ``v``."""
    if v.error is None or v.error_kind == "malformed":
        return float(v.reward)
    return on_error


def is_multi_turn(sample: Sample) -> bool:
    """More than one message, or tool calls: needs a backend's multi-turn path."""
    msgs = sample.completion.messages
    return len(msgs) != 1 or bool(msgs[0].tool_calls) or msgs[0].role != "assistant"


@dataclass
class ParityResult:
    """Parity of one verifier on one backend in one mode."""

    verifier: str
    backend: str
    mode: str
    status: str = "pass"  # pass | mismatch | error | skip
    samples: int = 0
    compared: int = 0
    mismatches: int = 0
    timeouts: int = 0  # left out: the reference verdict timed out or took over SLOW_S seconds
    first_mismatch: dict[str, Any] | None = None
    detail: str = ""
    sources: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "samples": self.samples, "compared": self.compared,
                "mismatches": self.mismatches, "timeouts": self.timeouts, "first_mismatch": self.first_mismatch,
                "detail": self.detail, "sources": self.sources}


#: a sample whose reference verdict took longer than this is left out of parity (the timeout check reports the
#: slowness; scoring it again through every backend would only multiply it)
SLOW_S = 2.0


def reference_verdicts(samples: Sequence[Sample], timings: list[float] | None = None,
                       cache: VerdictCache | None = None) -> list[Verdict]:
    """Each sample's Verdict from its task's verifier, in this process (``timings`` gets the seconds each took;
    ``cache``: the run's verdicts, so a sample the conformance checks scored is not scored again)."""
    cache = cache or VerdictCache()
    out = []
    for s in samples:
        v, took = cache.timed(s)
        out.append(v)
        if timings is not None:
            timings.append(took)
    return out


def parity_ready(samples: Sequence[Sample], cache: VerdictCache | None = None
                 ) -> tuple[list[Sample], dict[str, Verdict], int]:
    """The samples to compare, their reference verdicts, and how many were left out.

    Only samples some backend can carry are scored (``carried``). Left out: those whose reference timed out or took
    over SLOW_S seconds (a deadline is not a reward), and a garbage entry on the other tasks once it was that slow
    on one (the timeout check's rule: a slow entry costs one overrun, not one per task)."""
    cache = cache or VerdictCache()
    kept: list[Sample] = []
    refs: dict[str, Verdict] = {}
    slow_entries: set[str] = set()
    left_out = 0
    for s in (s for s in samples if carried(s)):
        entry = s.id.rpartition("@")[0] if s.source == "garbage" else ""
        if entry and entry in slow_entries:
            left_out += 1
            continue
        v, took = cache.timed(s)
        refs[s.key] = v
        if v.error == "timeout" or took > SLOW_S:
            left_out += 1
            if entry:
                slow_entries.add(entry)
            continue
        kept.append(s)
    return kept, refs, left_out


#: completions longer than this stay with the conformance checks: a run's max_completion_length cuts them, and
#: backends that truncate (prompt + response within a token budget) would differ for that reason alone
MAX_CHARS = 4096
#: chat control tokens: a generator emits them as control tokens, and every backend strips them from the text it
#: scores, so a completion with them as literal text cannot come out of a generator
CONTROL_TOKENS = ("<|im_end|>", "<|im_start|>", "<|endoftext|>")


def generatable(sample: Sample) -> bool:
    """Whether a generator could have produced this completion: valid Unicode (no lone surrogates), no chat control
    tokens as text, at most MAX_CHARS characters, tool calls counted as the JSON a model writes for them. Other
    samples stay with the conformance checks."""
    total = 0
    for m in sample.completion.messages:
        try:
            m.content.encode("utf-8")
        except UnicodeEncodeError:
            return False
        total += len(m.content) + sum(len(json.dumps({"name": c.name, "arguments": c.arguments}, default=str))
                                      for c in m.tool_calls)
        if total > MAX_CHARS or any(t in m.content for t in CONTROL_TOKENS):
            return False
    return True


def carried(sample: Sample) -> bool:
    """A well-formed, generatable completion: what some mode of some backend carries."""
    return not sample.raw and generatable(sample)


def samples_for_mode(samples: Sequence[Sample], mode: str, *, declared: bool = True) -> list[Sample]:
    """The generatable samples a mode carries. single_turn: one plain assistant message. multi_turn: with a driver
    that declares its modes, everything (its multi-turn path scores the Completion it is given); otherwise the
    scripted episodes, whose tool results and feedback the environment really produced (such a driver replays the
    assistant turns through the environment, so a transcript with invented environment messages would differ)."""
    usable = [s for s in samples if carried(s)]
    if mode == "single_turn":
        return [s for s in usable if not is_multi_turn(s)]
    if declared:
        return usable
    return [s for s in usable if s.source == "episode"]


def _call(driver: Driver, samples: Sequence[Sample], mode: str) -> list[Any]:
    out = driver.rewards([s.task for s in samples], [s.completion for s in samples], mode)
    if len(out) != len(samples):
        raise ValueError(f"native_rewards returned {len(out)} rewards for {len(samples)} completions")
    return out


def run_parity(verifier: str, backend: str, driver: Driver, samples: Sequence[Sample], mode: str,
               references: dict[str, Verdict] | None = None, rewards: Sequence[Any] | None = None) -> ParityResult:
    """Compare the driver's rewards with the reference verdicts on ``samples`` (already filtered for ``mode``);
    ``rewards`` are the driver's answers when the caller already has them (a batch over several verifiers)."""
    res = ParityResult(verifier=verifier, backend=backend, mode=mode, samples=len(samples))
    if not samples:
        res.status, res.detail = "skip", f"no {mode.replace('_', '-')} samples"
        return res
    refs = references or {}
    verdicts = [refs[s.key] if s.key in refs else None for s in samples]
    todo = [i for i, v in enumerate(verdicts) if v is None]
    for i, v in zip(todo, reference_verdicts([samples[i] for i in todo]), strict=True):
        verdicts[i] = v
    try:
        got = _call(driver, samples, mode) if rewards is None else list(rewards)
    except Exception as exc:
        return _locate_error(res, driver, samples, mode, exc)
    for s, ref, g in zip(samples, verdicts, got, strict=True):
        assert ref is not None
        v = ref
        res.sources[s.source] = res.sources.get(s.source, 0) + 1
        if v.error == "timeout":
            res.timeouts += 1
            continue
        res.compared += 1
        want = expected_reward(v)
        if want is not None and driver.reward_dtype == "float32":  # what a float32 reward tensor holds
            want = as_float32(want)
        if not same_reward(want, g):
            res.mismatches += 1
            if res.first_mismatch is None:
                res.first_mismatch = {**s.describe(), "expected": want, "got": _jsonable(g),
                                      "why": explain_difference(want, g), "verdict": v.to_dict()}
    if res.mismatches:
        res.status = "mismatch"
        res.detail = f"{res.mismatches} of {res.compared} rewards differ; first: {res.first_mismatch['why']}"  # type: ignore[index]
    return res


def run_parity_batch(backend: str, driver: Driver, groups: dict[str, list[Sample]], mode: str,
                     references: dict[str, Verdict] | None = None) -> dict[str, ParityResult]:
    """Parity for several verifiers with ONE driver call (one trainer, one reward manager): each row is scored by
    its own task's verifier among all of them, as in a mixed-task training run. When the batch call raises, each
    verifier is retried alone so the error lands on the right cell."""
    refs = dict(references or {})
    flat = [s for group in groups.values() for s in group]
    missing = [s for s in flat if s.key not in refs]
    refs.update({s.key: v for s, v in zip(missing, reference_verdicts(missing), strict=True)})
    try:
        got = _call(driver, flat, mode) if flat else []
    except Exception as exc:
        log.info("batched native_rewards raised (%s); retrying per verifier", exc)
        return {v: run_parity(v, backend, driver, group, mode, refs) for v, group in groups.items()}
    out: dict[str, ParityResult] = {}
    i = 0
    for v, group in groups.items():
        out[v] = run_parity(v, backend, driver, group, mode, refs, rewards=got[i:i + len(group)])
        i += len(group)
    return out


def _locate_error(res: ParityResult, driver: Driver, samples: Sequence[Sample], mode: str,
                  exc: Exception) -> ParityResult:
    """The batch call raised: find the first sample that makes the driver raise on its own."""
    res.status = "error"
    res.detail = f"native_rewards raised {type(exc).__name__}: {exc}"
    for s in samples:
        try:
            _call(driver, [s], mode)
        except Exception as one:
            res.first_mismatch = {**s.describe(), "expected": None, "got": None,
                                  "why": f"native_rewards raised {type(one).__name__}: {one}"}
            res.detail = f"native_rewards raised on {s.label}: {type(one).__name__}: {one}"
            break
    return res


def _jsonable(x: Any) -> Any:
    if x is None or isinstance(x, (int, float, str, bool)):
        return x
    try:
        return float(x)
    except (TypeError, ValueError):
        return repr(x)
