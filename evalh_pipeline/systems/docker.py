"""``docker``: the system is a container image (eval-harness 2.0.2's keys).

One container per variant, started from ``image`` when the run starts; once its
``healthcheck`` answers 2xx, every cell is delegated to ``inner_adapter`` (``http``,
typically) built from ``inner_config`` with ``{port}`` replaced by a loopback port of this
host; the container is removed when the run ends. A container that exits or never gets
healthy fails every cell of the variant with its last log lines; the run completes.

How the port is reached. The container gets no network by default (``network: none``),
so nothing can be published. Instead evalh listens on ``127.0.0.1:{port}`` and relays
each connection into the container with ``docker exec -i <container> nc 127.0.0.1
<container_port>`` (``relay_command``; the image needs ``nc``, as busybox has): the
container never touches the host's network and the host's network is never changed
(the relay is what ``kubectl port-forward`` does). With ``network: bridge`` on an engine
that has a bridge, the port is published on 127.0.0.1 instead.

Other keys: ``container_port`` (default: the same number as ``{port}``), ``env`` (values
may use ``{port}``; passed by name, never on a command line), ``volumes``
(``host:container[:ro|rw]``, host paths relative to the eval's folder), ``memory``,
``cpus``, ``pids`` (limits with defaults), ``binary``/``docker_host`` (the engine).
The image must be present: nothing is pulled (``docker pull`` it, or build it).

Isolation, the ``docker_volume`` sandbox's (:func:`isolation_args`), each relaxable by a key:
a read-only root with a tmpfs ``/tmp`` of ``tmp_size`` (``read_only: false`` for an image that
writes elsewhere), no capabilities (``cap_drop_all: false`` for one that needs some), no
privilege gain, user ``65534:65534`` (``user: null`` keeps the image's own, possibly root).

Each container carries its run's owner (``evalh.owner``: host, pid, start time); a run
that was killed leaves its container, and the next start of a docker system removes those
whose owner is gone (never one of a live run).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import uuid
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from evalh_pipeline.common.containers import (
    LABEL,
    ContainerError,
    ContainerRuntime,
    RuntimeConfig,
    isolation_args,
    parse_size,
)
from evalh_pipeline.common.processes import owner_dead, owner_marker
from evalh_pipeline.systems.base import AdapterError
from evalh_pipeline.systems.service import ServiceConfig, ServiceSystem, free_port, render_port

RELAY_CHUNK = 65536
NAME_PREFIX = "evalh-svc-"
OWNER_LABEL = "evalh.owner"


class DockerConfig(ServiceConfig):
    image: str = Field(min_length=1)
    container_port: int | None = Field(default=None, gt=0, lt=65536)
    env: dict[str, str] = Field(default_factory=dict)
    volumes: list[str] = Field(default_factory=list)
    network: Literal["none", "bridge"] = "none"
    relay_command: list[str] = Field(default_factory=lambda: ["nc", "127.0.0.1", "{container_port}"], min_length=1)
    memory: str | int = "1g"
    cpus: float = Field(default=1.0, gt=0)
    pids: int = Field(default=512, ge=8)
    user: str | None = "65534:65534"
    read_only: bool = True
    tmp_size: str | int = "64m"
    cap_drop_all: bool = True
    binary: str = "docker"
    docker_host: str | None = None

    @field_validator("volumes")
    @classmethod
    def _volumes(cls, value: list[str]) -> list[str]:
        for spec in value:
            parts = spec.split(":")
            if len(parts) not in (2, 3) or not all(parts[:2]) or (len(parts) == 3 and parts[2] not in ("ro", "rw")):
                raise ValueError(f"a volume is 'host:container' or 'host:container:ro|rw', got {spec!r}")
        return value

    @field_validator("memory", "tmp_size")
    @classmethod
    def _memory(cls, value: str | int) -> str | int:
        parse_size(value)
        return value

    @field_validator("user")
    @classmethod
    def _user(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"\d+(:\d+)?", value):
            raise ValueError(f"user must be a numeric uid[:gid] such as 65534:65534 (or null: the image's), got {value!r}")
        return value


def sweep_dead_runs(runtime: ContainerRuntime) -> list[str]:
    """Remove the service containers whose owning run is gone; the names removed."""
    label = '{{.Label "' + OWNER_LABEL + '"}}'
    try:
        listed = runtime.run("ps", "-a", "--filter", f"label={OWNER_LABEL}", "--filter", f"name={NAME_PREFIX}",
                             "--format", "{{.Names}} " + label).decode()
    except ContainerError:
        return []  # the start that follows reports the engine's problem
    removed = []
    for line in listed.splitlines():
        name, _, owner = line.partition(" ")
        if name.startswith(NAME_PREFIX) and owner_dead(owner.strip()):
            runtime.quiet("rm", "-f", "-v", name)
            removed.append(name)
    return removed


class DockerSystem(ServiceSystem[DockerConfig]):
    """A service container per variant; cells go to the inner adapter (see the module docstring)."""

    _container: str | None = None
    _relay: asyncio.Server | None = None

    async def _start_service(self) -> int:
        cfg = self.config
        self._runtime = ContainerRuntime(RuntimeConfig(binary=cfg.binary, docker_host=cfg.docker_host),
                                         self.context.host_env)
        port = free_port()
        inner_port = cfg.container_port or port
        env = {k: render_port(v, port) for k, v in cfg.env.items()}
        env_args = [a for name in env for a in ("-e", name)]
        volume_args = [a for spec in cfg.volumes for a in ("-v", self._volume(spec))]
        publish = ["-p", f"127.0.0.1:{port}:{inner_port}"] if cfg.network == "bridge" else []
        await asyncio.to_thread(sweep_dead_runs, self._runtime)
        # The image the run recorded (its id), not whatever the tag names now: an image rebuilt
        # under the same tag mid-run (or before --resume) is another run's.
        image = self.version.removeprefix("image:") if self.version.startswith("image:") else cfg.image
        try:
            self._ran = "image:" + (await asyncio.to_thread(
                self._runtime.run, "image", "inspect", "--format", "{{.Id}}", image)).decode().strip()
        except ContainerError as exc:
            raise AdapterError(f"docker: image {cfg.image!r} is not present (nothing is pulled): {exc}") from None
        name = f"{NAME_PREFIX}{uuid.uuid4().hex[:12]}"
        runtime = ContainerRuntime(self._runtime.config, self.context.host_env)
        runtime.env.update(env)  # `-e NAME` reads the value from the CLI's environment
        try:
            self._container = (await asyncio.to_thread(
                runtime.run, "run", "-d", "--name", name, "--label", f"{LABEL}=1",
                "--label", f"{OWNER_LABEL}={owner_marker()}", "--network", cfg.network, *publish,
                *isolation_args(user=cfg.user, read_only=cfg.read_only, tmp_size=cfg.tmp_size,
                                cap_drop_all=cfg.cap_drop_all),
                "--memory", str(parse_size(cfg.memory)),
                "--cpus", f"{cfg.cpus:g}", "--pids-limit", str(cfg.pids), *env_args, *volume_args, image,
            )).decode().strip()
        except ContainerError as exc:
            await asyncio.to_thread(self._runtime.quiet, "rm", "-f", name)
            raise AdapterError(f"docker: container not started: {exc}") from None
        if cfg.network == "none":
            relay = [str(a).replace("{container_port}", str(inner_port)) for a in cfg.relay_command]
            self._relay = await asyncio.start_server(lambda r, w: self._forward(r, w, relay), "127.0.0.1", port)
        return port

    def _volume(self, spec: str) -> str:
        host, _, rest = spec.partition(":")
        path = Path(host).expanduser()
        return f"{path if path.is_absolute() else (self.context.eval_dir / path).resolve()}:{rest}"

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, relay: list[str]) -> None:
        """One loopback connection, relayed into the container through ``docker exec``."""
        container = self._container
        if container is None:
            writer.close()
            return
        proc = await asyncio.create_subprocess_exec(
            *self._runtime.base, "exec", "-i", container, *relay, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, env=self._runtime.env)
        assert proc.stdin is not None and proc.stdout is not None

        async def inbound() -> None:
            assert proc.stdin is not None
            try:
                while data := await reader.read(RELAY_CHUNK):
                    proc.stdin.write(data)
                    await proc.stdin.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                with contextlib.suppress(OSError, RuntimeError):
                    proc.stdin.close()

        async def outbound() -> None:
            assert proc.stdout is not None
            try:
                while data := await proc.stdout.read(RELAY_CHUNK):
                    writer.write(data)
                    await writer.drain()
            except (ConnectionError, OSError):
                pass

        sending = asyncio.ensure_future(inbound())
        try:
            await outbound()  # the service closed its side: the connection is over
        finally:
            sending.cancel()
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    async def _exited(self) -> str | None:
        if self._container is None:
            return "the container was not started"
        try:
            state = await asyncio.to_thread(self._runtime.state, self._container)
        except ContainerError as exc:
            return str(exc)
        if state.get("Status") in ("created", "running", "restarting"):
            return None
        oom = " (killed: out of memory)" if state.get("OOMKilled") else ""
        return f"the container exited with code {state.get('ExitCode')}{oom}; {await self._last_output()}"

    async def _last_output(self) -> str:
        if self._container is None:
            return "no container"
        tail = await asyncio.to_thread(self._runtime.logs_tail, self._container)
        return f"its last log lines:\n{tail}"

    async def _stop_service(self) -> None:
        if self._relay is not None:
            self._relay.close()
            self._relay = None
        if self._container is not None:
            await asyncio.to_thread(self._runtime.quiet, "rm", "-f", "-v", self._container)
            self._container = None
