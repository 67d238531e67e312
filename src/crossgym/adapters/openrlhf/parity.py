"""Rewards as OpenRLHF itself computes them, for the compat suite (run inside the openrlhf venv; no GPU, no vLLM).

Each (task, completion) goes through OpenRLHF's own code path: the prompt is built by OpenRLHF's
``preprocess_data`` (chat template applied, as PromptDataset does), then OpenRLHF's ``SingleTurnAgentExecutor``
loads the generated reward file and scores the replayed completion, or, for tasks that need an environment,
OpenRLHF's ``MultiTurnAgentExecutor`` runs the generated agent file. Only the engine is replaced: a replay engine
returns the completion's assistant turns as token ids. The tokenizer is byte-level, so any text round-trips.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import tempfile
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crossgym.adapters.kit.replay import action_text, qwen_byte_tokenizer
from crossgym.adapters.openrlhf import files
from crossgym.adapters.openrlhf.agent import AgentConfig
from crossgym.adapters.openrlhf.convert import INPUT_KEY, LABEL_KEY, task_row
from crossgym.adapters.openrlhf.scoring import ScoreConfig
from crossgym.protocol.task import Completion, Task
from crossgym.scoring import RewardRule

EOS = "<|im_end|>"
PAD = "<|endoftext|>"
SPECIAL_TOKENS = [PAD, "<|im_start|>", EOS, "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
                  "<think>", "</think>"]


#: the kit's lossless byte-level tokenizer with Qwen2.5's special tokens and chat template
byte_tokenizer = qwen_byte_tokenizer


class ReplayEngine:
    """Stands in for OpenRLHF's vLLM engine: each generate() returns the next scripted turn, ending in EOS."""

    def __init__(self, tokenizer: Any, turns: Sequence[str]) -> None:
        self.tok = tokenizer
        self.turns = list(turns)
        self.calls: list[list[int]] = []

    async def generate(self, prompt_ids: Any, sampling_params: Any, multi_modal_data: Any = None) -> Any:
        self.calls.append(list(prompt_ids))
        text = self.turns.pop(0) if self.turns else ""
        ids = list(self.tok(text, add_special_tokens=False)["input_ids"]) + [self.tok.eos_token_id]
        limit = getattr(sampling_params, "max_tokens", None)
        finish = "stop"
        if limit is not None and len(ids) > limit:
            ids, finish = ids[:limit], "length"
        out = types.SimpleNamespace(token_ids=ids, text=self.tok.decode(ids, skip_special_tokens=False),
                                    finish_reason=finish, logprobs=None)
        return types.SimpleNamespace(outputs=[out])


class SamplingParams:
    """The two attributes OpenRLHF's executors read from vLLM's SamplingParams."""

    def __init__(self, max_tokens: int | None = None) -> None:
        self.max_tokens = max_tokens
        self.logprobs = None


def needs_agent(task: Task) -> bool:
    return task.env != "single_turn" or bool(task.tools) or any(m.tool_calls or m.role == "tool"
                                                                  for m in task.prompt)


def load_module(path: Path, name: str) -> Any:
    """Load a generated file the way OpenRLHF does (importlib spec from the file location)."""
    spec = importlib.util.spec_from_file_location(name, str(path))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def native_prompt(task: Task, tokenizer: Any) -> tuple[str, Any]:
    """(prompt, label) as OpenRLHF's PromptDataset builds them from our dataset row (its preprocess_data)."""
    from openrlhf.datasets.prompts_dataset import preprocess_data

    prompt, label = preprocess_data(task_row(task), None, INPUT_KEY, LABEL_KEY, tokenizer.apply_chat_template)
    return str(prompt), label


