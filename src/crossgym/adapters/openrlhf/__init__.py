"""OpenRLHF 0.11.2 backend: JSONL prompt dataset, generated reward/agent files, and `train_ppo_ray` flags.

Nothing here imports openrlhf, torch or vllm at module level: the generated files import the runtime modules
(scoring.py, agent.py) on the Ray nodes, where OpenRLHF runs.
"""
