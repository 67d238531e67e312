"""The "advantages" check: for the same groups of rewards, each backend's own advantage code gives the advantages
crossgym's reference formula gives, for every ``grpo.variant`` the backend supports (issue 25).

A driver opts in with ``advantages(groups, variant) -> list[list[float]]`` (one advantage per reward, in the same
shape; a group is the rewards of one prompt's completions, None for an unscorable one) and ``ADVANTAGE_VARIANTS``;
``advantage_source() -> str``, optional, says how the hook reached the framework's code on this machine.
The hook must call the framework's own code (TRL: ``GRPOTrainer._generate_and_score_completions``; veRL:
``ray_trainer.compute_advantage`` and core_algos' estimators; OpenRLHF:
``RemoteExperienceMaker.compute_advantages_and_returns``). ``aggregated_advantages(groups, weights)``, optional, does
the same for reward aggregation normalize_then_sum.

The reference is written once, here, from each framework's documented semantics (``SEMANTICS``): every backend in
crossgym's mapping normalises by the GROUP's std with Bessel's correction (``torch.std`` / TRL's ``nanstd``,
unbiased), and they differ only by the epsilon added to the std and by whether a None reward is masked. Those
differences are modelled exactly per backend, not hidden by the tolerance (docs/guides/variants.md has the table):

* grpo:    A_i = (r_i - mean(g)) / (std_unbiased(g) + eps)
* dr_grpo: A_i = r_i - mean(g)                               (no std)
* rloo:    A_i = r_i - mean(g without i) = n/(n-1) (r_i - mean(g))
* reinforce_pp_baseline: c_i = r_i - mean(g), then whitened over the whole batch (``BatchNorm``: veRL and OpenRLHF
  weight each sequence by its response tokens; veRL's variance has Bessel's correction over the tokens, OpenRLHF's
  none)
* dapo, gspo, cispo, sapo: grpo's advantages (they change the loss: aggregation, the importance-sampling level, a
  clipped or soft-gated ratio, not the advantages)
* reward aggregation normalize_then_sum (``aggregated_advantages(groups, weights)``; each completion's reward is a
  tuple, one per term): z_k = grpo of term k within its group, s = sum_k w_k z_k, then s whitened over the batch
  (TRL's ``multi_objective_aggregation='normalize_then_sum'``, veRL's ``gdpo``)

The batch of a batch-level variant is every group of one size (a hook calls the framework once per size), and the
k-th completion of that batch has ``response_length(k)`` response tokens (the veRL and OpenRLHF hooks build their
masks so), which token-weighted whitening needs.

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

VARIANTS = ("grpo", "dapo", "dr_grpo", "gspo", "rloo", "reinforce_pp_baseline", "cispo", "sapo")
#: the variant whose advantages each variant uses (dapo, gspo, cispo and sapo differ in the loss, not here)
ADVANTAGE_OF = {"grpo": "grpo", "dapo": "grpo", "gspo": "grpo", "cispo": "grpo", "sapo": "grpo",
                "dr_grpo": "dr_grpo", "rloo": "rloo", "reinforce_pp_baseline": "reinforce_pp_baseline"}
#: grpo.reward_aggregation values checked by ``aggregated_advantages`` (the row of the matrix is the value)
AGGREGATIONS = ("normalize_then_sum",)
#: the advantages table's rows, in order
ROWS = VARIANTS + AGGREGATIONS
#: response lengths of the veRL/OpenRLHF hooks: the k-th completion of a call has 1 + k % WIDTH tokens
WIDTH = 5


#: each variant's loss aggregation: how much each response token's loss counts (``loss_weights``)
LOSS_AGG = {"grpo": "seq-mean-token-mean", "gspo": "seq-mean-token-mean", "sapo": "seq-mean-token-mean",
            "rloo": "seq-mean-token-mean", "dapo": "token-mean", "cispo": "token-mean",
            "reinforce_pp_baseline": "token-mean", "dr_grpo": "seq-mean-token-sum-norm"}
#: (backend, variant) -> (the aggregation the backend uses instead, why): differences by design, named in the result
LOSS_BY_DESIGN = {("openrlhf", "dr_grpo"): ("token-mean", "OpenRLHF 0.11.2 has no constant-normaliser aggregation "
                                                          "(--actor.loss_agg_mode is token-mean or seq-mean-token-mean)")}
#: the fixed batch of the loss-weight comparison: response lengths, padded to LOSS_HORIZON (max_completion_length)
LOSS_LENGTHS = (1, 3, 5, 2, 4, 5)
LOSS_HORIZON = 8


def loss_weight_reference(variant: str, lengths: Sequence[int] = LOSS_LENGTHS, horizon: int = LOSS_HORIZON,
                          mode: str | None = None) -> list[list[float]]:
    """d loss / d (token loss) for each response token of a batch of ``lengths`` padded to ``horizon`` (0 on padding),
    under the variant's LOSS_AGG (or ``mode``): seq-mean-token-mean 1/(B·L_i), token-mean 1/ΣL,
    seq-mean-token-sum-norm 1/(B·H)."""
    mode = mode or LOSS_AGG[variant]
    b, total = len(lengths), sum(lengths)

    def weight(n: int) -> float:
        if mode == "seq-mean-token-mean":
            return 1.0 / (b * n)
        if mode == "token-mean":
            return 1.0 / total
        return 1.0 / (b * horizon)  # seq-mean-token-sum-norm

    return [[weight(n) if t < n else 0.0 for t in range(horizon)] for n in lengths]


#: the clip of each variant under crossgym's mapping with grpo.epsilon 0.2 (low, high); cispo: (None, ε_high), the
#: ratio capped at 1 + ε_high only; sapo: no clip (a gate with τ+ 1.0 / τ- 1.05)
CLIP = {"grpo": (0.2, 0.2), "dr_grpo": (0.2, 0.2), "rloo": (0.2, 0.2), "reinforce_pp_baseline": (0.2, 0.2),
        "dapo": (0.2, 0.28), "gspo": (3e-4, 4e-4), "cispo": (None, 4.0), "sapo": (None, None)}
SAPO_TAU = (1.0, 1.05)
#: dual-clip PPO (a token with A < 0 and ratio above c gets no gradient): veRL's clip_ratio_c 3.0 in its vanilla loss
DUAL_CLIP = {"verl": 3.0}
#: the fixed off-policy batch: per-token log-ratios log(pi/pi_old) (cycled; sequence 0 on-policy, so GSPO's tiny clip
#: leaves it a gradient) and one advantage per sequence
LOSS_LOG_RATIOS = (-0.5, -0.1, 0.0, 0.1, 0.5, 1.2, 1.7, -0.05)
LOSS_ADVANTAGES = (1.0, -1.0, 0.5, -2.0, 1.5, -0.5)
#: the off-policy gradients' relative tolerance: float32 gates are ill-conditioned far from ratio 1 (SAPO's
#: 4·σ·(1-σ) at ratio 5.5 loses ~2 digits), still far below any clip or gate difference (those zero or rescale a
#: token's gradient)
GRAD_RTOL = 1e-5


def loss_log_ratio(lengths: Sequence[int] = LOSS_LENGTHS, horizon: int = LOSS_HORIZON) -> list[list[float]]:
    """The off-policy batch's log-ratios (0 on padding)."""
    return [[0.0 if i == 0 or t >= n else LOSS_LOG_RATIOS[(3 * i + t) % len(LOSS_LOG_RATIOS)] for t in range(horizon)]
            for i, n in enumerate(lengths)]


