"""parity.advantages: OpenRLHF's experience maker (RemoteExperienceMaker.compute_advantages_and_returns, group_norm
and dr_grpo) gives crossgym's reference advantages for every variant (issue 25)."""

from __future__ import annotations

import statistics

import pytest

pytest.importorskip("openrlhf")

from crossgym.adapters.openrlhf import parity  # noqa: E402
from crossgym.compat_tests.advantages import (  # noqa: E402
    ROWS,
    SEMANTICS,
    check_advantages,
    close,
    reference,
)
from crossgym.compat_tests.drivers import find_driver  # noqa: E402


def test_every_variant_passes_the_check_through_the_registered_driver():
    driver = find_driver("openrlhf")
    assert driver is not None and driver.advantages is not None
    res = check_advantages(driver, "openrlhf")
    assert set(res) == set(ROWS)
    for v in ("cispo", "sapo", "normalize_then_sum"):  # OpenRLHF has none of them: a skip, named
        assert res.pop(v).status == "skip"
    for v, r in res.items():
        assert r.status == "pass", (v, r.to_dict())
        assert r.checked > 0


def test_the_methods_that_run_are_openrlhfs_own():
    """Imported where the module imports; else compiled from the installed file (the module needs flash_attn/vllm)."""
    import inspect

    import openrlhf

    cls = parity.experience_maker_class()
    code = inspect.unwrap(cls.compute_advantages_and_returns).__code__  # under its @torch.no_grad()
    assert code.co_filename.endswith("openrlhf/trainer/ppo_utils/experience_maker.py")
    assert code.co_filename.startswith(str(openrlhf.__path__[0]))
    assert cls.crossgym_source == "imported" or cls.crossgym_source.startswith("compiled from")


def test_group_norm_uses_bessels_std_plus_1e9_and_dr_grpo_only_the_mean():
    g = [2.25, -0.5, 2.0, 0.25]
    mean, std = statistics.fmean(g), statistics.stdev(g)
    assert SEMANTICS["openrlhf"].eps == 1e-9
    assert parity.advantages([g], "grpo")[0] == pytest.approx([(r - mean) / (std + 1e-9) for r in g], rel=1e-6)
    assert parity.advantages([g, [1.0, 0.0]], "dr_grpo") == [pytest.approx([r - mean for r in g], rel=1e-6),
                                                            pytest.approx([0.5, -0.5], rel=1e-6)]


def test_a_none_reward_is_an_error_not_a_silent_zero():
    with pytest.raises(ValueError, match="no mask"):
        parity.advantages([[1.0, None]], "grpo")


def test_rloo_and_reinforce_baseline_are_openrlhfs_estimators():
    g = [[1.0, 0.0, 0.5, 0.25], [1.0, 1.0, 0.0, 0.0]]
    got = parity.advantages(g, "rloo")
    assert got[0] == pytest.approx([r - statistics.fmean(g[0][:i] + g[0][i + 1:]) for i, r in enumerate(g[0])],
                                   rel=1e-6)
    rpp = parity.advantages(g, "reinforce_pp_baseline")
    want = reference(g, "reinforce_pp_baseline", SEMANTICS["openrlhf"])
    assert all(close(w, x) for rw, rx in zip(want, rpp, strict=True) for w, x in zip(rw, rx, strict=True))
    other = reference(g, "reinforce_pp_baseline", SEMANTICS["verl"])  # Bessel over the tokens: not OpenRLHF's
    assert not all(close(w, x) for rw, rx in zip(other, rpp, strict=True) for w, x in zip(rw, rx, strict=True))



@pytest.mark.parametrize("variant", parity.ADVANTAGE_VARIANTS)
def test_openrlhfs_policy_loss_weights_each_token_as_its_aggregation_says(variant):
    """PolicyLoss (built as PPOActor builds it from crossgym's flags): dr_grpo is token-mean by design."""
    from crossgym.compat_tests.advantages import (
        LOSS_AGG,
        LOSS_BY_DESIGN,
        LOSS_HORIZON,
        LOSS_LENGTHS,
        loss_weight_reference,
    )

    mode = LOSS_BY_DESIGN.get(("openrlhf", variant), (LOSS_AGG[variant], ""))[0]
    got = parity.loss_weights(variant, list(LOSS_LENGTHS), LOSS_HORIZON)
    assert got == [pytest.approx(row, rel=1e-6, abs=1e-12) for row in loss_weight_reference(variant, mode=mode)]
    cls = parity.policy_loss_class()
    assert cls.crossgym_source == "imported" or cls.crossgym_source.startswith("compiled from")
    assert cls.crossgym_source.endswith("loss.py") or cls.crossgym_source == "imported"


def test_the_check_names_dr_grpos_loss_difference_instead_of_hiding_it():
    res = check_advantages(find_driver("openrlhf"), "openrlhf")["dr_grpo"]
    assert res.status == "pass" and res.extra["loss_agg"] == "token-mean"
    assert "differs by design from seq-mean-token-sum-norm" in res.detail
