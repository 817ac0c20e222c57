"""``run.executor.type`` -> the Dagster executor of an eval's jobs: one small builder per type.

Dagster distributes the steps of a run; evalh writes no scheduler of its own. ``in_process``
(eval-harness's ``local``) runs every step in the run's process; ``auto`` (the default) is
``in_process`` or ``multiprocess`` as ``evalh run`` chooses for the run's cells;
``multiprocess`` gives each step a process; ``celery`` sends each step to a celery worker
through a Redis broker (dagster-celery); ``k8s`` runs each step as a Kubernetes job
(dagster-k8s) and ``docker`` as a container (dagster-docker). The extras an executor needs
are imported when its builder runs (``evalh run`` says which is missing before any cell:
runner/deployment.py). The eval's settings become the executor's configuration; what
``run.executor`` leaves unset is Dagster's default, and the celery broker not named in
eval.yaml is read from ``$EVALH_CELERY_BROKER`` by each process when the run starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dagster as dg

from evalh_pipeline.config import EvalSpec
from evalh_pipeline.config.schema import ExecutorConfig
from evalh_pipeline.runner.deployment import CELERY_BROKER_ENV


def _in_process(_config: ExecutorConfig) -> dg.ExecutorDefinition:
    return dg.in_process_executor


def _multiprocess(config: ExecutorConfig) -> dg.ExecutorDefinition:
    if config.max_concurrent is None:
        return dg.multiprocess_executor
    return dg.multiprocess_executor.configured({"max_concurrent": config.max_concurrent})


def _celery(config: ExecutorConfig) -> dg.ExecutorDefinition:
    from dagster_celery import celery_executor

    # StringSource: a URL written in eval.yaml, else the variable each process reads at run time.
    broker: Any = config.broker or {"env": CELERY_BROKER_ENV}
    return celery_executor.configured({"broker": broker, "backend": config.backend or broker})


def _k8s(config: ExecutorConfig) -> dg.ExecutorDefinition:
    from dagster_k8s import k8s_job_executor

    return k8s_job_executor.configured({"job_image": config.image}) if config.image else k8s_job_executor


def _docker(config: ExecutorConfig) -> dg.ExecutorDefinition:
    from dagster_docker import docker_executor

    settings: dict[str, Any] = {"image": config.image} if config.image else {}
    if config.volumes:
        settings["container_kwargs"] = {"volumes": list(config.volumes)}
    if config.network:
        # dagster-docker creates the container on this network (`none`: docker's network mode
        # with a loopback only); unset, the engine's default network.
        settings["networks"] = [config.network]
    if config.env_vars:
        # Names only: dagster-docker reads each value from the launching process's environment.
        settings["env_vars"] = list(config.env_vars)
    return docker_executor.configured(settings) if settings else docker_executor


BUILDERS: dict[str, Callable[[ExecutorConfig], dg.ExecutorDefinition]] = {
    # `evalh run` chooses in process or multiprocess for each run before it starts (runner/shards.py
    # choose_layout); a job launched otherwise (the Dagster UI) cannot know its cells yet: in process.
    "auto": _in_process,
    "in_process": _in_process,
    "local": _in_process,  # eval-harness's name for one machine
    "multiprocess": _multiprocess,
    "celery": _celery,
    "k8s": _k8s,
    "docker": _docker,
}


def job_executor(config: ExecutorConfig) -> dg.ExecutorDefinition:
    """The Dagster executor of the eval's jobs for its ``run.executor`` (a type the config accepts)."""
    return BUILDERS[config.type](config)


def eval_executor(spec: EvalSpec) -> dg.ExecutorDefinition:
    """The Dagster executor of ``spec``'s jobs (``run.executor``)."""
    return job_executor(spec.config.run.executor)


def runs_in_process(spec: EvalSpec) -> bool:
    """Whether ``spec``'s jobs run every step in the launching process."""
    return BUILDERS[spec.config.run.executor.type] is _in_process
