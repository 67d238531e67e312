"""parity.native_rewards (what the compat suite calls inside the verl venv) gives crossgym's rewards for every
cheap verifier's own examples, Unicode and whole episodes included."""

from __future__ import annotations

import pytest

pytest.importorskip("verl")
pytestmark = pytest.mark.filterwarnings("ignore:Disabled critic")

from crossgym.adapters.verl.parity import byte_tokenizer, native_rewards  # noqa: E402
from crossgym.api import load_verifier, verify  # noqa: E402
from crossgym.protocol.task import Completion, Task, VerifierSpec  # noqa: E402
from crossgym.scoring import reward_from_verdict  # noqa: E402

#: Verifiers whose examples run without services or a sandbox (those have their own suites).
CHEAP = ("exact_match", "numeric", "math", "multiple_choice", "regex", "format_tags", "json_valid", "json_schema",
         "json_match", "string_similarity", "tool_call", "instructions", "length", "xml_valid", "yaml_valid",
         "json_answer")


def test_native_rewards_equal_crossgyms_for_every_example() -> None:
    tasks, comps = [], []
    for name in CHEAP:
        for ex in load_verifier(name).examples():
            tasks.append(ex.task)
            comps.append(ex.completion)
    unicode_task = Task(id="u", prompt=[{"role": "user", "content": "Name it"}], answer="café 🙂",
                        verifier=VerifierSpec("exact_match"))
    tasks += [unicode_task, unicode_task]
    comps += [Completion.from_text("café 🙂"), Completion.from_text("cafe")]
    got = native_rewards(tasks, comps)
    want = [reward_from_verdict(verify(t, c), 0.0) for t, c in zip(tasks, comps, strict=True)]
    assert got == want
    assert got[-2:] == [1.0, 0.0]
    assert len(got) >= 3 * len(CHEAP)


def test_byte_tokenizer_is_lossless() -> None:
    tok = byte_tokenizer()
    for text in ("plain", "café 🙂 ∑ 日本", "tabs\tand\nnewlines", " leading space", "<answer>42</answer>"):
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert tok.decode(ids, skip_special_tokens=True) == text


def test_on_error_reaches_the_native_side() -> None:
    task = Task(id="x", prompt=[{"role": "user", "content": "?"}], answer=1,
                verifier=VerifierSpec("numeric", {"bogus": True}))
    assert native_rewards([task], ["1"], on_error=-2.0) == [-2.0]


def test_multi_turn_mode_scores_through_the_agent_loop() -> None:
    task = Task(id="t", prompt=[{"role": "user", "content": "weather?"}], answer="sunny",
                verifier=VerifierSpec("exact_match"))
    episode = Completion(messages=[{"role": "assistant", "content": "<tool_call>{}</tool_call>"},
                                   {"role": "tool", "content": "sunny"}, {"role": "assistant", "content": "sunny"}])
    single = Completion.from_text("cloudy")
    assert native_rewards([task, task], [episode, single], mode="multi_turn") == [1.0, 0.0]
    with pytest.raises(ValueError, match="mode"):
        native_rewards([task], [single], mode="batch")


def test_special_token_spellings_and_long_text_reach_the_verifier_as_text() -> None:
    task = Task(id="s", prompt=[{"role": "user", "content": "echo"}], answer="a <|im_end|> b",
                verifier=VerifierSpec("exact_match"))
    long = Task(id="l", prompt=[{"role": "user", "content": "long"}], answer="x" * 200_000,
                verifier=VerifierSpec("exact_match"))
    assert native_rewards([task, long], ["a <|im_end|> b", "x" * 200_000]) == [1.0, 1.0]


def test_validate_plan_runs_verls_own_checks(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from crossgym.adapters.verl.backend import VerlBackend
    from crossgym.adapters.verl.parity import validate_plan
    from crossgym.config import RunConfig

    def plan(**grpo):  # type: ignore[no-untyped-def]
        run = RunConfig.model_validate({"model": "m", "tasks": {"source": "arithmetic", "params": {"n": 8}},
                                        "output_dir": str(tmp_path), "grpo": {"num_generations": 4, **grpo}})
        return VerlBackend().plan(run)

    validate_plan(plan(variant="gspo"))
    bad = plan()
    bad = type(bad)(backend=bad.backend, native_config=bad.native_config, files=bad.files,
                    argv=(*bad.argv, "actor_rollout_ref.actor.loss_agg_mode=median"))
    with pytest.raises(Exception, match="median"):
        validate_plan(bad)


def test_validate_plan_with_lora_where_vllm_is_not_installed(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from crossgym.adapters.verl.backend import VerlBackend
    from crossgym.adapters.verl.parity import validate_plan
    from crossgym.config import RunConfig

    def plan(r: int):  # type: ignore[no-untyped-def]
        run = RunConfig.model_validate({"model": "m", "tasks": {"source": "arithmetic", "params": {"n": 8}},
                                        "output_dir": str(tmp_path), "engine": "vllm",
                                        "grpo": {"num_generations": 4, "lora": {"r": r}}})
        return VerlBackend().plan(run)

    validate_plan(plan(16))
    with pytest.raises(ValueError, match="lora_rank"):
        validate_plan(plan(1024))
    assert capsys.readouterr().out == ""  # veRL's prints go to stderr: compat --json keeps stdout clean
