"""Parity drivers shipped with the suite, for backends whose native reward path is reachable in-process."""
