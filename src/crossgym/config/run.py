"""RunConfig and its sections (pydantic models): one file that runs on every backend."""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

Variant = Literal["grpo", "dapo", "dr_grpo", "gspo", "rloo", "reinforce_pp_baseline", "cispo", "sapo"]


#: the most rows a blend or one of its parts may hold (10,000,000,000 took minutes of CPU and memory to plan, then
#: nothing; ten million prompts is past any run at the reference scale of 1.2 million rollouts)
MAX_BLEND_ROWS = 10_000_000


class _Model(BaseModel):
    # no NaN or infinity in any number of a config: a weight of .inf made the blend's row counts NaN (a traceback),
    # a reward weight of .nan trained on NaN rewards, and the gate blamed the tasks
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True, allow_inf_nan=False)


class TasksConfig(_Model):
    """Where tasks come from: a registered task source with params, or task files (JSONL)."""

    source: str | None = None
    """Registered task source name (see `crossgym list`), e.g. "arithmetic"."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Parameters for the source (n, seed, difficulty, ...)."""
    files: list[str] = Field(default_factory=list)
    """Task files (JSONL of Task objects); relative paths resolve against the config file."""

    @model_validator(mode="after")
    def _one_of(self) -> TasksConfig:
        if not self.source and not self.files:
            raise ValueError("give either 'source' (a registered task source) or 'files' (JSONL task files)")
        return self


class VerifierConfig(_Model):
    """An extra reward term: a verifier applied to every task, weighted."""

    name: str
    """Registered verifier name."""
    params: dict[str, Any] = Field(default_factory=dict)
    """The verifier's parameters (its VerifierSpec params)."""
    weight: float = 1.0
    """Weight in the summed reward."""


class EnvironmentConfig(_Model):
    """The environment episodes run in (multi-turn ones drive tools, shells, code or SQL)."""

    name: str = "single_turn"
    """Registered environment; tasks that name their own env keep it unless this is set explicitly."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Parameters passed to the environment's constructor."""
    max_turns: int = Field(default=1, ge=1)
    """Upper bound on assistant turns per episode."""


class TaskPart(_Model):
    """One named part of a task blend: its own tasks, share of the blend, environment and extra verifiers."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    """The part's name: task ids become ``<name>/<id>``, metrics ``crossgym/part/<name>/...``, veRL's data_source."""
    source: str | None = None
    """Registered task source name (see `crossgym list`)."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Parameters for the source (n, seed, difficulty, ...)."""
    files: list[str] = Field(default_factory=list)
    """Task files (JSONL of Task objects); relative paths resolve against the config file."""
    weight: float | None = Field(default=None, gt=0)
    """Share of the blend (relative to the other weighted parts); give a weight or a count, not both."""
    count: int | None = Field(default=None, ge=1, le=MAX_BLEND_ROWS)
    """Exactly this many rows from the part (fewer than it has: a seeded sample; more: whole epochs, then a sample)."""
    environment: EnvironmentConfig | None = None
    """The environment this part's tasks run in (default: the run's ``environment``, else each task's own)."""
    verifiers: list[VerifierConfig] = Field(default_factory=list)
    """Extra weighted reward terms for this part only (the run's ``verifiers`` apply to every part)."""

    @model_validator(mode="after")
    def _one_of(self) -> TaskPart:
        if not self.source and not self.files:
            raise ValueError(f"part {self.name!r}: give either 'source' (a registered task source) or 'files'")
        if self.weight is not None and self.count is not None:
            raise ValueError(f"part {self.name!r}: give a weight or a count, not both")
        return self

    def tasks_config(self) -> TasksConfig:
        return TasksConfig(source=self.source, params=dict(self.params), files=list(self.files))


class BlendConfig(_Model):
    """A blend of named task parts (multi-environment RL): each part's tasks, sampled by weight or count."""

    parts: list[TaskPart] = Field(min_length=1)
    """The parts; names must be distinct."""
    size: int | None = Field(default=None, ge=1, le=MAX_BLEND_ROWS)
    """Rows in the blend. Default: the counts plus, for weighted parts, as many rows as those parts have tasks."""
    shuffle: bool = True
    """Interleave the parts in a seeded order (False: part after part, in the order given)."""

    @model_validator(mode="after")
    def _distinct(self) -> BlendConfig:
        counts = Counter(p.name for p in self.parts)
        dup = sorted(n for n, k in counts.items() if k > 1)
        if dup:
            raise ValueError(f"part names must be distinct: {', '.join(dup)} given twice")
        return self


