"""Registers the built-in verifiers (one ``registry.add`` per verifier)."""

from __future__ import annotations

from crossgym.plugins import hookimpl
from crossgym.plugins.registry import Registrar

_V = "crossgym.verifiers."
_EXTRA = "pip install 'crossgym[verifiers]'"


@hookimpl
def crossgym_register_verifiers(registry: Registrar) -> None:
    add = registry.add
    # sandbox / bridge verifiers (environments issue)
    add("sql", _V + "sql:SQL", description="the model's SQL, run read-only on the task's SQLite DB; result sets")
    add("reasoning_gym", _V + "reasoning_gym:ReasoningGym", description="reasoning-gym's own score_answer",
        requires=("reasoning_gym",), install="pip install 'crossgym[tasks]'")
    add("code_tests", _V + "code:CodeTests", description="Python solution vs unit tests in the sandbox (partial credit)")
    add("code_output", _V + "code:CodeOutput", description="run the model's program on stdin; compare stdout")
    add("shell", _V + "shell:Shell", description="replay shell commands in a seeded sandbox dir; compare final state")
    add("json_answer", _V + "json_answer:JsonAnswer",
        description='demo reward: {"answer": N} present 0.5 + exact object 0.5 + right N 1.0')
    add("exact_match", _V + "text:ExactMatch", description="answer equals a reference after normalisation")
    add("numeric", _V + "numeric:Numeric", description="one number within absolute/relative tolerance")
    add("math", _V + "math:Math", description="mathematical equivalence via math-verify (process pool)",
        requires=("math_verify",), install=_EXTRA)
    add("multiple_choice", _V + "choice:MultipleChoice", description="option letter or text from varied phrasings")
    add("regex", _V + "patterns:Regex", description="pattern search/fullmatch or extract-then-compare",
        requires=("regex",), install="pip install regex")
    add("format_tags", _V + "format:FormatTags", description="required <tag> blocks, exactly one each, in order")
    add("json_valid", _V + "json_checks:JsonValid", description="the completion parses as JSON")
    add("json_schema", _V + "json_schema:JsonSchema", description="JSON validates against a JSON Schema",
        requires=("fastjsonschema", "jsonschema"), install=_EXTRA)
    add("json_match", _V + "json_checks:JsonMatch", description="structural JSON equality with options")
    add("string_similarity", _V + "text:StringSimilarity", description="edit distance or token F1 with a threshold")
    add("tool_call", _V + "tool_call:ToolCallVerifier",
        description="expected function calls (OpenAI/Hermes/Python syntax), schema-checked")
    add("instructions", _V + "instructions:Instructions", description="IFEval-style checkable constraints")
    add("length", _V + "length:Length", description="length budget or over/under-length penalty")
    add("xml_valid", _V + "markup:XmlValid", description="well-formed XML, DTDs refused")
    add("yaml_valid", _V + "markup:YamlValid", description="one safe YAML document")
    add("judge", _V + "judge:Judge", description="LLM-as-judge via an OpenAI-compatible endpoint",
        requires=("httpx",), install="pip install httpx")
    add("composite", _V + "composite:Composite", description="weighted sum / min / all of other verifiers")
    add("prime_rubric", "crossgym.interop.prime_verifiers:PrimeRubric", requires=("verifiers",),
        install="pip install 'crossgym[interop]'", description="a PrimeIntellect verifiers taskset's own rewards")
    add("openenv_reward", "crossgym.interop.openenv:OpenEnvReward", description="an OpenEnv episode's summed step rewards")