def loss_gradient_reference(variant: str, backend: str, lengths: Sequence[int] = LOSS_LENGTHS,
                            horizon: int = LOSS_HORIZON) -> list[list[float]]:
    """-d loss / d log-prob of each token on the off-policy batch: the variant's surrogate (PPO clip, GSPO's sequence
    ratio, CISPO's capped detached ratio, SAPO's gate) times the aggregation weight, with ``backend``'s dual clip."""
    mode = LOSS_BY_DESIGN.get((backend, variant), (LOSS_AGG[variant], ""))[0]
    w = loss_weight_reference(variant, lengths, horizon, mode=mode)
    rho = loss_log_ratio(lengths, horizon)
    low, high = CLIP[variant]
    dual = DUAL_CLIP.get(backend) if variant not in ("gspo", "cispo", "sapo") else None
    out = []
    for i, n in enumerate(lengths):
        a = as_float32(LOSS_ADVANTAGES[i])
        seq = math.exp(sum(rho[i][:n]) / n)
        row = []
        for t in range(horizon):
            if t >= n:
                row.append(0.0)
                continue
            r = math.exp(as_float32(rho[i][t]))
            if variant == "cispo":
                g = min(r, 1.0 + float(high or 0.0)) * a
            elif variant == "sapo":
                tau = SAPO_TAU[0] if a > 0 else SAPO_TAU[1]
                x = 1.0 / (1.0 + math.exp(-tau * (r - 1.0)))
                g = 4.0 * x * (1.0 - x) * r * a
            else:
                rr = seq if variant == "gspo" else r
                assert low is not None and high is not None
                active = rr < 1.0 + high if a > 0 else rr > 1.0 - low
                if dual is not None and a < 0 and rr > dual:
                    active = False
                g = a * rr if active else 0.0
            row.append(w[i][t] * g)
        out.append(row)
    return out