def native_rewards(tasks: Sequence[Task], completions: Sequence[Completion | str], *,
                   on_error: float = 0.0, max_length: int = 8192, rule: RewardRule | None = None,
                   rollouts: str | Path | None = None, remote_url: str | None = None) -> list[float | None]:
    """Each completion's reward through OpenRLHF's own executors; None where OpenRLHF gives no reward.

    ``rule``: the reward rule the generated files bind (default: each task's verifier, errors scoring on_error);
    ``rollouts``: the files record the scored rollouts there, as in training; ``remote_url``: single-turn samples
    are scored by that ``--reward.remote_url`` (a `crossgym serve` /openrlhf/reward route) instead of the file."""
    from openrlhf.utils.agent import SingleTurnAgentExecutor

    if len(tasks) != len(completions):
        raise ValueError(f"{len(tasks)} tasks but {len(completions)} completions")
    tok = byte_tokenizer()
    score = ScoreConfig(rule=rule or RewardRule(on_error=on_error), strip_tokens=(EOS, PAD),
                        rollouts=None if rollouts is None else str(rollouts))
    with tempfile.TemporaryDirectory(prefix="crossgym-openrlhf-") as tmp:
        reward_path = Path(tmp) / "reward.py"
        reward_path.write_text(files.reward_file(score.to_dict()), encoding="utf-8")
        agent_path = Path(tmp) / "agent.py"
        agent_path.write_text(files.agent_file(AgentConfig(score=score).to_dict()), encoding="utf-8")
        single = SingleTurnAgentExecutor(remote_url or str(reward_path))
        agent_cls = None

        async def one(task: Task, completion: Completion | str) -> float | None:
            nonlocal agent_cls
            comp = Completion.from_text(completion) if isinstance(completion, str) else completion
            prompt, label = native_prompt(task, tok)
            if needs_agent(task):
                if agent_cls is None:
                    agent_cls = load_module(agent_path, "agent_module").AgentExecutor
                turns = [action_text(m) for m in comp.assistant_messages] or [""]
                out = await agent_cls().execute(prompt, label, SamplingParams(), max_length, tok,
                                                ReplayEngine(tok, turns))
            else:
                out = await single.execute(prompt, label, SamplingParams(), max_length, tok,
                                           ReplayEngine(tok, [comp.text]))
            reward = out.get("reward")
            if reward is None:
                return None
            if hasattr(reward, "flatten"):
                return float(reward.flatten()[0].item())
            return float(reward[0]) if isinstance(reward, (list, tuple)) else float(reward)  # a remote reply

        async def run_all() -> list[float | None]:
            return [await one(t, c) for t, c in zip(tasks, completions, strict=True)]

        return asyncio.run(run_all())


def record_rollouts(tasks: Sequence[Task], completions: Sequence[Completion | str], path: str | Path) -> None:
    """Score the samples through OpenRLHF's executors with the generated files recording rollouts to ``path``, as
    they do in training (for the compat suite's records check)."""
    native_rewards(tasks, completions, rollouts=path)


def route_rewards(tasks: Sequence[Task], completions: Sequence[Completion | str], url: str, rule: RewardRule
                  ) -> list[float | None]:
    """The rewards OpenRLHF's own remote-reward client gets from `crossgym serve` at ``url`` (its /openrlhf/reward
    route, serving ``rule``), through the same executor as the file."""
    return native_rewards(tasks, completions, rule=rule, remote_url=f"{url.rstrip('/')}/openrlhf/reward")


def validate_plan(plan: Any) -> None:
    """OpenRLHF's own argument parser and checks (train_ppo_ray's main block, ``native_cli.parse_native``) must accept
    the plan's command line; a refusal raises ConfigError with OpenRLHF's message (the compat suite's plans check)."""
    from crossgym.adapters.openrlhf import config_map
    from crossgym.adapters.openrlhf.native_cli import parse_native

    argv = list(plan.argv)
    parse_native(argv[len(config_map.ENTRY):] if tuple(argv[:len(config_map.ENTRY)]) == config_map.ENTRY else argv)


# ---------------------------------------------------------------- token consistency (compat check 5)
#: like the TRL driver: the untrained tiny model ends its turns after a few tokens, so episodes reach several turns
EARLY_EOS = (4, 1.6)
#: new tokens per generate() at most (the tiny model would otherwise ramble to the budget)
MAX_NEW_TOKENS = 48


class ModelEngine:
    """Stands in for OpenRLHF's vLLM engine with a local causal LM that really samples (the tiny model on CPU):
    generate(prompt_ids) returns the sampled ids, ending with EOS when the model stopped, as vLLM does."""

    def __init__(self, model: Any, tokenizer: Any, seed: int = 0) -> None:
        self.model, self.tok, self.seed = model, tokenizer, seed

    async def generate(self, prompt_ids: Any, sampling_params: Any, multi_modal_data: Any = None) -> Any:
        import torch

        limit = min(MAX_NEW_TOKENS, getattr(sampling_params, "max_tokens", None) or MAX_NEW_TOKENS)
        torch.manual_seed(self.seed + len(prompt_ids))
        with torch.no_grad():
            out = self.model.generate(torch.tensor([list(prompt_ids)]), max_new_tokens=limit, do_sample=True,
                                      exponential_decay_length_penalty=EARLY_EOS,
                                      eos_token_id=self.tok.eos_token_id, pad_token_id=self.tok.pad_token_id)
        ids = [int(t) for t in out[0, len(prompt_ids):]]
        if self.tok.eos_token_id in ids:
            ids = ids[: ids.index(self.tok.eos_token_id) + 1]
        finish = "stop" if ids and ids[-1] == self.tok.eos_token_id else "length"
        text = self.tok.decode(ids, skip_special_tokens=True)
        return types.SimpleNamespace(outputs=[types.SimpleNamespace(token_ids=ids, text=text, finish_reason=finish,
                                                                    logprobs=None)])


