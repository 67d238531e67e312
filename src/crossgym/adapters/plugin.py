"""Registers the built-in training backends through the same hook third parties use."""

from __future__ import annotations

from crossgym.plugins import hookimpl
from crossgym.plugins.registry import Registrar


@hookimpl
def crossgym_register_backends(registry: Registrar) -> None:
    registry.add("trl", "crossgym.adapters.trl.backend:TRLBackend",
                 description="Hugging Face TRL GRPOTrainer (CPU and GPU; hf or vLLM generation)",
                 install="pip install 'crossgym[trl]'", requires=("trl", "torch"))
    registry.add("unsloth", "crossgym.adapters.unsloth.backend:UnslothBackend",
                 description="Unsloth FastLanguageModel + LoRA, trained with TRL's GRPOTrainer",
                 install="pip install 'crossgym[unsloth]'", requires=("unsloth",))
    registry.add("verl", "crossgym.adapters.verl.backend:VerlBackend",
                 description="veRL 0.9.1 main_ppo with the GRPO estimator (GPU cluster; vLLM or SGLang rollout)",
                 install="pip install 'crossgym[verl]'", requires=("verl",))
    registry.add("openrlhf", "crossgym.adapters.openrlhf.backend:OpenRLHFBackend",
                 description="OpenRLHF 0.11.2 train_ppo_ray with group_norm advantages (GPU cluster; vLLM)",
                 install="pip install 'crossgym[openrlhf]'", requires=("openrlhf",))
    registry.add("skyrl", "crossgym.adapters.skyrl.backend:SkyRLBackend",
                 description="SkyRL 0.3.0 skyrl-train with the GRPO estimator and crossgym's skyrl_gym env (GPU "
                             "cluster; vLLM)",
                 install="pip install 'skyrl[fsdp]==0.3.0' skyrl-gym==0.4.0 (CUDA, Python >= 3.12; CPU tests: "
                         "nox -s skyrl)", requires=("skyrl", "skyrl_gym"))