def check_loss_weights(hook: Any, backend: str, variant: str, res: CheckResult) -> CheckResult:
    """The framework's own loss for the variant, on a fixed batch (ratio 1, advantage 1 on every token), must weight
    each token as LOSS_AGG says: ``hook(variant, lengths, horizon)`` returns -d loss / d log-prob per token."""
    mode, why = LOSS_BY_DESIGN.get((backend, variant), (LOSS_AGG[variant], ""))
    want = loss_weight_reference(variant, mode=mode)
    got = [list(map(float, row)) for row in hook(variant, list(LOSS_LENGTHS), LOSS_HORIZON)]
    n = 0
    for i, (w_row, g_row) in enumerate(zip(want, got, strict=True)):
        for t, (w, g) in enumerate(zip(w_row, g_row, strict=True)):
            n += 1
            if not (math.isfinite(g) and abs(g - w) <= max(RTOL * abs(w), 1e-12)):
                return res.fail(f"loss weights ({mode}): sequence {i} token {t}: reference {w!r}, "
                                f"{backend} {g!r}", {"lengths": list(LOSS_LENGTHS), "horizon": LOSS_HORIZON,
                                                     "reference": w_row, "backend": g_row})
    res.detail += (f"; per-token loss weights ({mode}, {n} tokens of lengths "
                   f"{'/'.join(map(str, LOSS_LENGTHS))} padded to {LOSS_HORIZON}) equal within rtol {RTOL:g}")
    if why:
        res.detail += f" (differs by design from {LOSS_AGG[variant]}: {why})"
        res.extra["loss_differs_by_design"] = why
    res.extra["loss_agg"] = mode
    # off policy: the clip / gate of the variant on a fixed batch of log-ratios and signed advantages
    want = loss_gradient_reference(variant, backend)
    got = [list(map(float, row)) for row in hook(variant, list(LOSS_LENGTHS), LOSS_HORIZON,
                                                 log_ratio=loss_log_ratio(), advantages=list(LOSS_ADVANTAGES))]
    for i, (w_row, g_row) in enumerate(zip(want, got, strict=True)):
        for t, (w, g) in enumerate(zip(w_row, g_row, strict=True)):
            if not (math.isfinite(g) and abs(g - w) <= max(GRAD_RTOL * abs(w), 1e-9)):
                return res.fail(f"loss gradient off policy: sequence {i} token {t} (log-ratio "
                                f"{loss_log_ratio()[i][t]:g}, advantage {LOSS_ADVANTAGES[i]:g}): reference {w!r}, "
                                f"{backend} {g!r}", {"reference": w_row, "backend": g_row})
    res.detail += f"; off-policy gradients (clip/gate) within rtol {GRAD_RTOL:g}"
    if DUAL_CLIP.get(backend) and variant not in ("gspo", "cispo", "sapo"):
        res.detail += f" (dual clip c={DUAL_CLIP[backend]:g} by design)"
    return res


