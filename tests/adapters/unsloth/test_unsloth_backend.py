"""UnslothBackend on Unsloth's CPU backend (tests marked needs_unsloth run in the `unsloth` nox venv): real LoRA
GRPO steps on the tiny model through FastLanguageModel, single- and multi-turn; the rewards the trainer saw equal
crossgym's Verdicts (so the TRL backend's, which the TRL tests hold to the same); outputs and the LoRA checkpoint;
plan; GPU-only options on CPU as one line."""

from __future__ import annotations

import json
import math

import pytest
from unsloth_helpers import make_run

from crossgym.api import get_backend, load_tasks, load_verifier
from crossgym.protocol import ConfigError
from crossgym.scoring import extra_task, reward_from_verdict, safe_verify

needs_unsloth = pytest.mark.usefixtures("needs_unsloth")

LENGTH = {"name": "length", "params": {"max": 4, "unit": "chars", "mode": "linear", "slack": 2.0}, "weight": 0.5}


def _log_keeper(store: list):
    from transformers import TrainerCallback

    class Keep(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "reward" in logs:
                store.append(dict(logs))

    return Keep()


def _lora_b(model) -> dict[str, object]:
    return {n: p.detach().clone() for n, p in model.named_parameters() if "lora_B" in n}


@needs_unsloth
def test_single_turn_lora_grpo_steps_rewards_equal_verdicts(tiny_model_dir, tmp_path):
    from peft import PeftModel

    backend = get_backend("unsloth")
    run = make_run(tiny_model_dir, tmp_path / "out", verifiers=[LENGTH], on_error="none")
    logs: list = []
    trainer = backend.build_trainer(run, tasks=list(load_tasks("json_addition", n=4, seed=3)),
                                    callbacks=[_log_keeper(logs)])
    model = trainer.model
    # Unsloth's loader and LoRA: a PeftModel with its CPU helpers attached, r=4 adapters on the projections
    assert isinstance(model, PeftModel) and hasattr(model, "for_inference")
    assert model.peft_config["default"].r == 4
    assert {"q_proj", "v_proj", "down_proj"} <= set(model.peft_config["default"].target_modules)
    assert backend.settings.from_pretrained["load_in_4bit"] is False
    before = _lora_b(model)
    assert before and all(float(t.abs().sum()) == 0.0 for t in before.values())  # LoRA B starts at zero
    seen = []
    for fn in backend.reward_funcs:
        fn.observers.append(lambda tasks, comps, verdicts, rewards, fn=fn: seen.append((fn, tasks, comps, rewards)))
    trainer.train()

    assert trainer.state.global_step == 2 and len(logs) == 2
    after = _lora_b(trainer.model)
    assert any(float((after[n] - before[n]).abs().sum()) > 0 for n in before)  # the adapters were trained
    assert [f.__name__ for f in backend.reward_funcs] == ["json_answer", "extra/length"]
    assert len(seen) == 4
    for fn, tasks, comps, rewards in seen:
        assert len(rewards) == 8
        for task, comp, reward in zip(tasks, comps, rewards, strict=True):
            judged = task if fn.spec is None else extra_task(task, fn.spec)
            verdict = safe_verify(load_verifier(fn.spec or task.verifier), judged, comp)  # a fresh verdict
            assert reward == reward_from_verdict(verdict, "none"), (fn.name, task.id, comp.text)
    for step, log in enumerate(logs):  # what TRL logged is the mean of exactly what the functions returned
        for fn, _, _, rewards in seen[step * 2:(step + 1) * 2]:
            values = [r for r in rewards if r is not None]
            logged = log[f"rewards/{fn.name}/mean"]
            assert (logged == pytest.approx(sum(values) / len(values), abs=1e-6) if values
                    else logged is None or math.isnan(logged))
    assert len({r for fn, _, _, rewards in seen if fn.name == "extra/length" for r in rewards}) > 1  # varied rewards


@needs_unsloth
def test_train_writes_outputs_and_the_lora_checkpoint_loads(tiny_model_dir, tmp_path):
    from peft import AutoPeftModelForCausalLM
    from transformers import AutoTokenizer

    out = tmp_path / "out"
    steps = []
    result = get_backend("unsloth").train(make_run(tiny_model_dir, out), progress=lambda s, m, logs: steps.append(s))
    assert result.steps == 2 and result.checkpoint == str(out / "final") and steps[-1] == 2
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "reward" in r] == [1, 2]
    assert (out / "reward_curve.png").read_bytes()[:4] == b"\x89PNG"
    assert len((out / "rollouts.jsonl").read_text().splitlines()) == 16
    info = json.loads((out / "final" / "crossgym_run.json").read_text())
    assert info["backend"] == "unsloth" and info["config"]["grpo"]["lora"]["r"] == 4
    adapter = json.loads((out / "final" / "adapter_config.json").read_text())
    assert adapter["r"] == 4 and adapter["lora_alpha"] == 8
    model = AutoPeftModelForCausalLM.from_pretrained(out / "final")
    tok = AutoTokenizer.from_pretrained(out / "final")
    ids = tok.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True,
                                  return_tensors="pt", return_dict=True)
    assert model.generate(**ids, max_new_tokens=3, do_sample=False).shape[1] > ids["input_ids"].shape[1]


