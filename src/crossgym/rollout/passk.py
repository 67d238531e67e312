"""Unbiased pass@k (Chen et al. 2021): the chance that k of n samples, c of them correct, hold at least one pass."""

from __future__ import annotations

from collections.abc import Iterable


def pass_at_k(n: int, c: int, k: int) -> float:
    """1 - C(n-c, k) / C(n, k), computed as a stable product; needs 1 <= k <= n and 0 <= c <= n."""
    if not (0 <= c <= n) or not (1 <= k <= n):
        raise ValueError(f"pass_at_k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    prob_all_fail = 1.0
    for i in range(n - c + 1, n + 1):
        prob_all_fail *= 1.0 - k / i
    return 1.0 - prob_all_fail


def mean_pass_at_k(counts: Iterable[tuple[int, int]], k: int) -> float | None:
    """Mean pass@k over tasks given (n, c) per task; tasks with fewer than k samples are left out (None if all)."""
    values = [pass_at_k(n, c, k) for n, c in counts if n >= k]
    return sum(values) / len(values) if values else None


def k_values(n: int) -> list[int]:
    """The k to report for n samples: powers of two below n, and n itself."""
    ks, k = [], 1
    while k < n:
        ks.append(k)
        k *= 2
    return ks + [n] if n >= 1 else []