def response_length(k: int) -> int:
    """Response tokens of the k-th completion of one framework call (token-weighted whitening depends on them)."""
    return 1 + k % WIDTH

#: float32 results against a float64 reference: relative tolerance, and absolute for |reference| < 1
RTOL = 1e-6
ATOL = 1e-6

Groups = Sequence[Sequence[float | None]]


class Unavailable(RuntimeError):
    """A driver's advantages hook cannot reach the framework's code here (the check is a skip with this reason)."""


@dataclass(frozen=True)
class BatchNorm:
    """How one framework whitens advantages over a whole batch (reinforce_pp_baseline, normalize_then_sum)."""

    source: str
    weight: str  #: "token": each sequence counts once per response token; "sequence": once
    ddof: int  #: 1: Bessel's correction over the counted items (tokens or sequences); 0: none
    eps: float
    #: "std+eps": (x - mean) / (std + eps); "var+eps": / sqrt(var + eps); "max(var,eps)": / sqrt(max(var, eps))
    form: str


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
    #: the batch whitening (None: the framework has no batch-level variant in crossgym's mapping)
    batch: BatchNorm | None = None


SEMANTICS: dict[str, Semantics] = {
    "trl": Semantics("trl 1.16 GRPOTrainer._generate_and_score_completions (scale_rewards group/none; nanstd)",
                     eps=1e-4, masks_none=True,
                     batch=BatchNorm("normalize_then_sum: nanstd over the batch's sequences", "sequence", 1, 1e-4,
                                     "std+eps")),
    # Unsloth trains with TRL's GRPOTrainer (trl <= 1.15 under its pins): the same code path and epsilon
    "unsloth": Semantics("trl 1.15 GRPOTrainer._generate_and_score_completions under Unsloth (scale_rewards "
                         "group/none; nanstd)", eps=1e-4, masks_none=True,
                         batch=BatchNorm("normalize_then_sum: nanstd over the batch's sequences", "sequence", 1,
                                         1e-4, "std+eps")),
    "verl": Semantics("verl 0.9.1 ray_trainer.compute_advantage -> core_algos' estimator for the variant (grpo: "
                      "compute_grpo_outcome_advantage, norm_adv_by_std_in_grpo, torch.std; rloo; "
                      "reinforce_plus_plus_baseline; gdpo)", eps=1e-6,
                      batch=BatchNorm("verl_F.masked_whiten (token-weighted, masked_var unbiased)", "token", 1, 1e-8,
                                      "var+eps")),
    "openrlhf": Semantics("openrlhf 0.11.2 RemoteExperienceMaker.compute_advantages_and_returns (group_norm / "
                          "dr_grpo / rloo / reinforce_baseline; torch.std)", eps=1e-9,
                          batch=BatchNorm("compute_advantages_and_returns whitening (token-weighted, var over "
                                          "num_actions, clamp 1e-8)", "token", 0, 1e-8, "max(var,eps)")),
    # a group of ONE gets mean 0 and std 1 in SkyRL (advantage r / (1 + eps)); no case here has one
    "skyrl": Semantics("skyrl 0.3.0 ppo_utils.compute_advantages_and_returns (grpo: compute_grpo_outcome_advantage, "
                       "grpo_norm_by_std, torch.std; rloo)", eps=1e-6),
}


def whiten(values: Sequence[float], bn: BatchNorm) -> list[float]:
    """``values`` (one per completion of a batch, the k-th with ``response_length(k)`` tokens) whitened as ``bn``."""
    w = [float(response_length(k)) if bn.weight == "token" else 1.0 for k in range(len(values))]
    total = sum(w)
    mean = sum(wi * v for wi, v in zip(w, values, strict=True)) / total
    var = sum(wi * (v - mean) ** 2 for wi, v in zip(w, values, strict=True)) / total
    if bn.ddof:
        var *= total / (total - bn.ddof)
    if bn.form == "std+eps":
        scale = math.sqrt(var) + bn.eps
    elif bn.form == "var+eps":
        scale = math.sqrt(var + bn.eps)
    elif bn.form == "max(var,eps)":
        scale = math.sqrt(max(var, bn.eps))
    else:
        raise ValueError(f"unknown whitening form {bn.form!r}")
    return [(v - mean) / scale for v in values]


