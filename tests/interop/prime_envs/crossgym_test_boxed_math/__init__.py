"""A verifiers 0.4 (v1) environment written the way verifiers documents them, for the bridge tests.

Rewards are async methods that declare what they need by name (``task``, ``trace``), as ``vf.Task.score`` calls
them: a boxed-math answer checked by verifiers' own ``verify_boxed_math_answer`` (math-verify), a weighted brevity
bonus, a keyed reward (two names from one function) and a tool-use reward that reads tool messages.
"""

from collections.abc import Iterator

import verifiers.v1 as vf


class SumData(vf.TaskData):
    answer: str


class SumTask(vf.Task[SumData]):
    @vf.reward
    async def correct(self, task: SumData, trace: vf.Trace) -> float:
        return vf.verify_boxed_math_answer(trace.last_reply, task.answer)

    @vf.reward(weight=0.25)
    async def brief(self, trace: vf.Trace) -> float:
        return 1.0 if len(trace.last_reply) <= 40 else 0.0

    @vf.reward(weight=0.5)
    async def form(self, trace: vf.Trace) -> dict[str, float]:
        reply = trace.last_reply
        return {"boxed": float("\\boxed{" in reply), "no_think": float("<think>" not in reply)}

    @vf.reward(weight=0.1)
    async def used_calculator(self, trace: vf.Trace) -> float:
        return float(any(m.name == "add" for m in trace.tool_messages))

    @vf.metric
    async def turns(self, trace: vf.Trace) -> float:
        return float(trace.num_turns)


class SumConfig(vf.TasksetConfig):
    n: int = 3


class SumTaskset(vf.Taskset[SumTask, SumConfig]):
    def load(self) -> Iterator[SumTask]:
        for i in range(self.config.n):
            yield SumTask(SumData(id=f"sum-{i}", system_prompt="Answer in \\boxed{}.",
                                  prompt=f"What is {i} + {i + 2}?", answer=str(2 * i + 2)), self.config.task)


__all__ = ["SumTaskset"]
