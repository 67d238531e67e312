"""The SkyRL 0.3.0 backend (skyrl-train: Ray, FSDP, vLLM), written against the backend kit: config_map (RunConfig ->
SkyRL overrides), files (its prompt dataset and entry point), env (SkyRL's step contract -> crossgym's scoring core
and episode driver), native (SkyRL's own code: its config check, skyrl_gym registration, main), parity (the compat
driver). See docs/backends/skyrl.md."""