def _blend_from_list(v: Any) -> Any:
    """``tasks: [part, ...]`` is ``tasks: {parts: [part, ...]}``; a bare string is refused with the two spellings
    it could have meant."""
    if isinstance(v, str):
        raise ValueError(f"a section, not a string: write 'source: {v}' (a registered task source, see `crossgym "
                         f"list`) or 'files: [{v}]' (a JSONL of Task objects) under it")
    return {"parts": v} if isinstance(v, list) else v


def _tasks_kind(v: Any) -> str:
    has_parts = isinstance(v, dict) and "parts" in v or isinstance(v, BlendConfig)
    return "blend" if has_parts else "single"


#: a RunConfig's tasks section: one source/files section, or a blend of named parts
TasksSection = Annotated[Annotated[TasksConfig, Tag("single")] | Annotated[BlendConfig, Tag("blend")],
                         Discriminator(_tasks_kind)]


class LoraConfig(_Model):
    """LoRA adapters instead of full fine-tuning (set ``grpo.lora`` to enable)."""

    r: int = Field(default=16, ge=1)
    """LoRA rank."""
    alpha: int = Field(default=32, ge=1)
    """LoRA alpha (scaling)."""
    dropout: float = Field(default=0.0, ge=0.0, lt=1.0)
    """LoRA dropout."""
    target_modules: list[str] | str = "all-linear"
    """Modules to adapt (a list of names, or "all-linear")."""


class GRPOConfig(_Model):
    """GRPO hyper-parameters; each backend maps them to its own knobs (see `crossgym plan`)."""

    num_generations: int = Field(default=8, ge=2)
    """Completions sampled per prompt (the GRPO group size G)."""
    learning_rate: float = Field(default=1e-6, gt=0)
    """Optimizer learning rate."""
    beta: float = Field(default=0.0, ge=0)
    """KL coefficient against the reference model (0 disables the reference model)."""
    epsilon: float = Field(default=0.2, gt=0)
    """PPO-style clipping range (lower bound, and upper unless epsilon_high is set)."""
    epsilon_high: float | None = None
    """Upper clipping range (DAPO's clip-higher); None uses epsilon."""
    max_completion_length: int = Field(default=256, ge=1)
    """Most tokens generated per completion (per turn for multi-turn)."""
    max_prompt_length: int | None = None
    """Prompt truncation length where the backend supports it."""
    temperature: float = Field(default=1.0, ge=0)
    """Sampling temperature during training rollouts."""
    top_p: float = Field(default=1.0, gt=0, le=1)
    """Nucleus sampling during training rollouts."""
    per_device_train_batch_size: int = Field(default=8, ge=1)
    """Completions per device per step (TRL's meaning)."""
    gradient_accumulation_steps: int = Field(default=1, ge=1)
    """Micro-batches accumulated per optimizer step."""
    max_steps: int = Field(default=100, ge=1)
    """Optimizer steps to train."""
    num_iterations: int = Field(default=1, ge=1)
    """Policy updates per generated batch (GRPO's mu)."""
    loss_type: str | None = None
    """Backend-native loss override; normally leave None and pick a `variant`."""
    variant: Variant = "grpo"
    """Algorithm variant (grpo, dapo, dr_grpo, gspo, rloo, reinforce_pp_baseline, cispo, sapo); each backend maps it
    to its own knobs, or refuses it in one line (docs/guides/variants.md)."""
    scale_rewards: bool = True
    """Divide advantages by the group's reward std (False is Dr. GRPO's choice)."""
    reward_aggregation: Literal["sum", "normalize_then_sum"] = "sum"
    """Several reward terms: "sum" adds the weighted terms, then normalises the sum per group; "normalize_then_sum"
    normalises each term within its group, sums them weighted, then whitens over the batch (GDPO)."""
    lora: LoraConfig | None = None
    """LoRA settings; None trains all weights."""
    logging_steps: int = Field(default=1, ge=1)
    """Log metrics every N steps."""
    save_steps: int | None = None
    """Save a checkpoint every N steps (the final checkpoint is always saved)."""
    eval_steps: int | None = Field(default=None, ge=1)
    """Held-out watch: every N steps (and before the first), score the policy greedily on `eval_limit` of
    `eval_tasks` and log the held-out pass rate beside the training reward (TRL; veRL maps it to test_freq)."""
    eval_limit: int = Field(default=32, ge=1)
    """Held-out tasks the watch scores each time (the first N of `eval_tasks`)."""
    filter_groups: bool = False
    """Dynamic sampling (DAPO): drop GRPO groups whose rewards are all equal while training and sample more until
    the batch is full: veRL's algorithm.filter_groups, OpenRLHF's dynamic filtering; TRL has none (see `plan`)."""

    @model_validator(mode="after")
    def _batch_fits_group(self) -> GRPOConfig:
        total = self.per_device_train_batch_size * self.gradient_accumulation_steps
        if total % self.num_generations:
            raise ValueError(
                f"per_device_train_batch_size x gradient_accumulation_steps ({total}) must be a multiple of "
                f"num_generations ({self.num_generations}): each GRPO group needs all its completions")
        return self


