"""95% intervals: Wilson against the closed form's known values, the bootstrap seeded and deterministic, and both in
the metrics document overall and per source."""

from __future__ import annotations

import pytest

from crossgym.eval.metrics import compute_metrics
from crossgym.eval.stats import bootstrap, mean_stat, ratio_stat, wilson
from crossgym.protocol import Completion, Rollout, Task, Verdict, VerifierSpec


@pytest.mark.parametrize(("successes", "trials", "low", "high"), [
    (0, 4, 0.0, 0.4899),     # z^2 / (n + z^2)
    (4, 4, 0.5101, 1.0),     # n / (n + z^2)
    (2, 4, 0.1500, 0.8500),
    (1, 10, 0.0179, 0.4042),
    (50, 100, 0.4038, 0.5962),
])
def test_wilson_known_values(successes, trials, low, high):  # type: ignore[no-untyped-def]
    lo, hi = wilson(successes, trials)  # type: ignore[misc]
    assert lo == pytest.approx(low, abs=1e-4) and hi == pytest.approx(high, abs=1e-4)


def test_wilson_edges():
    assert wilson(0, 0) is None
    with pytest.raises(ValueError):
        wilson(5, 4)


def test_bootstrap_is_seeded_and_deterministic():
    values = [0.0, 1.0, 0.5, 0.25, 1.0, 0.0, 0.75, 1.0]
    stats = {"mean": mean_stat(values), "ratio": ratio_stat(values, [1.0] * len(values))}
    first = bootstrap(len(values), stats)
    assert first == bootstrap(len(values), stats)  # same seed, same interval
    assert first["mean"] == first["ratio"]  # one set of resamples for every statistic
    lo, hi = first["mean"]  # type: ignore[misc]
    mean = sum(values) / len(values)
    assert 0.0 <= lo < mean < hi <= 1.0
    assert bootstrap(len(values), stats, seed=1) != first
    constant = bootstrap(3, {"m": mean_stat([0.5, 0.5, 0.5])})
    assert constant["m"] == (0.5, 0.5)
    assert bootstrap(0, {"m": mean_stat([])}) == {"m": None}
    assert bootstrap(2, {"m": mean_stat([None, None])}) == {"m": None}  # undefined on every resample


def _rollouts(passes: dict[str, int], n: int = 4) -> list[Rollout]:
    out = []
    for tid, c in passes.items():
        task = Task(id=tid, prompt="p", answer=None, verifier=VerifierSpec("v"), metadata={"source": tid[0]})
        for j in range(n):
            out.append(Rollout(task=task, completion=Completion.from_text("x"), verdict=Verdict.ok(float(j < c))))
    return out


def test_intervals_in_the_metrics_document():
    rollouts = _rollouts({"a1": 4, "a2": 0, "b1": 2, "b2": 2})
    m = compute_metrics(rollouts)
    ci = m["intervals"]
    assert ci["confidence"] == 0.95 and set(ci["methods"]) == {"wilson", "bootstrap"}
    assert ci["pass@1"]["method"] == "wilson" and (ci["pass@1"]["successes"], ci["pass@1"]["trials"]) == (8, 16)
    assert (ci["pass@1"]["low"], ci["pass@1"]["high"]) == pytest.approx(wilson(8, 16))
    assert ci["mean_reward"]["method"] == "bootstrap" and set(ci["pass@k"]) == {"1", "2", "4"}
    for k, doc in ci["pass@k"].items():
        assert doc["low"] <= m["pass@k"][k] <= doc["high"]
    a = m["by_source"]["a"]["intervals"]
    assert (a["pass@1"]["low"], a["pass@1"]["high"]) == pytest.approx(wilson(4, 8))
    # a resample of source a's two tasks is all-pass, all-fail or half: the bootstrap interval spans [0, 1]
    assert (a["mean_reward"]["low"], a["mean_reward"]["high"]) == (0.0, 1.0)
    b = m["by_source"]["b"]["intervals"]  # both tasks of b at 2/4: no spread over tasks
    assert (b["mean_reward"]["low"], b["mean_reward"]["high"]) == (0.5, 0.5)
    assert compute_metrics(rollouts)["intervals"] == ci  # deterministic


def test_statistics_are_the_definitional_sums_over_a_resample() -> None:
    import random

    rng = random.Random(3)
    values = [rng.random() for _ in range(500)]
    sparse = [None if i % 5 == 0 else v for i, v in enumerate(values)]
    weights = [float(rng.randint(0, 2)) for _ in values]
    idx = rng.choices(range(len(values)), k=len(values))
    assert mean_stat(values)(idx) == sum(values[i] for i in idx) / len(idx)  # exactly: same order
    kept = [sparse[i] for i in idx if sparse[i] is not None]
    assert mean_stat(sparse)(idx) == sum(kept) / len(kept)  # type: ignore[arg-type]
    assert ratio_stat(values, weights)(idx) == sum(values[i] for i in idx) / sum(weights[i] for i in idx)
    assert ratio_stat(values, [0.0] * len(values))(idx) is None
    assert mean_stat([None, None])([0, 1]) is None


