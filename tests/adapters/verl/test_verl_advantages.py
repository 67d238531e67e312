"""parity.advantages: veRL's own trainer function (ray_trainer.compute_advantage -> core_algos'
compute_grpo_outcome_advantage) gives crossgym's reference advantages for every variant (issue 25)."""

from __future__ import annotations

import statistics

import pytest

pytest.importorskip("verl")

from crossgym.adapters.verl import parity  # noqa: E402
from crossgym.compat_tests.advantages import SEMANTICS, VARIANTS, check_advantages  # noqa: E402
from crossgym.compat_tests.drivers import find_driver  # noqa: E402


def test_every_variant_passes_the_check_through_the_registered_driver():
    driver = find_driver("verl")
    assert driver is not None and driver.advantages is not None
    res = check_advantages(driver, "verl")
    assert set(res) == set(VARIANTS)
    for v, r in res.items():
        assert r.status == "pass", (v, r.to_dict())
        assert r.checked > 0 and "none_masked" in r.detail  # veRL has no mask: that case is named as not run


def test_grpo_divides_by_bessels_std_plus_1e6_and_dr_grpo_does_not():
    g = [1.0, 0.0, 0.0, 0.0]
    mean, std = statistics.fmean(g), statistics.stdev(g)
    assert SEMANTICS["verl"].eps == 1e-6
    assert parity.advantages([g], "grpo")[0] == pytest.approx([(r - mean) / (std + 1e-6) for r in g], rel=1e-6)
    assert parity.advantages([g], "dr_grpo")[0] == pytest.approx([r - mean for r in g], rel=1e-6)


def test_a_none_reward_is_an_error_not_a_silent_zero():
    with pytest.raises(ValueError, match="no mask"):
        parity.advantages([[1.0, None]], "grpo")