@needs_unsloth
def test_fast_inference_on_cpu_is_one_line_before_any_model_loads(tiny_model_dir, tmp_path):
    backend = get_backend("unsloth")
    with pytest.raises(ConfigError) as err:
        backend.train(make_run(tiny_model_dir, tmp_path / "o", engine="vllm"))
    assert "needs a GPU" in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "o" / "final").exists()


@needs_unsloth
def test_load_in_4bit_on_cpu_runs_qlora_or_says_why_not_in_one_line(tiny_model_dir, tmp_path):
    from unsloth_zoo.cpu.runtime import cpu_bnb_4bit_supported

    backend = get_backend("unsloth")
    run = make_run(tiny_model_dir, tmp_path / "o", backend_args={"load_in_4bit": True})
    if not cpu_bnb_4bit_supported():
        with pytest.raises(ConfigError, match="load_in_4bit needs a GPU here"):
            backend.build_trainer(run, tasks=list(load_tasks("json_addition", n=2)))
        return
    trainer = backend.build_trainer(run, tasks=list(load_tasks("json_addition", n=2)))
    kinds = {type(m).__name__ for m in trainer.model.modules()}
    assert "Linear4bit" in kinds  # bitsandbytes NF4 base weights under the LoRA adapters


@needs_unsloth
def test_plan_shows_unsloth_settings_and_an_equivalent_script(tiny_model_dir, tmp_path):
    run = make_run(tiny_model_dir, tmp_path / "o", backend_args={"max_seq_length": 512, "top_k": 5})
    plan = get_backend("unsloth").plan(run)
    native = plan.native_config
    assert native["FastLanguageModel.from_pretrained"]["max_seq_length"] == 512
    assert native["FastLanguageModel.get_peft_model"]["r"] == 4
    assert native["GRPOConfig"]["top_k"] == 5 and "max_seq_length" not in native["GRPOConfig"]
    assert native["GRPOTrainer"]["peft_config"] is None  # the adapters come from get_peft_model
    script = plan.files["train_unsloth.py"]
    compile(script, "train_unsloth.py", "exec")
    assert script.index("import unsloth") < script.index("from trl import")
    assert "GRPOTrainer(model=model, processing_class=tokenizer" in script and "LoraConfig" not in script
    from crossgym.adapters.unsloth.parity import validate_plan

    validate_plan(plan)  # TRL parses the GRPOConfig; Unsloth names every loader and LoRA argument


@needs_unsloth
def test_multi_turn_tool_episodes_lora_grpo_steps_rewards_equal_verdicts(tiny_model_dir, tmp_path):
    from unsloth_helpers import add_tasks, tool_call_bias

    backend = get_backend("unsloth")
    run = make_run(tiny_model_dir, tmp_path / "out", environment={"max_turns": 3},
                   verifiers=[{"name": "length", "weight": 0.5,
                               "params": {"max": 16, "unit": "chars", "mode": "linear", "slack": 4.0}}],
                   grpo={"num_generations": 2, "per_device_train_batch_size": 4, "max_completion_length": 300},
                   backend_args={"generation_kwargs": tool_call_bias()})
    tasks = add_tasks(4)
    trainer = backend.build_trainer(run, tasks=tasks)
    assert backend.rollout_func is not None  # the TRL backend's environment bridge, on Unsloth's model
    seen = []
    for fn in backend.reward_funcs:
        fn.observers.append(lambda t, c, v, r, fn=fn: seen.append((fn, t, c, r)))
    trainer.train()

    assert trainer.state.global_step == 2 and len(seen) == 4
    turns, tool_msgs = [], 0
    for fn, batch_tasks, comps, rewards in seen:
        for task, comp, reward in zip(batch_tasks, comps, rewards, strict=True):
            judged = task if fn.spec is None else extra_task(task, fn.spec)
            verdict = safe_verify(load_verifier(fn.spec or task.verifier), judged, comp)
            assert reward == reward_from_verdict(verdict, run.on_error)
            turns.append(len(comp.assistant_messages))
            tool_msgs += sum(m.role == "tool" for m in comp.messages)
    assert max(turns) >= 2 and tool_msgs > 0  # real multi-turn episodes with tool results