class DifficultyConfig(_Model):
    """A difficulty filter before training: each task's pass rate over ``samples`` completions of the starting
    model; tasks outside the learnable band are dropped (a GRPO group whose rewards are all equal teaches nothing)."""

    samples: int = Field(default=8, ge=2)
    """Completions per task to measure its pass rate (with the run's sampling settings)."""
    min_pass: float = Field(default=0.0, ge=0.0, le=1.0)
    """Keep a task when its pass rate is above this (0: drop tasks no sample solves)."""
    max_pass: float = Field(default=1.0, ge=0.0, le=1.0)
    """...and below this (1: drop tasks every sample solves)."""
    rollouts: str | None = None
    """An earlier eval's rollouts.jsonl (or its folder) to read pass rates from instead of measuring them; tasks it
    has no rollouts for are kept."""

    @model_validator(mode="after")
    def _band(self) -> DifficultyConfig:
        if self.min_pass >= self.max_pass:
            raise ValueError(f"min_pass ({self.min_pass}) must be below max_pass ({self.max_pass})")
        return self


class RunConfig(_Model):
    """Everything one run needs; the same file runs on every backend."""

    model: str
    """A local model directory (``~`` expanded) or a hub id such as "Qwen/Qwen2.5-0.5B-Instruct" (needs network). A
    value that looks local (starts with ./ ../ / or ~, has more than one "/", or its first folder exists) must exist."""
    tasks: TasksSection
    """Training tasks: one source/files section, or a blend of named parts (a list, or ``{parts, size, shuffle}``)."""
    eval_tasks: TasksSection | None = None
    """Held-out tasks for the eval-first gate and before/after evaluation (default: a slice of `tasks`)."""
    verifiers: list[VerifierConfig] = Field(default_factory=list)
    """Extra weighted reward terms; each task's own verifier always scores with weight `task_weight`."""
    difficulty: DifficultyConfig | None = None
    """Keep only tasks in a learnable band of the starting model's pass rate (measured before training)."""
    task_weight: float = 1.0
    """Weight of each task's own verifier in the summed reward."""
    environment: EnvironmentConfig = Field(default_factory=EnvironmentConfig)
    """The environment episodes run in."""
    grpo: GRPOConfig = Field(default_factory=GRPOConfig)
    """GRPO hyper-parameters, mapped to each backend's own knobs."""
    backend: str = "trl"
    """Training backend: trl, unsloth, verl or openrlhf (see `crossgym list`)."""
    engine: str = "hf"
    """Inference engine for generation: hf, vllm, sglang or openai."""
    backend_args: dict[str, Any] = Field(default_factory=dict)
    """Passed untouched to the backend's native config."""
    output_dir: str = "runs/crossgym"
    """Where metrics, plots, rollouts and checkpoints go."""
    resume: str = Field(default="never", min_length=1)
    """"never" starts from the model; "auto" continues from the latest complete checkpoint in output_dir when there
    is one; a checkpoint folder continues from it. `crossgym train --resume` is "auto" that needs a checkpoint."""
    seed: int = 0
    """Seed for sampling, data order and initialisation."""
    on_error: float | Literal["none"] = 0.0
    """Reward for a verifier error or timeout; "none" hands None/NaN to backends that mask it."""

    @field_validator("model")
    @classmethod
    def _model(cls, v: str) -> str:
        import os

        return os.path.expanduser(v) if v.startswith("~") else v  # examples/demo/config.yaml's ~/.cache/...

    @field_validator("tasks", "eval_tasks", mode="before")
    @classmethod
    def _blend_list(cls, v: Any) -> Any:
        return _blend_from_list(v)

    @field_validator("on_error", mode="before")
    @classmethod
    def _on_error(cls, v: Any) -> Any:
        if v is None or (isinstance(v, str) and v.lower() in ("none", "null", "nan")) or \
                (isinstance(v, float) and v != v):  # (YAML's .nan, as the word "nan": no reward, masked)
            return "none"
        return v

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def with_overrides(self, **changes: Any) -> RunConfig:
        """A copy with top-level fields replaced (validated again); fields left unset stay unset."""
        data = self.model_dump(mode="json", exclude_unset=True)
        data.update({k: v for k, v in changes.items() if v is not None})
        return RunConfig.model_validate(data)