def trained_ids(result: dict[str, Any]) -> dict[str, Any]:
    """What OpenRLHF trains on from an executor's result, as its SamplesGenerator._process_response_into_experience
    builds it (that module imports vLLM, so it cannot be called here): sequences = observation_tokens, action mask
    1 on every action range; split at the first action into prompt_ids / completion_ids / mask."""
    seq = list(result["observation_tokens"])
    ranges = list(result["action_ranges"])
    mask = [0] * len(seq)
    for start, end in ranges:
        mask[start:end] = [1] * (end - start)
    first = ranges[0][0] if ranges else len(seq)
    return {"prompt_ids": seq[:first], "completion_ids": seq[first:], "mask": mask[first:]}


def episode_tokens(tasks: Sequence[Task], *, env: str, max_turns: int = 3, group: int = 2,
                   max_length: int = 2048) -> dict[str, Any]:
    """Play ``group`` episodes per task through the generated agent file's AgentExecutor (OpenRLHF's
    MultiTurnAgentExecutor) with the tiny model sampling, and return the ids OpenRLHF would train on:
    {"tokenizer", "episodes": [{prompt_ids, completion_ids, mask}]} (see ``trained_ids``)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from crossgym.adapters.kit.replay import compat_model_dir as model_dir

    path = model_dir()
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path).eval()  # type: ignore[no-untyped-call]
    cfg = AgentConfig(score=ScoreConfig(strip_tokens=(tok.eos_token, tok.pad_token)), env=env, max_turns=max_turns)
    with tempfile.TemporaryDirectory(prefix="crossgym-openrlhf-") as tmp:
        agent_path = Path(tmp) / "agent.py"
        agent_path.write_text(files.agent_file(cfg.to_dict()), encoding="utf-8")
        agent_cls = load_module(agent_path, "agent_module").AgentExecutor

        async def play() -> list[dict[str, Any]]:
            out = []
            for i, task in enumerate(tasks):
                prompt, label = native_prompt(task, tok)
                for k in range(group):
                    r = await agent_cls().execute(prompt, label, SamplingParams(), max_length, tok,
                                                  ModelEngine(model, tok, seed=1000 * i + k))
                    out.append(trained_ids(r))
            return out

        episodes = asyncio.run(play())
    return {"tokenizer": tok, "episodes": episodes}


#: the RemoteExperienceMaker methods the advantages hook runs (all plain torch)
ADVANTAGE_METHODS = ("compute_advantages_and_returns", "get_advantages_and_returns", "get_cumulative_returns")


@functools.lru_cache(maxsize=1)
def experience_maker_class() -> Any:
    """OpenRLHF's ``RemoteExperienceMaker``, imported; where its module cannot be imported on this machine (it
    imports ``openrlhf.models``, which needs flash_attn, and the Ray launcher, which needs vllm: GPU-only packages),
    a class holding the installed file's own ADVANTAGE_METHODS, compiled from its source (``ast``) with the names
    they use bound to OpenRLHF's own functions (``compute_reward`` from ``models/utils.py`` loaded by path,
    ``apply_length_penalties`` from ``trainer.ppo_utils``). The methods run unchanged either way; the class's
    ``crossgym_source`` says which it is."""
    try:
        from openrlhf.trainer.ppo_utils.experience_maker import RemoteExperienceMaker
    except ImportError as exc:
        missing = exc.name or str(exc)
    else:
        RemoteExperienceMaker.crossgym_source = "imported"
        return RemoteExperienceMaker
    import ast
    import itertools
    import logging as _logging

    import openrlhf
    import torch
    from openrlhf.trainer.ppo_utils import Experience, apply_length_penalties

    root = Path(openrlhf.__file__).parent
    spec = importlib.util.spec_from_file_location("crossgym_openrlhf_models_utils", root / "models" / "utils.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {root / 'models' / 'utils.py'}")
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    path = root / "trainer" / "ppo_utils" / "experience_maker.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "RemoteExperienceMaker")
    methods = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name in ADVANTAGE_METHODS]
    if {m.name for m in methods} != set(ADVANTAGE_METHODS):
        raise ImportError(f"{path} has no {', '.join(sorted(set(ADVANTAGE_METHODS) - {m.name for m in methods}))}")
    cls.body, cls.bases, cls.keywords, cls.decorator_list = list(methods), [], [], []  # the methods, nothing else
    module = ast.Module(body=[cls], type_ignores=[])
    scope: dict[str, Any] = {"torch": torch, "itertools": itertools, "List": list, "Tuple": tuple,
                             "Experience": Experience, "apply_length_penalties": apply_length_penalties,
                             "compute_reward": utils.compute_reward, "masked_mean": utils.masked_mean,
                             "logger": _logging.getLogger("openrlhf.experience_maker")}
    exec(compile(ast.fix_missing_locations(module), str(path), "exec"), scope)  # noqa: S102 - OpenRLHF's own code
    made = scope["RemoteExperienceMaker"]
    made.crossgym_source = f"compiled from {path} ({', '.join(ADVANTAGE_METHODS)}; the module needs {missing})"
    return made


def advantage_source() -> str:
    """How the advantages hook runs OpenRLHF's code here: "imported", or compiled from the installed file."""
    try:
        loss = str(policy_loss_class().crossgym_source)
    except Exception as exc:  # the loss-weight hook reports the same failure
        loss = f"unavailable ({type(exc).__name__}: {exc})"
    return f"{experience_maker_class().crossgym_source}; PolicyLoss {loss}"