def _by_size(groups: Sequence[Sequence[Any]]) -> list[list[int]]:
    """Indices of the groups of each size (the batches of batch-level variants), smallest size first."""
    return [[i for i, g in enumerate(groups) if len(g) == n] for n in sorted({len(g) for g in groups})]


def _batch_of(sem: Semantics, what: str) -> BatchNorm:
    if sem.batch is None:
        raise ValueError(f"{sem.source} has no batch whitening ({what})")
    return sem.batch


def _group_z(vals: Sequence[float], sem: Semantics) -> list[float]:
    n = len(vals)
    mean = sum(vals) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - sem.ddof)) if n > sem.ddof else math.nan
    return [0.0 if math.isnan(std) else (v - mean) / (std + sem.eps) for v in vals]


def reference(groups: Groups, variant: str, sem: Semantics) -> list[list[float]]:
    """crossgym's advantages for ``groups`` under ``variant``, with the framework semantics ``sem`` (float64 on
    the float32-rounded rewards)."""
    if variant not in ADVANTAGE_OF:
        raise ValueError(f"unknown variant {variant!r}; use one of {', '.join(VARIANTS)}")
    kind = ADVANTAGE_OF[variant]
    scaled = kind == "grpo"
    if kind not in ("grpo", "dr_grpo") and any(r is None for g in groups for r in g):
        raise ValueError(f"crossgym's {variant} reference has no mask for a None reward")
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
            elif kind == "rloo":
                a = a * n / (n - 1) if n > 1 else 0.0
            row.append(a)
        out.append(row)
    if kind == "reinforce_pp_baseline":
        bn = _batch_of(sem, variant)
        for batch in _by_size(groups):
            flat = whiten([a for i in batch for a in out[i]], bn)
            for j, i in enumerate(batch):
                n = len(groups[i])
                out[i] = flat[j * n:(j + 1) * n]
    return out


MultiGroups = Sequence[Sequence[Sequence[float | None]]]


def _masked_z(vals: Sequence[float | None], sem: Semantics) -> list[float | None]:
    """A term's group z-scores with None left out (TRL's nanmean/nanstd): None where the value or the std is
    undefined (one valid value or fewer)."""
    valid = [as_float32(float(v)) for v in vals if v is not None]
    n = len(valid)
    if n <= sem.ddof:
        return [None] * len(vals)
    mean = sum(valid) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in valid) / (n - sem.ddof))
    return [None if v is None else (as_float32(float(v)) - mean) / (std + sem.eps) for v in vals]


def reference_aggregated(groups: MultiGroups, weights: Sequence[float], sem: Semantics) -> list[list[float]]:
    """crossgym's advantages under reward aggregation normalize_then_sum: ``groups`` of completions whose reward is
    one value per term (``weights``, in order); each term is group-normalised as grpo (``sem.eps``), the weighted sum
    is whitened over the batch as ``sem.batch``. A None term (only where ``sem.masks_none``: TRL) is left out of its
    term's group statistics and of the sum; a completion with every term None is unscorable: left out of the batch's
    statistics, advantage 0."""
    bn = _batch_of(sem, "normalize_then_sum")
    if any(r is None for g in groups for c in g for r in c):
        if not sem.masks_none:
            raise ValueError(f"{sem.source} cannot mask a None reward")
        return _aggregated_masked(groups, weights, sem, bn)
    summed: list[list[float]] = []
    for g in groups:
        if any(len(c) != len(weights) for c in g):
            raise ValueError(f"every completion needs {len(weights)} term rewards")
        zs = [_group_z([as_float32(float(c[k])) for c in g], sem) for k in range(len(weights))]  # type: ignore[arg-type]
        summed.append([sum(as_float32(float(w)) * zs[k][i] for k, w in enumerate(weights)) for i in range(len(g))])
    out = [list(r) for r in summed]
    for batch in _by_size(groups):
        flat = whiten([a for i in batch for a in summed[i]], bn)
        for j, i in enumerate(batch):
            n = len(groups[i])
            out[i] = flat[j * n:(j + 1) * n]
    return out


