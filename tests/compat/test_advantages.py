"""The "advantages" compat check (issue 25): crossgym's reference formulas, the check's verdicts, the matrix wiring,
and TRL's own trainer code against the reference for every variant."""

from __future__ import annotations

import math
import statistics
import types

import pytest

from crossgym.compat_tests.advantages import (
    CASES,
    RTOL,
    SEMANTICS,
    VARIANTS,
    Semantics,
    cases,
    check_advantages,
    close,
    corpus_case,
    reference,
)
from crossgym.compat_tests.matrix import merge, summarize

TRL, VERL = SEMANTICS["trl"], SEMANTICS["verl"]


def test_grpo_reference_is_the_group_z_score_with_bessels_std_and_the_backends_eps():
    g = [1.0, 0.0, 0.0, 1.0, 1.0]
    mean, std = statistics.fmean(g), statistics.stdev(g)  # stdev: n - 1 (Bessel's correction)
    for sem in (TRL, VERL, SEMANTICS["openrlhf"]):
        got = reference([g], "grpo", sem)[0]
        assert got == pytest.approx([(r - mean) / (std + sem.eps) for r in g], rel=1e-12)


def test_dr_grpo_subtracts_the_group_mean_only_and_dapo_gspo_share_grpos_advantages():
    g = [0.25, 2.0, -0.5, 0.25]
    assert reference([g], "dr_grpo", TRL)[0] == pytest.approx([r - statistics.fmean(g) for r in g], rel=1e-12)
    for v in ("dapo", "gspo"):
        assert reference([g], v, VERL) == reference([g], "grpo", VERL)


def test_the_tolerance_does_not_hide_a_different_epsilon():
    """TRL's 1e-4 and veRL's 1e-6 give advantages further apart than the tolerance: each is modelled, not absorbed."""
    g = [[1.0, 0.0, 0.0, 1.0]]
    a, b = reference(g, "grpo", TRL)[0][0], reference(g, "grpo", VERL)[0][0]
    assert not close(a, b) and abs(a - b) > 100 * RTOL * abs(a)
    population = Semantics("population std", eps=1e-6, ddof=0)
    assert not close(reference(g, "grpo", population)[0][0], b)


def test_none_rewards_are_masked_where_the_backend_masks_them():
    got = reference([[1.0, None, 0.0, 1.0], [None, None, 1.0, None], [None, None]], "grpo", TRL)
    valid = [1.0, 0.0, 1.0]
    z = [(r - statistics.fmean(valid)) / (statistics.stdev(valid) + TRL.eps) for r in valid]
    assert got[0] == pytest.approx([z[0], 0.0, z[1], z[2]], rel=1e-12)
    assert got[1] == [0.0, 0.0, 0.0, 0.0]  # one valid reward: std undefined, TRL's NaN -> 0
    assert got[2] == [0.0, 0.0]
    assert reference([[1.0, None, 0.5]], "dr_grpo", TRL)[0] == pytest.approx([0.25, 0.0, -0.25])
    with pytest.raises(ValueError, match="mask"):
        reference([[1.0, None]], "grpo", VERL)
    with pytest.raises(ValueError, match="unknown variant"):
        reference([[1.0, 0.0]], "rloo", TRL)


def test_all_equal_groups_get_zero_advantages():
    for sem in SEMANTICS.values():
        assert reference([[0.5] * 4, [0.0, 0.0]], "grpo", sem) == [[0.0] * 4, [0.0, 0.0]]


def _driver(hook, variants=VARIANTS):
    return types.SimpleNamespace(advantages=hook, advantage_variants=variants)


def test_the_check_fails_on_a_backend_using_the_population_std_and_names_the_case():
    wrong = Semantics("population", eps=1e-6, ddof=0)
    res = check_advantages(_driver(lambda groups, variant: reference(groups, variant, wrong)), "verl")
    assert res["grpo"].status == "fail" and res["grpo"].failure["case"] == "binary"
    assert res["dr_grpo"].status == "pass"  # no std: the population/Bessel difference does not matter there
    assert "none_masked" in res["dr_grpo"].detail  # veRL cannot mask a None reward: that case is not run