@needs_unsloth
def test_bad_model_path_is_one_config_error(tmp_path):
    with pytest.raises(ConfigError, match="Unsloth could not load the model") as err:
        get_backend("unsloth").build_trainer(make_run(tmp_path / "no-such-model", tmp_path / "o"),
                                             tasks=list(load_tasks("json_addition", n=2)))
    assert err.value.where == "model"


def test_plan_needs_no_unsloth_and_plans_vllm_for_a_gpu(tmp_path):
    pytest.importorskip("trl")
    from crossgym.adapters.unsloth.backend import UnslothBackend

    run = make_run(tmp_path / "model", tmp_path / "o", engine="vllm", grpo={"lora": None})
    plan = UnslothBackend().plan(run)  # pure: no model loads, works where unsloth is not installed
    fp = plan.native_config["FastLanguageModel.from_pretrained"]
    assert fp["fast_inference"] is True and fp["gpu_memory_utilization"] == 0.5
    assert fp["use_gradient_checkpointing"] == "unsloth" and fp["max_lora_rank"] == 16
    assert plan.native_config["GRPOConfig"]["use_vllm"] is True
    assert any("grpo.lora is unset" in n for n in plan.notes)
    compile(plan.files["train_unsloth.py"], "train_unsloth.py", "exec")


@needs_unsloth
def test_cli_train_imports_unsloth_before_the_gate_loads_transformers(tiny_model_dir, tmp_path):
    """`crossgym train --backend unsloth` runs the eval gate (transformers) and then Unsloth: Unsloth must come first,
    or it warns that its patches may not apply. A fresh process, so nothing is imported beforehand."""
    import os
    import subprocess
    import sys

    import yaml

    from crossgym.protocol import Message, Task, VerifierSpec

    spec = VerifierSpec("length", {"max": 6, "unit": "chars", "mode": "linear", "slack": 1.0})
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(Task(id=f"s{i}", prompt=[Message("user", f"Say hi to {i}.")], answer=None,
                                  verifier=spec).to_json() + "\n" for i in range(8)), encoding="utf-8")
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({
        "model": str(tiny_model_dir), "tasks": {"files": [str(tasks)]}, "output_dir": str(tmp_path / "out"),
        "seed": 0, "backend": "unsloth",
        "grpo": {"num_generations": 2, "per_device_train_batch_size": 4, "max_completion_length": 8, "max_steps": 1,
                 "learning_rate": 1e-3, "lora": {"r": 4, "alpha": 8}}}), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "crossgym.cli", "train", str(cfg)], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "gate passed" in proc.stderr and "trained 1 steps" in proc.stdout
    assert "should be imported before" not in proc.stdout + proc.stderr


@needs_unsloth
def test_the_unsloth_trainer_computes_the_reference_advantages():
    """Unsloth's GRPOTrainer (TRL under Unsloth's pins) gives the advantages of the compat reference for TRL."""
    from crossgym.adapters.unsloth import parity
    from crossgym.compat_tests.advantages import SEMANTICS, close, reference

    groups = [[1.0, 0.0, 0.0, 1.0], [0.5, 0.5, 0.5, 0.5], [2.0, None, 0.0, 1.0]]
    for variant in ("grpo", "dr_grpo", "cispo"):
        got = parity.advantages(groups, variant)
        want = reference(groups, variant, SEMANTICS["unsloth"])
        assert all(close(w, g) for gw, gg in zip(want, got, strict=True) for w, g in zip(gw, gg, strict=True))
    from crossgym.compat_tests.advantages import MULTI_CASES, reference_aggregated

    case = MULTI_CASES[0]
    got = parity.aggregated_advantages(case.groups, case.weights)
    want = reference_aggregated(case.groups, case.weights, SEMANTICS["unsloth"])
    assert all(close(w, g) for gw, gg in zip(want, got, strict=True) for w, g in zip(gw, gg, strict=True))