def _aggregated_masked(groups: MultiGroups, weights: Sequence[float], sem: Semantics, bn: BatchNorm
                       ) -> list[list[float]]:
    if bn.weight != "sequence" or bn.form != "std+eps":
        raise ValueError(f"crossgym's masked normalize_then_sum reference is TRL's (sequence whitening), not {bn}")
    out: list[list[float]] = [[] for _ in groups]
    for batch in _by_size(groups):
        sums: list[float | None] = []
        for i in batch:
            g = groups[i]
            zs = [_masked_z([c[k] for c in g], sem) for k in range(len(weights))]
            for j, c in enumerate(g):
                if all(r is None for r in c):
                    sums.append(None)  # unscorable
                    continue
                sums.append(sum(as_float32(float(w)) * z for w, z in ((w, zs[k][j]) for k, w in enumerate(weights))
                                if z is not None))
        valid = [v for v in sums if v is not None]
        n = len(valid)
        mean = sum(valid) / n if n else 0.0
        std = math.sqrt(sum((v - mean) ** 2 for v in valid) / (n - bn.ddof)) if n > bn.ddof else math.nan
        flat = [0.0 if v is None or math.isnan(std) else (v - mean) / (std + bn.eps) for v in sums]
        size = len(groups[batch[0]])
        for j, i in enumerate(batch):
            out[i] = flat[j * size:(j + 1) * size]
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


@dataclass(frozen=True)
class MultiCase:
    """Groups of completions whose reward is one value per term, and the terms' weights (normalize_then_sum)."""

    name: str
    weights: tuple[float, ...]
    groups: tuple[tuple[tuple[float | None, ...], ...], ...]