def test_the_check_skips_unsupported_variants_and_drivers_without_a_hook():
    res = check_advantages(_driver(lambda g, v: reference(g, v, VERL), ("grpo",)), "verl")
    assert res["grpo"].status == "pass" and res["grpo"].checked > 0
    assert {res[v].status for v in ("dapo", "dr_grpo", "gspo")} == {"skip"}
    assert check_advantages(types.SimpleNamespace(), "verl")["advantages"].status == "skip"
    assert check_advantages(_driver(lambda g, v: []), "unknown")["advantages"].status == "skip"


def test_a_crashing_hook_is_an_error_on_that_variant():
    def hook(groups, variant):
        raise RuntimeError("boom")

    res = check_advantages(_driver(hook), "trl")
    assert {r.status for r in res.values()} == {"error"} and "boom" in res["grpo"].detail


def _doc(status: str) -> dict:
    doc = {"schema": "crossgym-compat/1", "crossgym_version": "0", "runs": [{"python": "3", "prefix": "/", "created": ""}],
           "verifiers": {}, "environments": {}, "matrix": {},
           "backends": {"verl": {"status": "installed", "plans": {},
                                 "advantages": {"grpo": {"status": status, "detail": "", "checked": 1}}}}}
    doc["summary"] = summarize(doc)
    return doc


def test_summary_counts_a_failed_variant_and_merge_keeps_measured_results():
    assert _doc("fail")["summary"]["failed_checks"] == ["backend verl: advantages grpo"]
    assert _doc("pass")["summary"]["ok"]
    assert merge([_doc("skip"), _doc("pass")])["backends"]["verl"]["advantages"]["grpo"]["status"] == "pass"
    merged = merge([_doc("pass"), _doc("fail")])
    assert merged["backends"]["verl"]["advantages"]["grpo"]["status"] == "fail" and not merged["summary"]["ok"]


def test_every_case_is_finite_and_has_groups_of_at_least_two():
    assert {c.name for c in CASES} >= {"all_equal", "one_outlier", "groups_of_2", "none_masked"}
    for case in CASES:
        assert all(len(g) >= 2 for g in case.groups)
        assert all(r is None or math.isfinite(r) for g in case.groups for r in g)


def test_the_frozen_corpus_gives_one_realistic_group_per_verifier(tmp_path):
    case = corpus_case()
    assert case is not None and len(case.groups) >= 20 and {len(g) for g in case.groups} == {4}
    assert len({r for g in case.groups for r in g}) > 3  # more than pass/fail: partial credit, weights
    assert cases()[-1] is case or cases()[-1] == case
    assert corpus_case(tmp_path) is None and cases(tmp_path) == CASES  # a folder without verifiers/: no batch


def test_trls_own_trainer_computes_the_reference_for_every_variant(tiny_model_dir, monkeypatch):
    """GRPOTrainer._generate_and_score_completions, built by the TRL backend for each variant, through the compat
    runner: every case (None-masked included) within rtol 1e-6."""
    pytest.importorskip("trl")
    from crossgym.adapters.trl import parity
    from crossgym.compat_tests.runner import build_matrix

    monkeypatch.setenv(parity.MODEL_ENV, str(tiny_model_dir))
    doc = build_matrix(["trl"], checks="advantages")
    adv = doc["backends"]["trl"]["advantages"]
    assert set(adv) == set(VARIANTS)
    for v, r in adv.items():
        assert r["status"] == "pass", (v, r)
        assert r["checked"] == sum(len(g) for c in cases() for g in c.groups)  # the masked case runs on TRL
    assert doc["summary"]["ok"]


def test_trls_dr_grpo_is_unscaled_and_masks_none(tiny_model_dir, monkeypatch):
    pytest.importorskip("trl")
    from crossgym.adapters.trl import parity

    monkeypatch.setenv(parity.MODEL_ENV, str(tiny_model_dir))
    got = parity.advantages([[1.0, None, 0.5], [3.0, 1.0]], "dr_grpo")
    assert got[0] == pytest.approx([0.25, 0.0, -0.25], rel=1e-6)
    assert got[1] == pytest.approx([1.0, -1.0], rel=1e-6)