#: grpo.variant values whose advantages OpenRLHF computes (compat_tests.advantages)
ADVANTAGE_VARIANTS = ("grpo", "dapo", "dr_grpo", "gspo", "rloo", "reinforce_pp_baseline")


def advantages(groups: Sequence[Sequence[float | None]], variant: str) -> list[list[float]]:
    """The advantages OpenRLHF's experience maker computes for ``groups`` of rewards under ``grpo.variant``.

    Calls ``RemoteExperienceMaker.compute_advantages_and_returns`` (OpenRLHF 0.11.2, CPU tensors) on an instance
    made without its Ray actor groups (``__init__`` only wires those up; the method reads ``strategy.args``,
    ``kl_ctl.value`` and ``advantage_estimator``), with the estimator crossgym's mapping sets for the variant
    (``config_map.VARIANTS``: group_norm, dr_grpo, rloo, reinforce_baseline), KL coefficient 0, no reward clipping or length penalty. Each group is one prompt's
    ``n_samples_per_prompt`` samples; the batch is split over two Experiences in shuffled order (their ``index``
    restores it, as in training) and the responses have different lengths under ``action_mask``. Every response
    token must carry the same advantage; that value is returned per sequence. Groups of one size go through one
    call (the batch reinforce_baseline whitens over); the k-th sample of a call has
    ``compat_tests.advantages.response_length(k)`` response tokens. OpenRLHF has no mask for a missing reward: None is an error. Where the experience maker's module cannot
    be imported, ``experience_maker_class`` says which class runs.
    """
    import torch
    from openrlhf.trainer.ppo_utils.experience import Experience

    from crossgym.adapters.openrlhf.config_map import VARIANTS
    from crossgym.compat_tests.advantages import WIDTH, response_length

    RemoteExperienceMaker = experience_maker_class()

    if any(r is None for g in groups for r in g):
        raise ValueError("OpenRLHF has no mask for a missing (None) reward")
    estimator = VARIANTS[variant]["algo.advantage.estimator"]
    out: list[list[float]] = [[] for _ in groups]
    for size in sorted({len(g) for g in groups}):
        picked = [i for i, g in enumerate(groups) if len(g) == size]
        flat = [float(r) for i in picked for r in groups[i]]  # type: ignore[arg-type]
        ns = types.SimpleNamespace
        args = ns(algo=ns(advantage=ns(estimator=estimator, gamma=1.0, lambd=1.0, no_std_norm=False)),
                  rollout=ns(n_samples_per_prompt=size), reward=ns(clip_range=None, overlong_buffer_len=None,
                                                                   stop_properly_penalty_coef=None))
        maker = object.__new__(RemoteExperienceMaker)
        maker.strategy, maker.kl_ctl, maker.advantage_estimator = ns(args=args), ns(value=0.0), estimator
        order = list(range(len(flat)))[::-1]  # the sample at position k of the batch is order[k] of the prompts
        width = WIDTH
        lengths = [response_length(k) for k in range(len(flat))]
        half = (len(order) + 1) // 2
        experiences = []
        for part in (order[:half], order[half:]):
            if not part:
                continue
            mask = torch.zeros(len(part), width, dtype=torch.bool)
            for j, k in enumerate(part):
                mask[j, :lengths[k]] = True
            experiences.append(Experience(rewards=torch.tensor([flat[k] for k in part], dtype=torch.float32),
                                          index=list(part), kl=torch.zeros(len(part), width), action_mask=mask,
                                          info={}))
        per = [0.0] * len(flat)
        for exp in maker.compute_advantages_and_returns(experiences):
            for j, k in enumerate(exp.index):
                row = exp.advantages[j]
                n = lengths[k]
                # only the response tokens count: the loss masks the rest with action_mask, and reinforce_baseline's
                # whitening shifts the padding too ((advantages - mean) * rstd over the whole tensor)
                if not bool((row[:n] == row[0]).all()):
                    raise RuntimeError(f"OpenRLHF gave sample {k} different advantages across its tokens: "
                                       f"{row.tolist()}")
                per[k] = float(row[0])
        for gi, i in enumerate(picked):
            out[i] = per[gi * size:(gi + 1) * size]
    return out


