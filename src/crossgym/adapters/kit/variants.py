"""What every backend's mapping of ``grpo.variant`` / ``grpo.reward_aggregation`` shares: one clear error where a
backend lacks a variant, and the rules of reward aggregation (docs/guides/variants.md has the table)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from crossgym.protocol.errors import ConfigError

if TYPE_CHECKING:
    from crossgym.config import RunConfig

#: the backends that have each variant natively (the mapping tables of each backend say under which names)
SUPPORTED: dict[str, tuple[str, ...]] = {
    "trl": ("grpo", "dapo", "dr_grpo", "gspo", "cispo", "sapo"),
    "unsloth": ("grpo", "dapo", "dr_grpo", "gspo", "cispo", "sapo"),
    "verl": ("grpo", "dapo", "dr_grpo", "gspo", "rloo", "reinforce_pp_baseline", "cispo", "sapo"),
    "openrlhf": ("grpo", "dapo", "dr_grpo", "gspo", "rloo", "reinforce_pp_baseline"),
}
#: the backends with reward aggregation normalize_then_sum natively
NORMALIZE_THEN_SUM = ("trl", "unsloth", "verl")
#: the variants whose advantages are grpo's (what normalize_then_sum normalises each term by)
GROUP_NORMALISED = ("grpo", "dapo", "gspo", "cispo", "sapo")


def check_variant(run: RunConfig, backend: str, why: dict[str, str] | None = None) -> None:
    """One ConfigError naming the backends that have ``grpo.variant`` where ``backend`` lacks it."""
    v = run.grpo.variant
    if v in SUPPORTED.get(backend, ()):
        return
    have = [b for b, vs in SUPPORTED.items() if v in vs]
    reason = (why or {}).get(v, "")
    raise ConfigError(f"the {backend} backend has no variant {v!r}" + (f" ({reason})" if reason else ""),
                      where="grpo.variant",
                      fix=f"use backend {' or '.join(have)}, or another grpo.variant" if have else
                      "pick another grpo.variant")


def check_aggregation(run: RunConfig, backend: str) -> bool:
    """True when the run aggregates its reward terms normalize_then_sum (a ConfigError where ``backend`` lacks it
    or the variant does not normalise by the group's std)."""
    g = run.grpo
    if g.reward_aggregation == "sum":
        return False
    if backend not in NORMALIZE_THEN_SUM:
        raise ConfigError(f"the {backend} backend has no reward aggregation {g.reward_aggregation!r} (it sums the "
                          "weighted terms, then normalises)", where="grpo.reward_aggregation",
                          fix=f"use backend {' or '.join(NORMALIZE_THEN_SUM)}, or reward_aggregation: sum")
    if g.variant not in GROUP_NORMALISED or not g.scale_rewards:
        raise ConfigError(f"reward aggregation normalize_then_sum divides each term by its group's std; variant "
                          f"{g.variant!r} with scale_rewards {g.scale_rewards} does not",
                          where="grpo.reward_aggregation",
                          fix=f"use one of {', '.join(GROUP_NORMALISED)} with scale_rewards true, or "
                          "reward_aggregation: sum")
    return True
