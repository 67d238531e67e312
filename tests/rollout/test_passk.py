"""Unbiased pass@k against brute force over every k-subset of the samples."""

from itertools import combinations

import pytest

from crossgym.rollout.passk import k_values, mean_pass_at_k, pass_at_k


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_matches_the_share_of_k_subsets_holding_a_pass(n):
    for c in range(n + 1):
        samples = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            subsets = list(combinations(samples, k))
            assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets), abs=1e-12)


def test_mean_skips_tasks_with_fewer_samples_than_k():
    assert mean_pass_at_k([(4, 1), (2, 2)], 1) == pytest.approx((0.25 + 1.0) / 2)
    assert mean_pass_at_k([(4, 1), (2, 2)], 4) == pytest.approx(1.0)
    assert mean_pass_at_k([(2, 1)], 4) is None
    assert k_values(8) == [1, 2, 4, 8] and k_values(5) == [1, 2, 4, 5] and k_values(1) == [1]
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)


def _humaneval(n: int, c: int, k: int) -> float:
    """HumanEval's estimate_pass_at_k (Chen et al. 2021), as it is written there."""
    import numpy as np

    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


@pytest.mark.parametrize("n", [1, 10, 50, 200])
def test_matches_humaneval_estimator_up_to_200_samples(n):
    for c in sorted({0, 1, n // 3, n // 2, n - 1, n} - {-1}):
        for k in sorted({1, 2, 5, 10, 64, 100, n} & set(range(1, n + 1))):
            assert pass_at_k(n, c, k) == pytest.approx(_humaneval(n, c, k), abs=1e-12)