def test_binomial_draws_follow_the_binomial_distribution() -> None:
    import math
    import random

    from crossgym.eval.stats import binomial

    rng = random.Random(7)
    for n, p in ((30, 0.4), (12, 0.25), (5, 0.9)):  # both samplers (BTRS past n p >= 10) and the p > 1/2 mirror
        draws = 40_000
        seen = [0] * (n + 1)
        for _ in range(draws):
            seen[binomial(n, p, rng)] += 1
        for k in range(n + 1):
            expected = draws * math.comb(n, k) * p ** k * (1 - p) ** (n - k)
            assert abs(seen[k] - expected) <= 5 * math.sqrt(expected) + 3, (n, p, k, seen[k], expected)
    assert binomial(10, 0.0, rng) == 0 and binomial(10, 1.0, rng) == 10 and binomial(0, 0.5, rng) == 0
    big = [binomial(1_000_000, 0.3, rng) for _ in range(2000)]
    mean = sum(big) / len(big)
    assert abs(mean - 300_000) < 5 * math.sqrt(210_000 / len(big))


def test_a_large_bootstrap_draws_counts_with_the_same_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    from crossgym.eval import stats

    rng = random.Random(11)
    diffs = [rng.choice([-1.0, -0.5, 0.0, 0.0, 0.25, 1.0]) for _ in range(3000)]
    drawn = bootstrap(len(diffs), {"d": lambda idx: sum(diffs[i] for i in idx) / len(idx)})["d"]  # one by one
    monkeypatch.setattr(stats, "EXACT_DRAWS", 1000)
    counted = bootstrap(len(diffs), {"d": mean_stat(diffs)})["d"]
    assert counted is not None and drawn is not None and counted.method == "bootstrap"  # type: ignore[attr-defined]
    width = drawn[1] - drawn[0]
    assert abs(counted[0] - drawn[0]) < 0.1 * width and abs(counted[1] - drawn[1]) < 0.1 * width
    assert counted == bootstrap(len(diffs), {"d": mean_stat(diffs)})["d"]  # seeded
    sparse = [None if i % 3 == 0 else v for i, v in enumerate(diffs)]
    both = bootstrap(len(diffs), {"m": mean_stat(sparse), "r": ratio_stat(diffs, [2.0] * len(diffs))})
    assert both["m"] is not None and both["r"] is not None and both["m"][0] < both["m"][1]
    halved = bootstrap(len(diffs), {"r": ratio_stat(diffs, [2.0] * len(diffs))})["r"]  # the same kinds: same draws
    assert halved == pytest.approx((counted[0] / 2, counted[1] / 2))
    assert bootstrap(4, {"m": mean_stat([None] * 4)}) == {"m": None}


def test_many_distinct_values_take_the_normal_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    from crossgym.eval import stats

    rng = random.Random(5)
    rewards = [rng.random() ** 2 for _ in range(4000)]
    monkeypatch.setattr(stats, "EXACT_DRAWS", 1000)
    counted = bootstrap(len(rewards), {"m": mean_stat(rewards)})["m"]  # 4000 kinds: still counted
    monkeypatch.setattr(stats, "MAX_KINDS", 100)
    normal = bootstrap(len(rewards), {"m": mean_stat(rewards)})["m"]
    assert normal is not None and counted is not None and normal.method == "normal"  # type: ignore[attr-defined]
    width = counted[1] - counted[0]
    assert abs(normal[0] - counted[0]) < 0.1 * width and abs(normal[1] - counted[1]) < 0.1 * width
    assert stats.interval(normal, stats.BOOTSTRAP)["method"] == "normal"  # type: ignore[index]
    import copy
    import pickle

    assert pickle.loads(pickle.dumps(normal)).method == copy.deepcopy(normal).method == "normal"  # type: ignore[attr-defined]
    assert bootstrap(3, {"m": ratio_stat([1.0, 2.0, 3.0], [0.0, 0.0, 0.0])}) == {"m": None}
    monkeypatch.setattr(stats, "MAX_KINDS", 1)
    assert bootstrap(3, {"m": ratio_stat([1.0, 2.0, 3.0], [0.0, 0.0, 0.0])}) == {"m": None}


def test_metrics_of_a_large_run_name_the_normal_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    from crossgym.eval import stats

    monkeypatch.setattr(stats, "EXACT_DRAWS", 10)
    monkeypatch.setattr(stats, "MAX_KINDS", 2)
    out = []
    for i in range(12):
        task = Task(id=f"t{i}", prompt="p", answer=None, verifier=VerifierSpec("v"))
        out += [Rollout(task=task, completion=Completion.from_text("x"), verdict=Verdict.ok(i / 12 + j / 100))
                for j in range(2)]
    ci = compute_metrics(out)["intervals"]
    assert ci["mean_reward"]["method"] == "normal" and "normal" in ci["methods"]
    assert ci["mean_reward"]["low"] < compute_metrics(out)["mean_reward"] < ci["mean_reward"]["high"]
