"""crossgym as a PrimeIntellect verifiers environment package: taskset id ``crossgym-vf`` (see crossgym.interop.prime_export).

verifiers resolves a taskset id to a top-level package exporting its Taskset (and Env) through ``__all__``; this
package is that name, and the code lives in ``crossgym.interop.prime_export``.
"""

from crossgym.interop.prime_export import CrossgymEnv, CrossgymTaskset, load_environment

__all__ = ["CrossgymEnv", "CrossgymTaskset", "load_environment"]
