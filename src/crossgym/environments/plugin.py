"""Registers the built-in environments and task sources."""

from __future__ import annotations

from crossgym.plugins import hookimpl
from crossgym.plugins.registry import Registrar

_ENVS = "crossgym.environments"
_SRC = "crossgym.environments.sources"


@hookimpl
def crossgym_register_environments(registry: Registrar) -> None:
    registry.add("single_turn", f"{_ENVS}.single_turn:SingleTurnEnv",
                 description="the prompt, one reply, done; scored by the task's verifier")
    registry.add("tool_use", f"{_ENVS}.tool_use:ToolUseEnv",
                 description="multi-turn calls to Python tools rebuilt from the task; params: max_turns, toolset")
    registry.add("shell", f"{_ENVS}.shell:ShellEnv",
                 description="multi-turn shell commands in a sandboxed scratch directory; final files verified")
    registry.add("code", f"{_ENVS}.code:CodeEnv",
                 description="write code, see the failing tests, fix it; scored by code_tests on all tests")
    registry.add("sql", f"{_ENVS}.sql:SqlEnv",
                 description="explore an SQLite schema with read-only tools, then submit one query")
    registry.add("openenv", "crossgym.interop.openenv:OpenEnvEnvironment", requires=("openenv",),
                 install="pip install 'crossgym[interop]'", description="an OpenEnv server's episode; params: base_url")


@hookimpl
def crossgym_register_task_sources(registry: Registrar) -> None:
    add = registry.add
    add("arithmetic", f"{_SRC}.arithmetic:arithmetic",
        description="arithmetic expressions (numeric); params: n, seed, difficulty 1-5")
    add("word_problems", f"{_SRC}.arithmetic:word_problems",
        description="multi-step word problems (numeric or math); params: n, seed, difficulty 1-3, verifier")
    add("json_extraction", f"{_SRC}.json_extraction:json_extraction",
        description="extract records from text as JSON (json_match or json_schema); params: n, seed, difficulty")
    add("tool_choice", f"{_SRC}.tool_choice:tool_choice",
        description="choose and call the right tool among several (tool_call, or tool_use env); params: mode")
    add("shell_tasks", f"{_SRC}.shell_tasks:shell_tasks",
        description="file tasks in a scratch directory (shell verifier); params: n, seed, difficulty, env")
    add("python_functions", f"{_SRC}.python_functions:python_functions",
        description="write a Python function that passes unit tests (code_tests); params: difficulty, env")
    add("sql", f"{_SRC}.sql_tasks:sql",
        description="SQL questions over generated tables (sql verifier); params: n, seed, difficulty, env")
    add("instructions", f"{_SRC}.instructions:instructions",
        description="IFEval-style constraint following (instructions); params: n, seed, difficulty")
    add("multiple_choice", f"{_SRC}.multiple_choice:multiple_choice",
        description="multiple-choice questions with generated distractors; params: n, seed, difficulty")
    add("json_addition", f"{_SRC}.json_addition:json_addition",
        description='the demo: a+b answered as {"answer": N} (json_answer); params: split train|heldout, digits')
    add("ifeval", f"{_SRC}.ifeval:ifeval",
        description="IFEval's rows (key, prompt, instruction_id_list, kwargs) scored by instructions; params: path, "
                    "limit, skip_unsupported")
    add("jsonl", f"{_SRC}.loaders:jsonl", description="tasks from a JSONL file (Task rows or column mapping)")
    add("parquet", f"{_SRC}.loaders:parquet", requires=("pyarrow",), install="pip install 'crossgym[tasks]'",
        description="tasks from Parquet with column mapping")
    add("hf_dataset", f"{_SRC}.loaders:hf_dataset", requires=("datasets",), install="pip install datasets",
        description="a local Hugging Face dataset (load_from_disk) with column mapping")
    add("reasoning_gym", f"{_SRC}.reasoning_gym:reasoning_gym", requires=("reasoning_gym",),
        install="pip install 'crossgym[tasks]'",
        description="any reasoning-gym dataset, scored by its own score_answer; params: dataset, config, n, seed")
    add("prime_verifiers", "crossgym.interop.prime_verifiers:prime_verifiers", requires=("verifiers",),
        install="pip install 'crossgym[interop]'",
        description="a PrimeIntellect verifiers taskset, scored by prime_rubric; params: taskset, config, n, threshold")
    add("openenv", "crossgym.interop.openenv:openenv_tasks",
        description="OpenEnv episodes (openenv env, openenv_reward); params: n or resets, prompt, threshold")
