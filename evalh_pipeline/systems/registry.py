"""SystemAdapter registry: ``systems[].adapter`` names -> classes."""

from __future__ import annotations

from evalh_pipeline.registry import Registry
from evalh_pipeline.systems.base import SystemAdapter

SYSTEMS: Registry[SystemAdapter] = Registry(
    "adapter",
    "evalh_pipeline.systems",
    {
        "cli": "evalh_pipeline.systems.cli:CliSystem",
        "docker": "evalh_pipeline.systems.docker:DockerSystem",
        "git_branch": "evalh_pipeline.systems.git_branch:GitBranchSystem",
        "http": "evalh_pipeline.systems.http:HttpSystem",
        "python_function": "evalh_pipeline.systems.python_function:PythonFunctionSystem",
        "replay": "evalh_pipeline.systems.replay:ReplaySystem",
        "user_simulator": "evalh_pipeline.systems.user_simulator:UserSimulatorSystem",
    },
)
