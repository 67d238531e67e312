"""Training backends: TRL, Unsloth, veRL and OpenRLHF. Each imports its framework inside functions only."""
