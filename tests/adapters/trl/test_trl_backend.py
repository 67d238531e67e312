"""TRLBackend: real GRPO steps on the tiny model; the rewards TRL saw equal crossgym's Verdicts; outputs; Ctrl-C."""

from __future__ import annotations

import json
import math
import threading

import pytest
from trl_test_plugins import digit_tasks

from crossgym.api import load_tasks, load_verifier
from crossgym.config import parse_run_config
from crossgym.protocol import Message, Task, VerifierSpec
from crossgym.scoring import extra_task, reward_from_verdict, safe_verify

pytest.importorskip("trl")

SHORT = {"name": "test_short", "params": {"limit": 16}, "weight": 0.5}


def _run(model, out, **over):
    data = {"model": str(model), "tasks": {"source": "json_addition"}, "output_dir": str(out), "seed": 0,
            "grpo": {"num_generations": 4, "per_device_train_batch_size": 8, "max_completion_length": 12,
                     "max_steps": 2, "learning_rate": 1e-3, "temperature": 1.0}}
    for k, v in over.items():
        data[k] = data[k] | v if isinstance(v, dict) and isinstance(data.get(k), dict) else v
    return parse_run_config(data)


def _mixed_tasks():
    """json_addition (json_answer) + digit tasks (test_contains) incl. a forced timeout and a raising verifier: four
    tasks, so two steps of two prompts see each once."""
    tasks = list(load_tasks("json_addition", n=1, seed=1))
    digits = digit_tasks(3)
    digits[1] = Task(id="forced-timeout", prompt=digits[1].prompt, answer=digits[1].answer,
                     verifier=digits[1].verifier, metadata={"verdict": "timeout"})
    digits[2] = Task(id="forced-raise", prompt=digits[2].prompt, answer=digits[2].answer,
                     verifier=digits[2].verifier, metadata={"verdict": "raise"})
    return tasks + digits


def _log_keeper(store: list):
    """A TrainerCallback keeping every step log dict TRL emits."""
    from transformers import TrainerCallback

    class Keep(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "reward" in logs:
                store.append(dict(logs))

    return Keep()


def test_single_turn_rewards_trl_saw_equal_verdicts(tiny_model_dir, tmp_path, test_plugin):
    from crossgym.adapters.trl.backend import TRLBackend

    run = _run(tiny_model_dir, tmp_path / "out", on_error="none", verifiers=[SHORT])
    backend = TRLBackend()
    seen = []  # one entry per (reward function, batch)
    trl_logs: list = []
    trainer = backend.build_trainer(run, tasks=_mixed_tasks(), callbacks=[_log_keeper(trl_logs)])
    for fn in backend.reward_funcs:
        fn.observers.append(lambda tasks, comps, verdicts, rewards, fn=fn: seen.append((fn, tasks, comps, rewards)))
    trainer.train()

    names = [f.__name__ for f in backend.reward_funcs]
    assert names == ["json_answer", "test_contains", "extra/test_short"]
    assert len(trl_logs) == 2 and len(seen) == 2 * len(names)
    for fn, tasks, comps, rewards in seen:
        assert len(rewards) == 8
        for task, comp, reward in zip(tasks, comps, rewards, strict=True):
            if fn.only is not None and task.verifier.name != fn.only:
                assert reward is None  # masked: another task verifier scores this row
                continue
            judged = task if fn.spec is None else extra_task(task, fn.spec)  # extras see no answer
            verdict = safe_verify(load_verifier(judged.verifier), judged, comp)  # a fresh verdict
            assert reward == reward_from_verdict(verdict, "none"), (fn.name, task.id, comp.text)
    # what TRL logged per reward function is the NaN-aware mean of exactly what we returned
    for step, logs in enumerate(trl_logs):
        batch = {fn.name: rewards for fn, _, _, rewards in seen[step * 3:(step + 1) * 3]}
        for name, rewards in batch.items():
            values = [r for r in rewards if r is not None]
            logged = logs[f"rewards/{name}/mean"]
            if values:
                assert logged == pytest.approx(sum(values) / len(values), abs=1e-6)
            else:  # TRL logs the mean of an all-NaN column as NaN (None once serialised)
                assert logged is None or math.isnan(logged)
    # timeouts and raising verifiers became None (on_error "none"), so TRL masked them
    forced = [r for fn, tasks, _, rewards in seen if fn.name == "test_contains"
              for t, r in zip(tasks, rewards, strict=True) if t.id.startswith("forced")]
    assert len(forced) == 8 and all(r is None for r in forced)
    assert len({r for fn, _, _, rewards in seen if fn.name == "extra/test_short" for r in rewards}) > 1  # varied rewards


def test_train_writes_outputs_and_the_checkpoint_loads(tiny_model_dir, tmp_path, test_plugin):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from crossgym.adapters.trl.backend import TRLBackend

    out = tmp_path / "out"
    steps = []
    result = TRLBackend().train(_run(tiny_model_dir, out, verifiers=[SHORT], grpo={"lora": {"r": 4, "alpha": 8}}),
                                tasks=digit_tasks(8), progress=lambda s, m, logs: steps.append((s, m)))
    assert result.steps == 2 and result.checkpoint == str(out / "final")
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "reward" in r] == [1, 2]
    assert all("rewards/test_contains/mean" in r and "rewards/extra/test_short/mean" in r for r in rows if "reward" in r)
    assert (out / "reward_curve.png").read_bytes()[:4] == b"\x89PNG"
    assert steps[-1] == (2, 2)
    records = [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines()]
    assert len(records) == 16 and records[0]["provenance"]["verifier"]["name"] == "test_contains"
    assert {r["provenance"]["backend"] for r in records} == {"trl"} and records[-1]["provenance"]["step"] == 1
    assert {r["provenance"]["schema"] for r in records} == {2}
    from crossgym.cli import main

    with pytest.raises(SystemExit) as exc:  # README's `crossgym reverify <train>/rollouts.jsonl` on a real run
        main(["reverify", str(out / "rollouts.jsonl")])
    assert exc.value.code == 0
    assert (out / "final" / "adapter_config.json").is_file()  # LoRA: the adapter is the checkpoint
    from peft import AutoPeftModelForCausalLM

    model = AutoPeftModelForCausalLM.from_pretrained(out / "final")
    tok = AutoTokenizer.from_pretrained(out / "final")
    ids = tok.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True,
                                  return_tensors="pt", return_dict=True)
    assert model.generate(**ids, max_new_tokens=3, do_sample=False).shape[1] > ids["input_ids"].shape[1]
    assert AutoModelForCausalLM  # full checkpoints load with it (see the stop test)


