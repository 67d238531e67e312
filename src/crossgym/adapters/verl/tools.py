"""crossgym task tools as veRL BaseTools, for runs that use veRL's own ``tool_agent`` loop instead of crossgym's.

The generated tool YAML (``files.tools_yaml``) lists one CrossgymTool per tool name the tasks declare, with its OpenAI
schema. For each trajectory veRL calls ``create(create_kwargs={"crossgym_task": <Task JSON>})`` (the row's
tools_kwargs), and the tool rebuilds that task's tools exactly as the ``tool_use`` environment does
(``tools_for_task``), so a call returns the same text in both loops. Rewards still come from the verifier on the
final text; crossgym's own agent loop (the default) scores the whole episode instead.

This module imports veRL at import time: only veRL's workers import it.
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from crossgym.adapters.verl.reward import TASK_KEY, task_for


class CrossgymTool(BaseTool):
    """One named tool of a crossgym task, per trajectory instance."""

    def __init__(self, config: dict[str, Any], tool_schema: OpenAIFunctionToolSchema) -> None:
        super().__init__(config, tool_schema)
        self._instances: dict[str, Any] = {}

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, ToolResponse]:
        from crossgym.environments.tools import tools_for_task
        from crossgym.rollout.driver import episode_seed

        iid = instance_id or uuid4().hex
        create_kwargs = kwargs.get("create_kwargs") or {}
        tool = None
        if create_kwargs.get(TASK_KEY):
            task = task_for(create_kwargs)
            seed = create_kwargs.get("env_seed", episode_seed(int(self.config.get("seed", 0)), task.id))
            tool = next((t for t in tools_for_task(task, seed) if t.name == self.name), None)
        self._instances[iid] = tool
        return iid, ToolResponse()

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
                      ) -> tuple[ToolResponse, float, dict[str, Any]]:
        tool = self._instances.get(instance_id)
        if tool is None:
            return ToolResponse(text=f"Error: this task has no tool {self.name!r}"), 0.0, {}
        return ToolResponse(text=tool.call(parameters)), 0.0, {}

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        self._instances.pop(instance_id, None)

