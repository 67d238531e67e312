"""Bridges to other RL stacks (PrimeIntellect verifiers, OpenEnv); each imports its framework only when used."""