#: the fixed inputs of reward aggregation normalize_then_sum (no None: only TRL could mask one)
MULTI_CASES = (
    MultiCase("two_terms", (1.0, 0.5), (((1.0, 0.2), (0.0, 0.9), (1.0, 0.5), (0.0, 0.1)),
                                        ((1.0, 1.0), (1.0, 0.0), (0.0, 1.0), (0.0, 0.0)),
                                        ((0.0, 0.3), (0.0, 0.3), (0.0, 0.7), (0.0, 0.3)))),
    MultiCase("dominant_term", (1.0, 1.0), (((100.0, 0.01), (0.0, 0.02), (50.0, 0.0), (0.0, 0.03)),
                                            ((10.0, 0.5), (10.0, 0.5), (10.0, 0.25), (10.0, 0.75)))),
    MultiCase("three_terms_groups_of_2", (1.0, 0.25, 2.0), (((1.0, 0.0, 0.5), (0.0, 1.0, 0.5)),
                                                            ((0.5, 0.5, 1.0), (0.5, 0.25, 0.0)),
                                                            ((1.0, 1.0, 1.0), (0.0, 0.0, 0.0)))),
    # None terms (TRL masks them; the other backends do not run it): one missing term, a term with one valid value
    # in its group (its std is undefined: the term adds nothing there), an unscorable completion (every term None)
    MultiCase("none_masked_terms", (1.0, 0.5), (((1.0, 0.2), (0.0, None), (1.0, 0.5), (0.0, 0.1)),
                                                ((None, 1.0), (1.0, 0.0), (None, 1.0), (None, 0.5)),
                                                ((0.5, 0.25), (None, None), (0.0, 0.75), (1.0, 0.0)))),
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
    kind = ADVANTAGE_OF[variant]
    how = {"grpo": f"std unbiased, eps {sem.eps:g}", "dr_grpo": "no std", "rloo": "leave-one-out mean"}.get(kind)
    if how is None and sem.batch is not None:
        how = f"group mean, then {sem.batch.source}"
    res.detail = (f"{res.checked} advantages from {sem.source} equal the reference ({kind}, {how}) within rtol "
                  f"{RTOL:g}")
    if skipped:
        res.detail += f"; not run: {', '.join(skipped)} (the backend has no mask for a None reward)"
    res.extra = {"eps": sem.eps, "ddof": sem.ddof, "masks_none": sem.masks_none, "rtol": RTOL, "atol": ATOL,
                 **_batch_extra(sem, variant)}
    return res


def check_aggregated(hook: Any, backend: str, sem: Semantics,
                     inputs: Sequence[MultiCase] = MULTI_CASES) -> CheckResult:
    """Every multi-term case through the backend's own normalize_then_sum code, against the reference."""
    res = CheckResult("normalize_then_sum")
    skipped = []
    for case in inputs:
        if any(r is None for g in case.groups for c in g for r in c) and not sem.masks_none:
            skipped.append(case.name)
            continue
        want = reference_aggregated(case.groups, case.weights, sem)
        got = [list(map(float, row)) for row in hook([[list(c) for c in g] for g in case.groups], list(case.weights))]
        if [len(r) for r in got] != [len(g) for g in case.groups]:
            return res.fail(f"{case.name}: the backend returned {[len(r) for r in got]} advantages for groups of "
                            f"{[len(g) for g in case.groups]}")
        for gi, (w_row, g_row) in enumerate(zip(want, got, strict=True)):
            for i, (w, g) in enumerate(zip(w_row, g_row, strict=True)):
                res.checked += 1
                if not close(w, g):
                    return res.fail(f"{case.name}: group {gi} item {i}: reference {w!r}, {backend} {g!r}",
                                    {"case": case.name, "weights": list(case.weights),
                                     "group": [list(c) for c in case.groups[gi]], "reference": w_row,
                                     "backend": g_row})
    bn = sem.batch
    assert bn is not None
    res.detail = (f"{res.checked} advantages (each term group-normalised, eps {sem.eps:g}; the weighted sum whitened "
                  f"over the batch: {bn.source}) equal the reference within rtol {RTOL:g}")
    if skipped:
        res.detail += f"; not run: {', '.join(skipped)} (the backend has no mask for a None reward)"
    res.extra = {"eps": sem.eps, "batch": {"weight": bn.weight, "ddof": bn.ddof, "eps": bn.eps, "form": bn.form},
                 "rtol": RTOL, "atol": ATOL}
    return res


def _batch_extra(sem: Semantics, variant: str) -> dict[str, Any]:
    if ADVANTAGE_OF.get(variant) != "reinforce_pp_baseline" or sem.batch is None:
        return {}
    bn = sem.batch
    return {"batch": {"weight": bn.weight, "ddof": bn.ddof, "eps": bn.eps, "form": bn.form}}


def check_advantages(driver: Any, backend: str, corpus_dir: str | os.PathLike[str] | None = None
                     ) -> dict[str, CheckResult]:
    """{row: result} for each variant in VARIANTS (skip where the backend's driver does not support it), over CASES
    and the frozen corpus's batch (``corpus_dir``, else the default corpus), and for each reward aggregation in
    AGGREGATIONS over MULTI_CASES (skip where the driver has no ``aggregated_advantages`` hook)."""
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
            lw = getattr(driver, "loss_weights", None)
            if lw is not None and out[v].status == "pass":
                check_loss_weights(lw, backend, v, out[v])
            if source:
                out[v].detail += f" [{source}]"
                out[v].extra["source"] = source
        except Unavailable as exc:
            out[v] = CheckResult(v, "skip", f"n/a: {exc}")
        except Exception as exc:  # the framework call broke: an error on this variant, the others still run
            out[v] = CheckResult(v, "error", f"{type(exc).__name__}: {exc}")
    agg = getattr(driver, "aggregated_advantages", None)
    for a in AGGREGATIONS:
        if agg is None:
            out[a] = CheckResult(a, "skip", f"{backend} has no reward aggregation {a}")
            continue
        try:
            out[a] = check_aggregated(agg, backend, sem)
            if source:
                out[a].detail += f" [{source}]"
                out[a].extra["source"] = source
        except Unavailable as exc:
            out[a] = CheckResult(a, "skip", f"n/a: {exc}")
        except Exception as exc:
            out[a] = CheckResult(a, "error", f"{type(exc).__name__}: {exc}")
    return out
