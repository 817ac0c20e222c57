"""What the ``docker`` and ``git_branch`` systems share: a service started once per variant,
a healthcheck to wait for, and an inner adapter built from ``inner_config`` with ``{port}``
filled in, to which every cell is delegated (eval-harness 2.0.2's composition)."""

from __future__ import annotations

import asyncio
import socket
import time
from abc import abstractmethod
from typing import Any

from pydantic import Field, ValidationError, field_validator, model_validator
from typing_extensions import TypeVar

from evalh_pipeline.common.http_client import HttpClient, HttpError
from evalh_pipeline.common.tls import default_ssl_context
from evalh_pipeline.models import EvalCase, RunVariant
from evalh_pipeline.systems.registry import SYSTEMS
from evalh_pipeline.systems.base import AdapterError, SystemAdapter, SystemConfigModel, SystemResponse, Workspace

HEALTH_POLL_SECONDS = 0.25
_METHODS = ("GET", "HEAD", "POST", "PUT", "OPTIONS")


class ServiceConfig(SystemConfigModel):
    """Keys both service systems take (eval-harness's names)."""

    healthcheck: str
    healthcheck_timeout_seconds: float = Field(default=60, gt=0)
    inner_adapter: str
    inner_config: dict[str, Any] = Field(min_length=1)

    @field_validator("healthcheck")
    @classmethod
    def _healthcheck(cls, value: str) -> str:
        parse_healthcheck(value)
        return value

    @field_validator("inner_adapter")
    @classmethod
    def _inner_is_known(cls, value: str) -> str:
        if value in ("docker", "git_branch"):
            raise ValueError(f"inner_adapter {value!r} would start a service inside a service")
        try:
            SYSTEMS.get(value)
        except LookupError as exc:
            raise ValueError(f"inner_adapter: {exc}") from None
        return value

    @model_validator(mode="after")
    def _inner_config_fits(self) -> "ServiceConfig":
        # Checked with a port filled in, so a bad inner key is a load error, not a cell error.
        try:
            SYSTEMS.get(self.inner_adapter).Config.model_validate(render_port(self.inner_config, 1))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ValueError(f"inner_config for {self.inner_adapter}: {problems}") from None
        return self


def parse_healthcheck(value: str) -> tuple[str, str]:
    """``GET /health`` or ``/health`` -> (method, path)."""
    parts = value.strip().split(maxsplit=1)
    method, path = ("GET", parts[0]) if len(parts) == 1 else (parts[0].upper(), parts[1])
    if method not in _METHODS or not path:
        raise ValueError(f"healthcheck must be 'METHOD /path' (e.g. 'GET /health'), got {value!r}")
    return method, path if path.startswith("/") else "/" + path


def render_port(value: Any, port: int) -> Any:
    """``{port}`` replaced in every string of ``value`` (lists and mappings walked)."""
    if isinstance(value, str):
        return value.replace("{port}", str(port))
    if isinstance(value, list):
        return [render_port(v, port) for v in value]
    if isinstance(value, dict):
        return {k: render_port(v, port) for k, v in value.items()}
    return value


def free_port() -> int:
    """A loopback port nobody listens on now (the service binds it next)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# Each service system (git_branch, docker) adds its own keys to ServiceConfig.
ServiceConfigT = TypeVar("ServiceConfigT", bound=ServiceConfig, default=ServiceConfig, covariant=True)


class ServiceSystem(SystemAdapter[ServiceConfigT]):
    """Starts a service once per variant, waits until healthy, delegates each cell to the inner adapter.

    A service that never gets healthy fails :meth:`start` with its last output lines; the runner
    then fails every cell of the variant with that message and the run goes on.
    """

    _inner: SystemAdapter | None = None
    _ran: str = ""  # the commit or image the service was started from

    @classmethod
    def works_outside_sandbox(cls, config: dict[str, Any]) -> bool:
        return True  # the service runs on the host or in its own container, not the workspace's

    async def start(self) -> None:
        port = await self._start_service()
        try:
            await self._wait_healthy(port)
            inner_variant = RunVariant(name=self.variant.name, adapter=self.config.inner_adapter,
                                       config=render_port(self.config.inner_config, port),
                                       metadata=self.variant.metadata, timeout_seconds=self.variant.timeout_seconds)
            inner = SYSTEMS.get(self.config.inner_adapter)(inner_variant, self.context)
            await inner.start()
            self._inner = inner
        except BaseException:
            await self._stop_service()
            raise

    @property
    def version(self) -> str:
        """What the run recorded this variant runs (``git:<commit>``, ``image:<id>``), or "" when
        it recorded nothing usable: then the service resolves its branch or image at start."""
        version = self.context.versions.get(self.variant.name, "")
        return "" if version == "missing" else version

    async def run(self, case: EvalCase, workspace: Workspace | None) -> SystemResponse:
        if self._inner is None:
            raise AdapterError(f"{self.variant.adapter}: the service is not running")
        response = await self._inner.run(case, workspace)
        if self._ran:
            # Each trace says which commit or image answered it (DataModel: adapter overflow).
            response.extra.setdefault("system_version", self._ran)
        return response

    async def close(self) -> None:
        try:
            if self._inner is not None:
                await self._inner.close()
        finally:
            self._inner = None
            await self._stop_service()

    @abstractmethod
    async def _start_service(self) -> int:
        """Start the service; the host loopback port it answers on."""

    @abstractmethod
    async def _stop_service(self) -> None:
        """Stop it and remove what starting it made; safe to call twice."""

    @abstractmethod
    async def _exited(self) -> str | None:
        """Why the service is gone (with its last output lines), or None while it runs."""

    async def _wait_healthy(self, port: int) -> None:
        method, path = parse_healthcheck(self.config.healthcheck)
        url = f"http://127.0.0.1:{port}{path}"
        timeout = self.config.healthcheck_timeout_seconds
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        # The service is on this host's loopback: never through a proxy the environment names.
        async with HttpClient(connections=1, tls=default_ssl_context(), timeout=10.0, env_proxies=False) as client:
            while True:
                if (gone := await self._exited()) is not None:
                    raise AdapterError(f"{self.variant.adapter}: the service stopped before its healthcheck "
                                       f"{method} {path} passed: {gone}")
                try:
                    response = await client.request(method, url)
                    if 200 <= response.status_code < 300:
                        return
                    last = f"HTTP {response.status_code}"
                except HttpError as exc:
                    detail = " ".join(str(exc).split())  # one line (aiohttp's parser errors span several)
                    last = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
                if time.monotonic() > deadline:
                    raise AdapterError(f"{self.variant.adapter}: healthcheck {method} {path} did not answer 2xx "
                                       f"within {timeout:g}s (last: {last}); {await self._last_output()}")
                await asyncio.sleep(HEALTH_POLL_SECONDS)

    @abstractmethod
    async def _last_output(self) -> str:
        """The service's last output lines, for errors."""
