"""The "advantages" check: for the same groups of rewards, each backend's own advantage code gives the advantages
crossgym's reference formula gives, for every ``grpo.variant`` the backend supports (issue 25).

A driver opts in with ``advantages(groups, variant) -> list[list[float]]`` (one advantage per reward, in the same
shape; a group is the rewards of one prompt's completions, None for an unscorable one) and ``ADVANTAGE_VARIANTS``;
``advantage_source() -> str``, optional, says how the hook reached the framework's code on this machine.
The hook must call the framework's own code (TRL: ``GRPOTrainer._generate_and_score_completions``; veRL:
``core_algos.compute_grpo_outcome_advantage``; OpenRLHF: ``RemoteExperienceMaker.compute_advantages_and_returns``).

The reference is written once, here, from each framework's documented semantics (``SEMANTICS``): every backend in
crossgym's mapping normalises by the GROUP's std with Bessel's correction (``torch.std`` / TRL's ``nanstd``,
unbiased), and they differ only by the epsilon added to the std and by whether a None reward is masked. Those
differences are modelled exactly per backend, not hidden by the tolerance (docs/guides/variants.md has the table):

* grpo:    A_i = (r_i - mean(g)) / (std_unbiased(g) + eps)
* dr_grpo: A_i = r_i - mean(g)                               (no std)
* dapo, gspo: grpo's advantages (they change loss aggregation / the importance-sampling level, not advantages)

Comparison: float64 reference on the float32-rounded rewards against the framework's float32 result, within
``RTOL`` relative (``ATOL`` absolute below 1).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from crossgym.compat_tests.results import CheckResult, as_float32

VARIANTS = ("grpo", "dapo", "dr_grpo", "gspo")
#: the variant whose advantages each variant uses (dapo and gspo differ in the loss, not in the advantages)
ADVANTAGE_OF = {"grpo": "grpo", "dapo": "grpo", "gspo": "grpo", "dr_grpo": "dr_grpo"}
#: float32 results against a float64 reference: relative tolerance, and absolute for |reference| < 1
RTOL = 1e-6
ATOL = 1e-6

Groups = Sequence[Sequence[float | None]]


class Unavailable(RuntimeError):
    """A driver's advantages hook cannot reach the framework's code here (the check is a skip with this reason)."""


@dataclass(frozen=True)
class Semantics:
    """How one framework computes a group-normalised advantage (each field read from its code, version named)."""

    source: str  #: the framework function that computes it
    eps: float  #: added to the std before dividing
    ddof: int = 1  #: 1: Bessel's correction (torch.std, TRL nanstd); 0: population std
    #: None rewards (NaN) are left out of the group's mean/std and get advantage 0; False: the framework has no mask
    masks_none: bool = False
    #: what a group whose std is undefined (one valid reward) gets when scaled: "zero" (TRL: NaN -> 0)
    undefined_std: str = "zero"


SEMANTICS: dict[str, Semantics] = {
    "trl": Semantics("trl 1.16 GRPOTrainer._generate_and_score_completions (scale_rewards group/none; nanstd)",
                     eps=1e-4, masks_none=True),
    # Unsloth trains with TRL's GRPOTrainer (trl <= 1.15 under its pins): the same code path and epsilon
    "unsloth": Semantics("trl 1.15 GRPOTrainer._generate_and_score_completions under Unsloth (scale_rewards "
                         "group/none; nanstd)", eps=1e-4, masks_none=True),
    "verl": Semantics("verl 0.9.1 ray_trainer.compute_advantage -> core_algos.compute_grpo_outcome_advantage "
                      "(norm_adv_by_std_in_grpo; torch.std)", eps=1e-6),
    "openrlhf": Semantics("openrlhf 0.11.2 RemoteExperienceMaker.compute_advantages_and_returns (group_norm / "
                          "dr_grpo; torch.std)", eps=1e-9),
}


def reference(groups: Groups, variant: str, sem: Semantics) -> list[list[float]]:
    """crossgym's advantages for ``groups`` under ``variant``, with the framework semantics ``sem`` (float64 on
    the float32-rounded rewards)."""
    if variant not in ADVANTAGE_OF:
        raise ValueError(f"unknown variant {variant!r}; use one of {', '.join(VARIANTS)}")
    scaled = ADVANTAGE_OF[variant] == "grpo"
    out = []
    for g in groups:
        if not sem.masks_none and any(r is None for r in g):
            raise ValueError(f"{sem.source} cannot mask a None reward")
        vals = [as_float32(float(r)) for r in g if r is not None]
        n = len(vals)
        mean = sum(vals) / n if n else 0.0
        std = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - sem.ddof)) if n > sem.ddof else math.nan
        row = []
        for r in g:
            if r is None:
                row.append(0.0)
                continue
            a = as_float32(float(r)) - mean
            if scaled:
                a = 0.0 if math.isnan(std) and sem.undefined_std == "zero" else a / (std + sem.eps)
            row.append(a)
        out.append(row)
    return out


@dataclass(frozen=True)
class Case:
    name: str
    groups: tuple[tuple[float | None, ...], ...]

    @property
    def masked(self) -> bool:
        return any(r is None for g in self.groups for r in g)


#: the fixed inputs (edge cases, and weighted multi-term rewards); ``cases()`` adds the frozen corpus's batch
CASES = (
    Case("binary", ((1.0, 0.0, 0.0, 1.0), (1.0, 0.0, 0.0, 0.0), (0.0, 1.0, 1.0, 1.0))),
    Case("all_equal", ((0.5, 0.5, 0.5, 0.5), (0.0, 0.0, 0.0, 0.0), (1.0, 1.0, 1.0, 1.0))),
    Case("one_outlier", ((0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 10.0), (1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -3.0))),
    Case("groups_of_2", ((0.2, 0.9), (1.0, 0.0), (0.3, 0.3), (-1.5, 2.25))),
    Case("weighted_terms", ((2.25, -0.5, 2.0, 0.25), (0.1, 0.7, 0.3, 0.9), (-0.5, -0.5, 2.25, 2.0))),
    Case("none_masked", ((1.0, None, 0.0, 1.0), (None, 0.5, None, 0.25), (None, None, 1.0, None),
                         (None, None, None, None))),
)


#: the realistic batch: this many rewards of each frozen-corpus verifier file, spread over the file, as one group
CORPUS_GROUP = 4


def corpus_case(corpus_dir: str | os.PathLike[str] | None = None) -> Case | None:
    """One group per verifier of the frozen compat corpus (tests/compat/corpus): its recorded reference rewards,
    CORPUS_GROUP of them spread over the file (None rewards left out). None when there is no corpus."""
    from crossgym.compat_tests.corpus import default_corpus_dir, read_jsonl

    root = default_corpus_dir(corpus_dir)
    folder = root / "verifiers" if root is not None else None
    if folder is None or not folder.is_dir():
        return None
    groups = []
    for path in sorted(folder.glob("*.jsonl")):
        rewards = [float(r) for rec in read_jsonl(path)
                   if isinstance(r := (rec.get("reference") or {}).get("reward"), (int, float))
                   and math.isfinite(float(r))]
        if len(rewards) >= CORPUS_GROUP:
            step = len(rewards) // CORPUS_GROUP
            groups.append(tuple(rewards[::step][:CORPUS_GROUP]))
    return Case("frozen_corpus", tuple(groups)) if groups else None


def cases(corpus_dir: str | os.PathLike[str] | None = None) -> tuple[Case, ...]:
    """CASES, and the frozen corpus's batch where there is one."""
    extra = corpus_case(corpus_dir)
    return CASES + ((extra,) if extra is not None else ())