def policy_loss_class() -> Any:
    """OpenRLHF's ``PolicyLoss`` (``openrlhf/models/loss.py``): imported where ``openrlhf.models`` imports, else the
    installed file compiled with its one relative import (``masked_mean`` of ``models/utils.py``, loaded by path)
    bound; ``openrlhf.models`` imports flash_attn and deepspeed's GPU parts at package level."""
    try:
        from openrlhf.models.loss import PolicyLoss

        PolicyLoss.crossgym_source = "imported"
        return PolicyLoss
    except ImportError:
        pass
    import openrlhf

    root = Path(openrlhf.__file__).parent
    spec = importlib.util.spec_from_file_location("crossgym_openrlhf_models_utils", root / "models" / "utils.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {root / 'models' / 'utils.py'}")
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    path = root / "models" / "loss.py"
    source = path.read_text(encoding="utf-8")
    if source.count("from .utils import masked_mean\n") != 1:
        raise ImportError(f"{path} does not import masked_mean as 0.11.2 does")
    scope: dict[str, Any] = {"__name__": "crossgym_openrlhf_models_loss", "masked_mean": utils.masked_mean}
    exec(compile(source.replace("from .utils import masked_mean\n", "\n"), str(path), "exec"), scope)  # noqa: S102
    made = scope["PolicyLoss"]
    made.crossgym_source = f"compiled from {path}"
    return made


def loss_weights(variant: str, lengths: Sequence[int], horizon: int, *, log_ratio: Sequence[Sequence[float]] | None
                 = None, advantages: Sequence[float] | None = None) -> list[list[float]]:
    """-d loss / d log-prob of each response token through OpenRLHF's own ``PolicyLoss`` for ``variant``.

    Built as ``PPOActor`` builds it (``eps_clip_low_high``, ``token_level_loss = loss_agg_mode == "token-mean"``,
    ``policy_loss_type``, from crossgym's flags for the variant), called with ``get_loss_batch_info``'s totals for
    one process, log-probs equal to the old ones (ratio 1) and advantage 1 on every token, responses of ``lengths``
    padded to ``horizon`` under ``action_mask``; ``log_ratio`` (per token) and ``advantages`` (per sequence) make
    the batch off-policy.
    """
    import torch
    from openrlhf.utils.loss_utils import get_loss_batch_info

    from crossgym.adapters.openrlhf.config_map import variant_settings
    from crossgym.config import RunConfig

    run = RunConfig.model_validate({"model": "m", "tasks": {"files": ["(given in-process)"]}, "backend": "openrlhf",
                                    "grpo": {"variant": variant, "max_completion_length": horizon}})
    f = variant_settings(run)
    low, high = f["actor.eps_clip_low_high"]
    loss_fn = policy_loss_class()(clip_eps_low=low, clip_eps_high=high, dual_clip=None,
                                  token_level_loss=f["actor.loss_agg_mode"] == "token-mean",
                                  policy_loss_type=f["actor.policy_loss_type"])
    b = len(lengths)
    mask = torch.zeros(b, horizon, dtype=torch.bool)
    for i, n in enumerate(lengths):
        mask[i, :n] = True
    log_probs = torch.zeros(b, horizon, requires_grad=True)
    old = -torch.tensor(log_ratio, dtype=torch.float32) if log_ratio is not None else torch.zeros(b, horizon)
    adv = (torch.tensor(advantages, dtype=torch.float32).unsqueeze(1).expand(b, horizon).contiguous()
           if advantages is not None else torch.ones(b, horizon))
    loss = loss_fn(log_probs, old, adv, action_mask=mask, **get_loss_batch_info(None, mask))[0]
    loss.backward()
    assert log_probs.grad is not None
    return [[float(-g) for g in row] for row in log_probs.grad]
