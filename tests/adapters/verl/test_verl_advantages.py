"""parity.advantages: veRL's own trainer function (ray_trainer.compute_advantage -> core_algos'
compute_grpo_outcome_advantage) gives crossgym's reference advantages for every variant (issue 25)."""

from __future__ import annotations

import statistics

import pytest

pytest.importorskip("verl")

from crossgym.adapters.verl import parity  # noqa: E402
from crossgym.compat_tests.advantages import (  # noqa: E402
    MULTI_CASES,
    ROWS,
    SEMANTICS,
    VARIANTS,
    check_advantages,
    close,
    reference,
    reference_aggregated,
)
from crossgym.compat_tests.drivers import find_driver  # noqa: E402


def test_every_variant_passes_the_check_through_the_registered_driver():
    driver = find_driver("verl")
    assert driver is not None and driver.advantages is not None
    res = check_advantages(driver, "verl")
    assert set(res) == set(ROWS) and set(VARIANTS) <= set(ROWS)
    agg = res.pop("normalize_then_sum")
    unmasked = [c for c in MULTI_CASES if not any(r is None for g in c.groups for x in g for r in x)]
    assert agg.status == "pass" and agg.checked == sum(len(g) for c in unmasked for g in c.groups), agg.to_dict()
    for v, r in res.items():
        assert r.status == "pass", (v, r.to_dict())
        assert r.checked > 0 and "none_masked" in r.detail  # veRL has no mask: that case is named as not run
        assert "per-token loss weights" in r.detail and r.extra["loss_agg"]


def test_grpo_divides_by_bessels_std_plus_1e6_and_dr_grpo_does_not():
    g = [1.0, 0.0, 0.0, 0.0]
    mean, std = statistics.fmean(g), statistics.stdev(g)
    assert SEMANTICS["verl"].eps == 1e-6
    assert parity.advantages([g], "grpo")[0] == pytest.approx([(r - mean) / (std + 1e-6) for r in g], rel=1e-6)
    assert parity.advantages([g], "dr_grpo")[0] == pytest.approx([r - mean for r in g], rel=1e-6)


def test_a_none_reward_is_an_error_not_a_silent_zero():
    with pytest.raises(ValueError, match="no mask"):
        parity.advantages([[1.0, None]], "grpo")


def test_rloo_and_reinforce_pp_baseline_run_veRLs_registered_estimators():
    g = [[1.0, 0.0, 0.5, 0.25], [1.0, 1.0, 0.0, 0.0]]
    got = parity.advantages(g, "rloo")
    assert got[0] == pytest.approx([r - statistics.fmean(g[0][:i] + g[0][i + 1:]) for i, r in enumerate(g[0])],
                                   rel=1e-6)
    rpp = parity.advantages(g, "reinforce_pp_baseline")
    want = reference(g, "reinforce_pp_baseline", SEMANTICS["verl"])
    assert all(close(w, x) for rw, rx in zip(want, rpp, strict=True) for w, x in zip(rw, rx, strict=True))
    # whitened over the batch's tokens: the token-weighted mean of the advantages is 0
    from crossgym.compat_tests.advantages import response_length

    flat = [a for row in rpp for a in row]
    assert abs(sum(a * response_length(k) for k, a in enumerate(flat))) < 1e-5
    # population (OpenRLHF) whitening is not what veRL computes
    other = reference(g, "reinforce_pp_baseline", SEMANTICS["openrlhf"])
    assert not all(close(w, x) for rw, rx in zip(other, rpp, strict=True) for w, x in zip(rw, rx, strict=True))


def test_gdpo_reads_the_terms_under_the_keys_crossgyms_mapping_sets():
    case = MULTI_CASES[0]
    got = parity.aggregated_advantages(case.groups, case.weights)
    want = reference_aggregated(case.groups, case.weights, SEMANTICS["verl"])
    assert all(close(w, x) for rw, rx in zip(want, got, strict=True) for w, x in zip(rw, rx, strict=True))
    # the weights matter: the same terms with other weights give other advantages
    swapped = parity.aggregated_advantages(case.groups, tuple(reversed(case.weights)))
    assert swapped != got


@pytest.mark.parametrize("variant", ["rloo", "reinforce_pp_baseline", "cispo", "sapo"])
def test_veRLs_config_accepts_the_new_variants(run_factory, verl_compose, variant) -> None:  # type: ignore[no-untyped-def]
    from crossgym.adapters.verl import overrides as ov

    paths = ov.Paths(train_files="/d/t.parquet", val_files=None, reward_module="/d/r.py")
    o, _ = ov.overrides(run_factory(grpo={"variant": variant}), paths, gpus=1)
    cfg = verl_compose(ov.hydra_args(o))
    assert cfg.algorithm.adv_estimator == o["algorithm.adv_estimator"]
    assert cfg.actor_rollout_ref.actor.policy_loss.loss_mode == o["actor_rollout_ref.actor.policy_loss.loss_mode"]


def test_veRLs_config_accepts_gdpo_with_the_reward_keys(run_factory, verl_compose) -> None:  # type: ignore[no-untyped-def]
    from crossgym.adapters.verl import overrides as ov

    paths = ov.Paths(train_files="/d/t.parquet", val_files=None, reward_module="/d/r.py")
    run = run_factory(grpo={"reward_aggregation": "normalize_then_sum"},
                      verifiers=[{"name": "length", "params": {"max": 8}, "weight": 0.5}])
    o, _ = ov.overrides(run, paths, gpus=1)
    cfg = verl_compose(ov.hydra_args(o))
    assert cfg.algorithm.adv_estimator == "gdpo"
    assert list(cfg.algorithm.gdpo_reward_keys) == ["crossgym/task_reward", "crossgym/extra/length"]
    assert list(cfg.algorithm.gdpo_reward_weights) == [1.0, 0.5]


@pytest.mark.parametrize("variant", VARIANTS)
def test_veRLs_policy_loss_weights_each_token_as_the_variant_says(variant):
    from crossgym.compat_tests.advantages import LOSS_HORIZON, LOSS_LENGTHS, loss_weight_reference

    got = parity.loss_weights(variant, list(LOSS_LENGTHS), LOSS_HORIZON)
    assert got == [pytest.approx(row, rel=1e-6, abs=1e-12) for row in loss_weight_reference(variant)]
