"""crossgym's TRL backend: RunConfig -> GRPOConfig, verifiers -> reward functions, environments -> rollout_func."""