@pytest.mark.parametrize("how", ["stop_event", "keyboard_interrupt"])
def test_ctrl_c_leaves_a_usable_checkpoint(tiny_model_dir, tmp_path, test_plugin, how):
    from transformers import AutoModelForCausalLM, TrainerCallback

    from crossgym.adapters.trl.backend import TRLBackend

    stop = threading.Event()

    class CtrlC(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            if how == "stop_event" and state.global_step == 0:
                stop.set()  # what the CLI's first Ctrl-C does mid-step: training ends after this step

        def on_step_end(self, args, state, control, **kw):
            if how == "keyboard_interrupt" and state.global_step == 1:
                raise KeyboardInterrupt  # a second Ctrl-C, or Ctrl-C in a notebook

    out = tmp_path / how
    run = _run(tiny_model_dir, out, grpo={"max_steps": 50})
    result = TRLBackend().train(run, tasks=digit_tasks(8), stop=stop, callbacks=[CtrlC()])
    assert result.steps == 1
    assert result.metrics["interrupted" if how == "keyboard_interrupt" else "stopped_early"] is True
    info = json.loads((out / "final" / "crossgym_run.json").read_text())
    assert info["interrupted"] is True and info["steps"] == 1
    model = AutoModelForCausalLM.from_pretrained(out / "final")
    assert sum(p.numel() for p in model.parameters()) > 1_000_000


def test_reward_function_for_one_spec(test_plugin):
    from crossgym.adapters.trl.backend import TRLBackend

    fn = TRLBackend().reward_function(VerifierSpec("test_short", {"limit": 4}))
    task = Task(id="t", prompt=[Message("user", "x")], answer=None, verifier=VerifierSpec("test_contains"))
    assert fn.__name__ == "test_short"
    assert fn(completions=["ab", "abcdef"], task=[task.to_json()] * 2) == [0.5, 0.0]


def test_bad_model_path_is_one_config_error(tmp_path, test_plugin):
    from crossgym.adapters.trl.backend import TRLBackend
    from crossgym.protocol import ConfigError

    with pytest.raises(ConfigError, match="TRL could not start"):
        TRLBackend().build_trainer(_run(tmp_path / "no-such-model", tmp_path / "o"), tasks=digit_tasks(4))
