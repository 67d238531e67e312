"""The "advantages" compat check (issue 25): crossgym's reference formulas, the check's verdicts, the matrix wiring,
and TRL's own trainer code against the reference for every variant."""

from __future__ import annotations

import math
import statistics
import types

import pytest

from crossgym.compat_tests.advantages import (
    AGGREGATIONS,
    CASES,
    MULTI_CASES,
    ROWS,
    RTOL,
    SEMANTICS,
    VARIANTS,
    BatchNorm,
    Semantics,
    cases,
    check_advantages,
    close,
    corpus_case,
    reference,
    reference_aggregated,
    response_length,
    whiten,
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
        reference([[1.0, 0.0]], "nope", TRL)


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
    assert {res[v].status for v in VARIANTS} == {"error"} and "boom" in res["grpo"].detail
    assert res["normalize_then_sum"].status == "skip"  # no aggregated_advantages hook: the backend lacks it


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
    assert set(adv) == set(ROWS)
    for v in ("rloo", "reinforce_pp_baseline"):  # GRPOTrainer has neither estimator
        assert adv.pop(v)["status"] == "skip"
    assert adv.pop("normalize_then_sum")["checked"] == sum(len(g) for c in MULTI_CASES for g in c.groups)
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


VERL_BN, OPENRLHF_BN = SEMANTICS["verl"].batch, SEMANTICS["openrlhf"].batch


def test_rloo_subtracts_the_mean_of_the_other_completions():
    g = [1.0, 0.0, 0.5, 0.25]
    want = [r - statistics.fmean(g[:i] + g[i + 1:]) for i, r in enumerate(g)]
    for sem in (VERL, SEMANTICS["openrlhf"]):
        assert reference([g], "rloo", sem)[0] == pytest.approx(want, rel=1e-12)


def _token_whiten(values, ddof, form, eps=1e-8):
    w = [response_length(k) for k in range(len(values))]
    tokens = [v for v, n in zip(values, w, strict=True) for _ in range(n)]
    mean = statistics.fmean(tokens)
    var = statistics.variance(tokens) if ddof else statistics.pvariance(tokens)
    scale = math.sqrt(var + eps) if form == "var+eps" else math.sqrt(max(var, eps))
    return [(v - mean) / scale for v in values]


def test_reinforce_pp_baseline_centres_each_group_then_whitens_the_batch_over_its_tokens():
    groups = [[1.0, 0.0, 0.0, 1.0], [0.5, 0.25, 1.0, 0.0]]
    centred = [r - statistics.fmean(g) for g in groups for r in g]
    got = [a for row in reference(groups, "reinforce_pp_baseline", VERL) for a in row]
    assert got == pytest.approx(_token_whiten(centred, 1, "var+eps"), rel=1e-12)  # veRL: Bessel over tokens
    got = [a for row in reference(groups, "reinforce_pp_baseline", SEMANTICS["openrlhf"]) for a in row]
    assert got == pytest.approx(_token_whiten(centred, 0, "max(var,eps)"), rel=1e-12)  # OpenRLHF: population


def test_the_tolerance_does_not_hide_veRL_and_openrlhf_whitening_differences():
    """Bessel's correction over ~30 tokens (veRL) against none (OpenRLHF): ~1.7% apart, far above rtol."""
    g = [[1.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 1.0, 1.0]]
    a = reference(g, "reinforce_pp_baseline", VERL)[0][0]
    b = reference(g, "reinforce_pp_baseline", SEMANTICS["openrlhf"])[0][0]
    assert not close(a, b) and abs(a - b) > 1000 * RTOL * abs(a)
    sequence_weighted = BatchNorm("per sequence", "sequence", 1, 1e-8, "var+eps")
    assert whiten([1.0, -1.0, 2.0], sequence_weighted) != pytest.approx(whiten([1.0, -1.0, 2.0], VERL_BN))


def test_normalize_then_sum_normalises_each_term_then_whitens_the_weighted_sum():
    case = MULTI_CASES[0]
    w = case.weights
    # TRL: each term a group z-score (Bessel, eps 1e-4), then the weighted sum over the batch's sequences
    summed = []
    for g in case.groups:
        zs = []
        for k in range(len(w)):
            vals = [c[k] for c in g]
            m, sd = statistics.fmean(vals), statistics.stdev(vals)
            zs.append([(v - m) / (sd + 1e-4) for v in vals])
        summed += [sum(w[k] * zs[k][i] for k in range(len(w))) for i in range(len(g))]
    m, sd = statistics.fmean(summed), statistics.stdev(summed)
    got = [a for row in reference_aggregated(case.groups, w, TRL) for a in row]
    assert got == pytest.approx([(s - m) / (sd + 1e-4) for s in summed], rel=1e-6)
    # a term that is equal within a group adds nothing: group 3's first term
    assert reference_aggregated([[(0.0, 1.0), (0.0, 0.0)]], (1.0, 1.0), TRL) == \
        reference_aggregated([[(5.0, 1.0), (5.0, 0.0)]], (1.0, 1.0), TRL)
    # TRL whitens per sequence, veRL per token: not equal within the tolerance
    a, b = reference_aggregated(case.groups, w, TRL), reference_aggregated(case.groups, w, VERL)
    assert any(not close(x, y) for ra, rb in zip(a, b, strict=True) for x, y in zip(ra, rb, strict=True))
    with pytest.raises(ValueError, match="no batch whitening"):
        reference_aggregated(case.groups, w, Semantics("none", eps=1e-6))


def test_the_aggregation_check_runs_a_hook_and_names_a_wrong_whitening():
    right = types.SimpleNamespace(advantages=lambda g, v: reference(g, v, VERL), advantage_variants=("grpo",),
                                  aggregated_advantages=lambda g, w: reference_aggregated(g, w, VERL))
    res = check_advantages(right, "verl")
    assert res["normalize_then_sum"].status == "pass"
    unmasked = [c for c in MULTI_CASES if not any(r is None for g in c.groups for x in g for r in x)]
    assert len(unmasked) == len(MULTI_CASES) - 1  # veRL cannot mask: the None case is named as not run
    assert res["normalize_then_sum"].checked == sum(len(g) for c in unmasked for g in c.groups)
    assert "not run: none_masked_terms" in res["normalize_then_sum"].detail
    wrong = Semantics("trl-like", eps=1e-6, batch=SEMANTICS["trl"].batch)
    bad = types.SimpleNamespace(advantages=right.advantages, advantage_variants=("grpo",),
                                aggregated_advantages=lambda g, w: reference_aggregated(g, w, wrong))
    res = check_advantages(bad, "verl")["normalize_then_sum"]
    assert res.status == "fail" and res.failure["weights"] == list(MULTI_CASES[0].weights)


def test_every_row_is_a_variant_of_the_config_or_an_aggregation():
    from typing import get_args

    from crossgym.config.run import GRPOConfig, Variant

    assert set(VARIANTS) == set(get_args(Variant))
    assert set(AGGREGATIONS) <= set(get_args(GRPOConfig.model_fields["reward_aggregation"].annotation))
    assert ROWS == VARIANTS + AGGREGATIONS


def test_each_backend_checks_the_variants_it_declares():
    """The advantages hooks cover exactly the variants each backend maps (kit.variants.SUPPORTED)."""
    import importlib

    from crossgym.adapters.kit.variants import NORMALIZE_THEN_SUM, SUPPORTED

    for b, supported in SUPPORTED.items():
        mod = importlib.import_module(f"crossgym.adapters.{b}.parity")
        assert set(mod.ADVANTAGE_VARIANTS) == set(supported), b
        assert (getattr(mod, "aggregated_advantages", None) is not None) == (b in NORMALIZE_THEN_SUM), b


def _adv_doc() -> dict:
    doc = _doc("pass")
    doc["backends"]["verl"]["advantages"] = {
        "grpo": {"status": "pass", "detail": "ok", "checked": 156, "extra": {"rtol": RTOL}},
        "rloo": {"status": "fail", "detail": "binary: group 0 item 1: reference 1.0, verl 2.0", "checked": 3},
        "cispo": {"status": "skip", "detail": "verl does not support variant cispo"},
        "normalize_then_sum": {"status": "pass", "detail": "ok", "checked": 26}}
    doc["summary"] = summarize(doc)
    return doc


def test_the_matrix_renders_an_advantages_row_per_variant_with_the_tolerance(capsys):
    from crossgym.compat_tests.render import advantage_rows, render_html, render_text

    doc = _adv_doc()
    rows, backends, tol = advantage_rows(doc)
    assert rows == ["grpo", "rloo", "cispo", "normalize_then_sum"] and backends == ["verl"]
    assert tol == f"rtol {RTOL:g}, atol 1e-06"
    render_text(doc)
    out = capsys.readouterr().out
    assert f"rtol {RTOL:g}" in out and "pass (156)" in out and "FAIL" in out and "pass (26)" in out
    assert "verl x rloo" in out and "reference 1.0, verl 2.0" in out  # the failing cell's first difference
    page = render_html(doc)
    assert "<h2>Advantages" in page and f"rtol {RTOL:g}" in page
    assert "<th>normalize_then_sum</th>" in page and "pass (156)" in page and "title=\"verl does not support" in page


def test_loss_weight_reference_is_each_aggregations_token_weight():
    from crossgym.compat_tests.advantages import LOSS_AGG, LOSS_HORIZON, LOSS_LENGTHS, loss_weight_reference

    b, total = len(LOSS_LENGTHS), sum(LOSS_LENGTHS)
    grpo, dapo, dr = (loss_weight_reference(v) for v in ("grpo", "dapo", "dr_grpo"))
    assert grpo[0][0] == pytest.approx(1 / (b * LOSS_LENGTHS[0])) and grpo[2][0] == pytest.approx(1 / (b * 5))
    assert {x for row in dapo for x in row} == {0.0, 1 / total}
    assert dr[0][0] == pytest.approx(1 / (b * LOSS_HORIZON))
    for w in (grpo, dapo):  # a mean: the weights of the response tokens sum to 1
        assert sum(map(sum, w)) == pytest.approx(1.0)
    assert all(row[n:] == [0.0] * (LOSS_HORIZON - n) for row, n in zip(grpo, LOSS_LENGTHS, strict=True))
    assert set(LOSS_AGG) == set(VARIANTS)


def test_a_wrong_loss_aggregation_fails_the_variant_and_names_the_token():
    from crossgym.compat_tests.advantages import loss_gradient_reference, loss_weight_reference

    def hook(variant, lengths, horizon, log_ratio=None, advantages=None):
        if log_ratio is not None:
            return loss_gradient_reference("dapo", "verl", lengths, horizon)
        return loss_weight_reference("dapo", lengths, horizon)  # token-mean for every variant

    drv = types.SimpleNamespace(advantages=lambda g, v: reference(g, v, VERL), advantage_variants=("grpo", "dapo"),
                                loss_weights=hook)
    res = check_advantages(drv, "verl")
    assert res["dapo"].status == "pass" and "per-token loss weights (token-mean" in res["dapo"].detail
    assert res["grpo"].status == "fail" and "loss weights (seq-mean-token-mean)" in res["grpo"].detail
    assert res["grpo"].failure["horizon"] == 8


def test_trls_own_loss_weights_each_token_as_the_variant_says(tiny_model_dir, monkeypatch):
    """GRPOTrainer._compute_loss on fixed log-probs: grpo averages per sequence, dapo per token of the batch,
    dr_grpo divides by B x max_completion_length."""
    pytest.importorskip("trl")
    from crossgym.adapters.trl import parity
    from crossgym.compat_tests.advantages import LOSS_HORIZON, LOSS_LENGTHS, loss_weight_reference

    monkeypatch.setenv(parity.MODEL_ENV, str(tiny_model_dir))
    for v in ("grpo", "dapo", "dr_grpo"):
        got = parity.loss_weights(v, list(LOSS_LENGTHS), LOSS_HORIZON)
        assert got == [pytest.approx(row, rel=1e-6, abs=1e-12) for row in loss_weight_reference(v)], v


def test_off_policy_gradients_model_each_clip_and_gate_and_the_dual_clip_is_named():
    from crossgym.compat_tests.advantages import (
        LOSS_ADVANTAGES,
        LOSS_LENGTHS,
        loss_gradient_reference,
        loss_log_ratio,
        loss_weight_reference,
    )

    rho = loss_log_ratio()
    trl, verl = loss_gradient_reference("grpo", "trl"), loss_gradient_reference("grpo", "verl")
    # a token with A < 0 and ratio above 3: veRL's dual clip zeroes its gradient, TRL's PPO keeps it
    i, t = next((i, t) for i, n in enumerate(LOSS_LENGTHS) for t in range(n)
                if LOSS_ADVANTAGES[i] < 0 and math.exp(rho[i][t]) > 3)
    assert verl[i][t] == 0.0 and trl[i][t] != 0.0
    # PPO clip: a positive advantage above 1 + 0.2 gets no gradient; inside the band it is A * r * weight
    w = loss_weight_reference("grpo")
    for i, n in enumerate(LOSS_LENGTHS):
        for t in range(n):
            r, a = math.exp(rho[i][t]), LOSS_ADVANTAGES[i]
            if a > 0 and r > 1.2:
                assert trl[i][t] == 0.0
            if 0.8 < r < 1.2:
                assert trl[i][t] == pytest.approx(a * r * w[i][t], rel=1e-6)
    # CISPO caps the detached ratio at 1 + 4: the ratio-5.5 tokens count 5 times their advantage
    cispo = loss_gradient_reference("cispo", "trl")
    cw = loss_weight_reference("cispo")
    capped = [(i, t) for i, n in enumerate(LOSS_LENGTHS) for t in range(n) if math.exp(rho[i][t]) > 5]
    assert capped and all(cispo[i][t] == pytest.approx(5.0 * LOSS_ADVANTAGES[i] * cw[i][t]) for i, t in capped)
    # GSPO clips the sequence ratio (3e-4 / 4e-4): a sequence whose ratio left the band on its advantage's side gets
    # no gradient on any token; the on-policy sequence 0 keeps one
    gspo = loss_gradient_reference("gspo", "trl")
    for i, n in enumerate(LOSS_LENGTHS):
        seq, a = math.exp(sum(rho[i][:n]) / n), LOSS_ADVANTAGES[i]
        clipped = seq > 1 + 4e-4 if a > 0 else seq < 1 - 3e-4
        assert (gspo[i][:n] == [0.0] * n) == clipped, i
    assert gspo[0][0] != 0.0 and any(row == [0.0] * len(row) for row in gspo)
    # SAPO's gate is smooth: every response token keeps a gradient
    sapo = loss_gradient_reference("sapo", "trl")
    assert all(sapo[i][t] != 0.0 for i, n in enumerate(LOSS_LENGTHS) for t in range(n))


def test_masked_terms_follow_trls_nan_semantics():
    """A None term is left out of its group's statistics and of the sum; one valid value: the term adds nothing in
    that group; every term None: unscorable, left out of the batch's whitening, advantage 0."""
    groups = [[(1.0, 0.2), (0.0, None), (1.0, 0.5), (0.0, 0.1)], [(0.5, None), (None, None), (0.0, 1.0), (1.0, 0.0)]]
    got = reference_aggregated(groups, (1.0, 0.5), TRL)
    assert got[1][1] == 0.0
    z = lambda vals: [(v - statistics.fmean(vals)) / (statistics.stdev(vals) + 1e-4) for v in vals]  # noqa: E731
    t0a, t1a = z([1.0, 0.0, 1.0, 0.0]), z([0.2, 0.5, 0.1])
    t0b, t1b = z([0.5, 0.0, 1.0]), z([1.0, 0.0])
    sums = [t0a[0] + 0.5 * t1a[0], t0a[1], t0a[2] + 0.5 * t1a[1], t0a[3] + 0.5 * t1a[2],
            t0b[0], t0b[1] + 0.5 * t1b[0], t0b[2] + 0.5 * t1b[1]]
    m, sd = statistics.fmean(sums), statistics.stdev(sums)
    want = [(x - m) / (sd + 1e-4) for x in sums]
    assert got[0] == pytest.approx(want[:4], rel=1e-6)
    assert [got[1][0], got[1][2], got[1][3]] == pytest.approx(want[4:], rel=1e-6)
    with pytest.raises(ValueError, match="mask"):
        reference_aggregated(groups, (1.0, 0.5), VERL)
