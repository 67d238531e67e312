"""The blend corpus (issue 21, item 6): per-part reward parity over a six-part blend of single-turn and multi-turn
parts, and token consistency over a mixed batch, through every backend installed in this venv."""

from __future__ import annotations

import types
from collections import Counter

import pytest

from crossgym.compat_tests.blend import (
    BLEND_PARTS,
    blend_run,
    blend_samples,
    check_blend_parity,
    check_blend_tokens,
    expected,
)
from crossgym.compat_tests.drivers import INSTALLED, Driver, inspect_backend
from crossgym.compat_tests.parity import is_multi_turn
from crossgym.scoring import RewardRule
from crossgym.scoring.parts import part_of


@pytest.fixture(scope="module")
def blend():  # type: ignore[no-untyped-def]
    run = blend_run()
    return run, RewardRule.from_run(run), blend_samples(run)


def test_the_blend_corpus_mixes_five_or_more_parts_single_and_multi_turn(blend) -> None:  # type: ignore[no-untyped-def]
    run, rule, samples = blend
    parts = Counter(part_of(s.task) for s in samples)
    assert len(parts) == len(BLEND_PARTS) >= 5
    multi = {part_of(s.task) for s in samples if is_multi_turn(s)}
    assert multi == {"tools", "sql", "shell", "code"}
    assert {part_of(s.task) for s in samples if not is_multi_turn(s)} == {"math", "json"}
    # the parts' own environment settings reached the stamped tasks (tools: max_turns 6, code: 3)
    tools = next(s.task for s in samples if part_of(s.task) == "tools")
    assert tools.id.startswith("tools/") and tools.metadata["crossgym_env"]["max_turns"] == 6
    # each scripted episode earns what its case says: the correct one passes, the wrong one does not
    for s in samples:
        scored = rule.score(s.task, s.completion)
        label = s.id.split(":", 1)[1]
        assert scored.part == part_of(s.task)
        assert bool(scored.verdict.passed) == (label == "correct"), (s.id, scored.verdict)


def test_part_terms_judge_only_their_part_and_the_float32_sum_is_the_trainers(blend) -> None:  # type: ignore[no-untyped-def]
    _, rule, samples = blend
    by_id = {s.id: rule.score(s.task, s.completion) for s in samples}
    assert set(by_id["json:correct"].extras) == {"json/json_valid"}
    assert set(by_id["tools:correct"].extras) == {"tools/length"}
    assert by_id["math:correct"].extras == {} and by_id["sql:correct"].extras == {}
    assert by_id["json:correct"].reward == 1.25  # 1.0 + 0.25 x json_valid
    tools = next(s for s in samples if s.id == "tools:correct")
    want = by_id["tools:correct"].reward
    assert want is not None and 0 < want % 1  # a fractional length term: the float32 sum is not the float64 one
    f32 = expected(rule, tools.task, tools.completion, "float32")
    assert f32 != want and abs(f32 - want) < 1e-6


def _driver(fn, *, modes=("single_turn", "multi_turn"), dtype="float64") -> Driver:  # type: ignore[no-untyped-def]
    return Driver(module="test", source="test", native_rewards=fn, modes=tuple(modes), takes_mode=True,
                  declared_modes=True, reward_dtype=dtype)


def test_the_check_passes_the_scoring_core_and_catches_a_backend_that_drops_part_terms() -> None:
    def faithful(tasks, completions, *, mode, rule):  # type: ignore[no-untyped-def]
        return [rule.score(t, c).reward for t, c in zip(tasks, completions, strict=True)]

    def no_parts(tasks, completions, *, mode, rule):  # type: ignore[no-untyped-def]
        plain = RewardRule(on_error=rule.on_error)  # the run-wide rule only: a part's own verifiers are lost
        return [plain.score(t, c).reward for t, c in zip(tasks, completions, strict=True)]

    good = check_blend_parity(_driver(faithful), "good")
    assert {k: r.status for k, r in good.items()} == {"parity_blend:single_turn": "pass",
                                                     "parity_blend:multi_turn": "pass"}
    mixed = good["parity_blend:multi_turn"]
    assert set(mixed.extra["parts"]) == {p["name"] for p in BLEND_PARTS}
    assert mixed.extra["multi_turn_samples"] == 8 and mixed.checked == mixed.extra["samples"] == 14
    bad = check_blend_parity(_driver(no_parts), "bad")["parity_blend:multi_turn"]
    assert bad.status == "fail" and bad.failure is not None
    assert bad.failure["part"] in ("json", "tools") and "part" in bad.detail
    assert bad.extra["parts"]["math"]["mismatches"] == 0 and bad.extra["parts"]["json"]["mismatches"] > 0


