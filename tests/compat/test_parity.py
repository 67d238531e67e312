"""Reward parity: the comparison rules, driver discovery, a drifting backend caught with its first differing sample,
and the TRL backend's native reward call (a real GRPOTrainer on the tiny model) equal to Verdict.reward."""

from __future__ import annotations

import math

import pytest

from crossgym.compat_tests.corpus import Sample, samples_for
from crossgym.compat_tests.drivers import INSTALLED, NO_DRIVER, NOT_INSTALLED, inspect_backend
from crossgym.compat_tests.parity import expected_reward, run_parity, run_parity_batch, samples_for_mode
from crossgym.compat_tests.results import explain_difference, same_reward
from crossgym.compat_tests.verifier_checks import get_examples
from crossgym.protocol import Completion, Verdict


def test_expected_reward_follows_the_reward_semantics() -> None:
    assert expected_reward(Verdict.ok(0.3)) == 0.3
    assert expected_reward(Verdict(reward=0.2, passed=False, error="malformed: no answer")) == 0.2
    assert expected_reward(Verdict(reward=0.7, passed=False, error="exception: boom")) == 0.0
    assert expected_reward(Verdict.timeout(1.0), on_error=None) is None


def test_same_reward_is_exact() -> None:
    assert same_reward(0.1, 0.1) and same_reward(None, None) and same_reward(math.nan, float("nan"))
    assert not same_reward(0.1, 0.10000000149011612)
    assert not same_reward(1.0, None) and not same_reward(None, 0.0) and not same_reward(1.0, "1.0")
    assert "float32" in explain_difference(0.1, 0.10000000149011612)


def test_generatable_counts_tool_calls_and_slow_entries_are_left_out_once() -> None:
    """1,000 tool calls are ~30 KB a model would have to write: not a parity sample (the garbage check has it); a
    garbage entry whose reference was slow on one task is not scored again on the next."""
    from crossgym.compat_tests.parity import generatable, parity_ready
    from crossgym.compat_tests.verdicts import VerdictCache
    from crossgym.protocol.messages import Message, ToolCall

    task = get_examples("exact_match")[0].task
    calls = tuple(ToolCall(id=f"c{i}", name="f", arguments={"x": 1}) for i in range(1000))
    many = Sample("garbage", "many@task0", task, Completion(messages=(Message("assistant", "", tool_calls=calls),)))
    one = Sample("garbage", "one@task0", task, Completion(messages=(Message("assistant", "", tool_calls=calls[:1]),)))
    assert not generatable(many) and generatable(one)

    class SlowFirst(VerdictCache):
        def timed(self, s: Sample) -> tuple[Verdict, float]:
            v, _ = super().timed(s)
            return v, (9.0 if s.id == "slow@task0" else 0.0)

    samples = [Sample("garbage", f"{e}@task{k}", task, Completion.from_text("4")) for k in range(3)
               for e in ("slow", "fast")]
    kept, refs, left_out = parity_ready(samples, SlowFirst())
    assert [s.id for s in kept] == ["fast@task0", "fast@task1", "fast@task2"] and left_out == 3
    assert set(refs) == {s.key for s in samples if s.id != "slow@task1" and s.id != "slow@task2"}


def test_discovery_declared_registry_capability_convention_and_missing(fakes: object) -> None:
    exact = inspect_backend("fake_exact")
    assert (exact.status, exact.driver.source, exact.driver.module) == (INSTALLED, "declared", "compat_fakes")
    assert exact.driver.modes == ("single_turn", "multi_turn") and exact.driver.takes_mode
    f32 = inspect_backend("fake_float32")
    assert (f32.status, f32.driver.module, f32.driver.takes_mode) == (INSTALLED, "compat_fakes_f32", False)
    nodriver = inspect_backend("fake_nodriver")
    assert nodriver.status == NO_DRIVER and "compat_driver" in nodriver.reason
    missing = inspect_backend("fake_missing")
    assert (missing.status, missing.install) == (NOT_INSTALLED, "pip install fake-missing-rl")


def test_a_float32_backend_is_a_mismatch_with_its_first_differing_sample(fakes: object) -> None:
    info = inspect_backend("fake_float32")
    samples = samples_for("fake_contains", get_examples("fake_contains"), None, garbage_tasks=1)
    res = run_parity("fake_contains", "fake_float32", info.driver, samples_for_mode(samples, "single_turn"),
                     "single_turn")
    assert res.status == "mismatch" and res.mismatches >= 1
    fm = res.first_mismatch
    assert fm["sample"] == "example:3" and fm["expected"] == 0.3 and fm["got"] != 0.3
    assert "float32" in fm["why"]


def test_a_driver_error_is_located_on_its_sample(fakes: object) -> None:
    info = inspect_backend("fake_float32")
    ex = get_examples("fake_contains")
    crash = Sample(source="corpus", id="crash", task=ex[0].task, completion=Completion.from_text("CRASH"))
    res = run_parity("fake_contains", "fake_float32", info.driver, [crash], "single_turn")
    assert res.status == "error" and res.first_mismatch["sample"] == "corpus:crash"


def test_an_exact_backend_passes_in_both_modes_in_one_batch(fakes: object) -> None:
    info = inspect_backend("fake_exact")
    groups = {n: samples_for(n, get_examples(n), None, garbage_tasks=1) for n in ("fake_contains", "exact_match")}
    for mode in ("single_turn", "multi_turn"):
        out = run_parity_batch("fake_exact", info.driver, {n: samples_for_mode(g, mode) for n, g in groups.items()},
                               mode)
        assert {n: r.status for n, r in out.items()} == {"fake_contains": "pass", "exact_match": "pass"}
        assert all(r.compared > 20 for r in out.values()), {n: r.compared for n, r in out.items()}


# ------------------------------------------------------------------ TRL, through a real GRPOTrainer
TRL_VERIFIERS = ("exact_match", "json_answer", "tool_call")


@pytest.fixture(scope="module")
def trl_info(tiny_model_dir, monkeypatch_module):  # type: ignore[no-untyped-def]
    pytest.importorskip("trl")
    monkeypatch_module.setenv("CROSSGYM_COMPAT_MODEL", str(tiny_model_dir))
    info = inspect_backend("trl")
    assert info.status == INSTALLED, info.reason
    return info


@pytest.fixture(scope="module")
def monkeypatch_module():  # type: ignore[no-untyped-def]
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


@pytest.mark.parametrize("mode", ["single_turn", "multi_turn"])
def test_trl_reward_call_equals_verdict_reward(trl_info, mode: str) -> None:  # type: ignore[no-untyped-def]
    from crossgym.compat_tests.corpus import default_corpus_dir
    from crossgym.plugins import registry

    names = [n for n in TRL_VERIFIERS if n in registry("verifiers")]
    corpus = default_corpus_dir()
    groups = {n: samples_for_mode(samples_for(n, get_examples(n), corpus, garbage_tasks=1), mode) for n in names}
    out = run_parity_batch("trl", trl_info.driver, groups, mode)
    for n, r in out.items():
        assert r.status == "pass", (n, r.detail, r.first_mismatch)
        assert r.compared > 40 and r.sources.get("corpus", 0) > 10
    if mode == "multi_turn":  # multi-message completions went through the episode column
        assert any(len(s.completion.messages) > 1 for g in groups.values() for s in g)
