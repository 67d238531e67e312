"""Helpers for the Unsloth backend tests (a module of its own: conftest modules are not importable by name)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crossgym.config import RunConfig, parse_run_config


def make_run(model: Path | str, out: Path, **over: Any) -> RunConfig:
    """A small Unsloth RunConfig: json_addition tasks, LoRA r=4, two steps of two GRPO groups of four."""
    data: dict[str, Any] = {"model": str(model), "tasks": {"source": "json_addition"}, "output_dir": str(out),
                            "seed": 0, "backend": "unsloth",
                            "grpo": {"num_generations": 4, "per_device_train_batch_size": 8,
                                     "max_completion_length": 12, "max_steps": 2, "learning_rate": 1e-3,
                                     "lora": {"r": 4, "alpha": 8}}}
    for k, v in over.items():
        data[k] = data[k] | v if isinstance(v, dict) and isinstance(data.get(k), dict) else v
    return parse_run_config(data)


def add_tasks(n: int = 4) -> list[Any]:
    """tool_use tasks with the `add` tool (scored by numeric on the whole episode)."""
    from crossgym.environments import toolsets
    from crossgym.environments.tools import tool_spec
    from crossgym.protocol import Message, Task, VerifierSpec

    spec = tool_spec(toolsets.add)
    return [Task(id=f"add-{i}", prompt=[Message("user", f"What is {i}+3? Call add, then reply with the number.")],
                 answer=i + 3, verifier=VerifierSpec("numeric"), env="tool_use", tools=(spec,),
                 metadata={"tool_refs": ["crossgym.environments.toolsets:add"]}) for i in range(n)]


def tool_call_bias() -> dict[str, Any]:
    """GRPOConfig.generation_kwargs making the untrained tiny model write `<tool_call>` then end its turn, so the
    real tool_use environment answers (an unreadable-call error) and episodes run several turns."""
    from crossgym.inference.tiny import SPECIAL_TOKENS

    tool_call, eos = SPECIAL_TOKENS.index("<tool_call>"), SPECIAL_TOKENS.index("<|im_end|>")
    return {"sequence_bias": [[[tool_call], 5.0], [[tool_call, eos], 30.0]]}