def close(ref: float, got: Any) -> bool:
    """``got`` equals ``ref`` within RTOL relative (ATOL absolute when |ref| < 1)."""
    try:
        g = float(got)
    except (TypeError, ValueError):
        return False
    return math.isfinite(g) and abs(g - ref) <= max(RTOL * abs(ref), ATOL)


def check_variant(hook: Any, backend: str, variant: str, sem: Semantics,
                  inputs: Sequence[Case] = CASES) -> CheckResult:
    """Every case through the backend's own code for one variant, against the reference."""
    res = CheckResult(variant)
    skipped = []
    for case in inputs:
        if case.masked and not sem.masks_none:
            skipped.append(case.name)
            continue
        want = reference(case.groups, variant, sem)
        got = [list(map(float, row)) for row in hook([list(g) for g in case.groups], variant)]
        if [len(r) for r in got] != [len(g) for g in case.groups]:
            return res.fail(f"{case.name}: the backend returned {[len(r) for r in got]} advantages for groups of "
                            f"{[len(g) for g in case.groups]}")
        for gi, (w_row, g_row) in enumerate(zip(want, got, strict=True)):
            for i, (w, g) in enumerate(zip(w_row, g_row, strict=True)):
                res.checked += 1
                if not close(w, g):
                    return res.fail(f"{case.name}: group {gi} item {i}: reference {w!r}, {backend} {g!r}",
                                    {"case": case.name, "group": list(case.groups[gi]), "reference": w_row,
                                     "backend": g_row})
    res.detail = (f"{res.checked} advantages from {sem.source} equal the reference ({ADVANTAGE_OF[variant]}, "
                  f"std unbiased, eps {sem.eps:g}) within rtol {RTOL:g}")
    if skipped:
        res.detail += f"; not run: {', '.join(skipped)} (the backend has no mask for a None reward)"
    res.extra = {"eps": sem.eps, "ddof": sem.ddof, "masks_none": sem.masks_none, "rtol": RTOL, "atol": ATOL}
    return res


def check_advantages(driver: Any, backend: str, corpus_dir: str | os.PathLike[str] | None = None
                     ) -> dict[str, CheckResult]:
    """{variant: result} for each variant in VARIANTS (skip where the backend's driver does not support it), over
    CASES and the frozen corpus's batch (``corpus_dir``, else the default corpus)."""
    hook = getattr(driver, "advantages", None)
    if hook is None:
        return {"advantages": CheckResult("advantages", "skip", "n/a: the driver has no advantages hook")}
    sem = SEMANTICS.get(backend)
    if sem is None:
        return {"advantages": CheckResult("advantages", "skip",
                                          f"n/a: crossgym has no reference semantics for {backend!r}")}
    supported = tuple(getattr(driver, "advantage_variants", None) or VARIANTS)
    how = getattr(driver, "advantage_source", None)
    source = None
    if how is not None:
        try:
            source = str(how())
        except Exception as exc:  # the hook itself will report the same failure per variant
            source = f"unknown ({type(exc).__name__}: {exc})"
    inputs = cases(corpus_dir)
    out = {}
    for v in VARIANTS:
        if v not in supported:
            out[v] = CheckResult(v, "skip", f"{backend} does not support variant {v}")
            continue
        try:
            out[v] = check_variant(hook, backend, v, sem, inputs)
            if source:
                out[v].detail += f" [{source}]"
                out[v].extra["source"] = source
        except Unavailable as exc:
            out[v] = CheckResult(v, "skip", f"n/a: {exc}")
        except Exception as exc:  # the framework call broke: an error on this variant, the others still run
            out[v] = CheckResult(v, "error", f"{type(exc).__name__}: {exc}")
    return out
