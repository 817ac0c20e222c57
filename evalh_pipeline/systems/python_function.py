"""``python_function``: call ``module:callable`` in-process, once per cell."""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from pydantic import ConfigDict, Field

from evalh_pipeline.models import EvalCase
from evalh_pipeline.systems.base import (
    AdapterError,
    SystemAdapter,
    SystemConfigModel,
    SystemResponse,
    Workspace,
)
from evalh_pipeline.systems.response import response_from_dict


class PythonFunctionConfig(SystemConfigModel):
    # The function may read its own keys from variant["config"], as in eval-harness.
    model_config = ConfigDict(extra="allow")

    target: str = Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
    init_kwargs: dict[str, Any] | None = None


class PythonFunctionSystem(SystemAdapter):
    """Calls ``target(case: dict, variant: dict)``; sync targets run in a worker thread.

    The eval's folder and the working directory are importable. With a workspace,
    ``variant["_workspace_path"]`` holds its path, as eval-harness does.
    """

    Config = PythonFunctionConfig

    async def start(self) -> None:
        self._fn = self._resolve_target()
        self._is_async = inspect.iscoroutinefunction(self._fn) or inspect.iscoroutinefunction(
            getattr(self._fn, "__call__", None)  # noqa: B004 - a callable object with an async __call__
        )
        # Sync targets must not block the event loop; size the pool like the concurrency knob.
        self._pool = None if self._is_async else ThreadPoolExecutor(
            max_workers=self.context.max_concurrency, thread_name_prefix=f"evalh-{self.variant.name}"
        )
        # Each cell gets its own copy (targets may mutate it); parsing JSON is the cheap deep copy.
        self._variant_json = self.variant.model_dump_json(exclude={"timeout_seconds"})

    async def run(self, case: EvalCase, workspace: Workspace | None) -> SystemResponse:
        case_dict = case.model_dump(mode="json")
        variant_dict = json.loads(self._variant_json)
        if workspace is not None:
            variant_dict["_workspace_path"] = str(workspace.path)
        if self._is_async:
            value = await self._fn(case_dict, variant_dict)
        else:
            loop = asyncio.get_running_loop()
            value = await loop.run_in_executor(self._pool, functools.partial(self._fn, case_dict, variant_dict))
            if inspect.isawaitable(value):
                value = await value
        return response_from_dict(value)

    async def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def _resolve_target(self) -> Callable[..., Any]:
        module_name, _, attr = self.config.target.partition(":")
        eval_dir = self.context.eval_dir.resolve()
        for folder in (".", str(eval_dir)):  # the eval's folder ends up first
            if folder in sys.path:
                sys.path.remove(folder)
            sys.path.insert(0, folder)
        _forget_if_shadowed(module_name, eval_dir)
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # noqa: BLE001 - any import failure is the user's target
            raise AdapterError(f"cannot import module {module_name!r} for target {self.config.target!r}: {exc}") from exc
        fn = getattr(module, attr, None)
        if fn is None or not callable(fn):
            raise AdapterError(f"{module_name!r} has no callable {attr!r}")
        if self.config.init_kwargs is not None:
            fn = fn(**self.config.init_kwargs)
        return fn


def _forget_if_shadowed(module_name: str, eval_dir: Path) -> None:
    """Drop a cached module of the same name imported from elsewhere (another eval's
    ``agent.py``, say), so this eval imports its own. Adapters already holding the old
    function keep it."""
    top = module_name.split(".", 1)[0]
    cached = sys.modules.get(top)
    local = eval_dir / top
    if cached is None or not (local.with_suffix(".py").exists() or (local / "__init__.py").exists()):
        return
    origin = getattr(cached, "__file__", None)
    if origin is not None and Path(origin).resolve().is_relative_to(eval_dir):
        return
    for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
        del sys.modules[name]