def test_a_driver_that_cannot_take_the_blend_is_a_skip_not_a_pass() -> None:
    res = check_blend_parity(_driver(lambda tasks, completions, *, mode: []), "plain")
    assert [r.status for r in res.values()] == ["skip"]
    assert check_blend_tokens(types.SimpleNamespace(episode_tokens=None)).status == "skip"


BACKENDS = ("trl", "unsloth", "verl", "openrlhf", "skyrl")


@pytest.mark.parametrize("backend", BACKENDS)
def test_blend_parity_and_tokens_through_each_installed_backend(backend, tiny_model_dir, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Each backend's own reward path (TRL's GRPOTrainer reward functions, veRL's reward manager and agent loop,
    OpenRLHF's reward file and agent executor, Unsloth through TRL) gives every part the scoring core's reward,
    and its multi-turn rollout trains on what the environment saw in a mixed batch."""
    if backend in ("trl", "unsloth"):  # the session's tiny model; veRL's and OpenRLHF's drivers bring their own
        monkeypatch.setenv("CROSSGYM_COMPAT_MODEL", str(tiny_model_dir))
    info = inspect_backend(backend)
    if info.status != INSTALLED or info.driver is None:
        pytest.skip(f"{backend} is not installed in this venv ({info.reason})")
    parity = check_blend_parity(info.driver, backend)
    assert parity and all(r.status == "pass" for r in parity.values()), {k: r.to_dict() for k, r in parity.items()}
    widest = max(parity.values(), key=lambda r: r.checked)
    assert set(widest.extra["parts"]) == {p["name"] for p in BLEND_PARTS}
    assert widest.extra["multi_turn_samples"] == 8
    tokens = check_blend_tokens(info.driver)
    assert tokens.status == "pass", tokens.to_dict()
    assert tokens.extra["parts"] == 5 and tokens.extra["single_turn_episodes"] >= 2  # both single-turn parts
    assert set(tokens.extra["turns_by_part"]) == {"short", "mid", "long"}
    assert max(tokens.extra["turns_by_part"]["short"]) <= 2  # its part's max_turns, not the run's 3


def test_a_blend_failure_fails_the_matrix_and_merging_keeps_the_measured_result() -> None:
    from crossgym.compat_tests.matrix import merge, summarize

    def doc(status: str) -> dict:
        return {"schema": "crossgym-compat/1", "crossgym_version": "0", "runs": [{}], "verifiers": {},
                "environments": {}, "matrix": {},
                "backends": {"verl": {"status": "installed", "blend": {
                    "parity_blend:multi_turn": {"status": status, "detail": "", "checked": 14}}}}}

    failed = summarize(doc("fail"))
    assert not failed["ok"] and failed["failed_checks"] == ["backend verl: blend parity_blend:multi_turn"]
    assert summarize(doc("pass"))["ok"]
    merged = merge([doc("skip"), doc("pass")])
    assert merged["backends"]["verl"]["blend"]["parity_blend:multi_turn"]["status"] == "pass"


def test_the_html_matrix_has_a_blend_table_with_part_counts_per_backend() -> None:
    """The page `make test` writes shows each backend's blend checks (a real check's results), a failure in red."""
    from crossgym.compat_tests.matrix import summarize
    from crossgym.compat_tests.render import blend_rows, render_html

    def faithful(tasks, completions, *, mode, rule):  # type: ignore[no-untyped-def]
        return [rule.score(t, c).reward for t, c in zip(tasks, completions, strict=True)]

    def no_parts(tasks, completions, *, mode, rule):  # type: ignore[no-untyped-def]
        plain = RewardRule(on_error=rule.on_error)
        return [plain.score(t, c).reward for t, c in zip(tasks, completions, strict=True)]

    doc = {"schema": "crossgym-compat/1", "crossgym_version": "0", "runs": [], "verifiers": {}, "environments": {},
           "matrix": {}, "backends": {
               b: {"status": "installed", "blend": {k: r.to_dict() for k, r in check_blend_parity(_driver(fn), b).items()}}
               for b, fn in (("trl", faithful), ("verl", no_parts))}}
    doc["summary"] = summarize(doc)
    assert blend_rows(doc) == (["parity_blend:single_turn", "parity_blend:multi_turn"], ["trl", "verl"])
    page = render_html(doc)
    assert "<h2>Blends" in page and "<th>parity_blend:multi_turn</th>" in page
    assert f"pass (14 samples over {len(BLEND_PARTS)} parts)" in page and "fail (14 samples" in page
