"""The reasoning-gym bridge: any dataset, offline, as tasks scored by its own score_answer."""

from __future__ import annotations

import pytest

pytest.importorskip("reasoning_gym")

import crossgym  # noqa: E402
from crossgym.environments.sources.reasoning_gym import dataset_names  # noqa: E402
from crossgym.protocol.errors import ConfigError  # noqa: E402
from crossgym.protocol.task import Completion, Task  # noqa: E402
from crossgym.verifiers.reasoning_gym import ReasoningGym, dataset_for  # noqa: E402


def test_many_datasets_bridge_and_score_their_own_answers() -> None:
    names = dataset_names()
    assert len(names) >= 100
    v = ReasoningGym()
    checked = 0
    for name in ("basic_arithmetic", "chain_sum", "caesar_cipher", "base_conversion", "gcd", "word_sorting",
                 "letter_counting", "number_sorting", "spell_backward", "family_relationships"):
        tasks = crossgym.load_tasks("reasoning_gym", dataset=name, n=2, seed=1)
        for t in tasks:
            assert Task.from_json(t.to_json()) == t
            meta = t.metadata["reasoning_gym"]
            entry = dataset_for(name, meta["config"])[meta["index"]]
            assert t.prompt[-1].content == entry["question"]
            got = v.run_score(t, Completion.from_text(f"<answer>{entry['answer']}</answer>"), 30)
            assert got.reward == 1.0, (name, got)
            checked += 1
    assert checked == 20


def test_config_seed_start_and_system_prompt() -> None:
    a = crossgym.load_tasks("reasoning_gym", dataset="chain_sum", n=3, seed=2, config={"min_terms": 4, "max_terms": 4})
    assert all(t.metadata["reasoning_gym"]["entry"]["metadata"]["num_terms"] == 4 for t in a)
    b = crossgym.load_tasks("reasoning_gym", dataset="chain_sum", n=1, seed=2, start=2,
                            config={"min_terms": 4, "max_terms": 4})
    assert b[0].prompt == a[2].prompt
    plain = crossgym.load_tasks("reasoning_gym", dataset="chain_sum", n=1, system_prompt=None)
    assert [m.role for m in plain[0].prompt] == ["user"]
    custom = crossgym.load_tasks("reasoning_gym", dataset="chain_sum", n=1, system_prompt="direct")
    assert "Do not return any preamble" in custom[0].prompt[0].content
    marker = crossgym.load_tasks("reasoning_gym", dataset="chain_sum", n=1, extract="marker")
    assert marker[0].verifier.params == {"extract": "marker"}


def test_errors() -> None:
    with pytest.raises(ConfigError, match="did you mean 'chain_sum'"):
        crossgym.load_tasks("reasoning_gym", dataset="chain_sums", n=1)
    with pytest.raises(ConfigError, match="cannot build 'chain_sum'"):
        crossgym.load_tasks("reasoning_gym", dataset="chain_sum", n=1, config={"no_such_knob": 1})
