"""``command``: run a program (argv, never a shell) in a fresh copy of the post-run files."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator, model_validator

from evalh_pipeline.evaluators import eval_harness_keys
from evalh_pipeline.evaluators.artifact_files import ArtifactFiles
from evalh_pipeline.evaluators.base import (
    Evaluator,
    EvaluatorConfigModel,
    EvaluatorContext,
    Verdict,
)
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace
from evalh_pipeline.common.processes import (
    PIPE_GRACE_SECONDS,
    REAP_SECONDS,
    GroupProtocol,
    argv_list,
    describe_exit,
    env_mapping,
    kill_group,
)
from evalh_pipeline.common.containers import (
    ContainerError,
    ContainerRuntime,
    LimitHit,
    RuntimeConfig,
    Sandbox,
    SandboxSpec,
    explain_failure,
)
from evalh_pipeline.common.masking import mask_text

# Host variables Windows needs to start any program; absent elsewhere.
_WINDOWS_BASICS = ("SYSTEMROOT", "PATHEXT", "COMSPEC")


class CommandConfig(EvaluatorConfigModel):
    command: list[str] = Field(min_length=1)
    timeout_seconds: float = Field(default=120.0, gt=0)
    expected_exit_code: int = 0
    env: dict[str, str] = Field(default_factory=dict)
    inherit_env: bool = False
    capture_output: bool = True
    max_output_bytes: int = Field(default=8192, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _eval_harness_keys(cls, data: Any) -> Any:
        return eval_harness_keys.command(data)

    @field_validator("command", mode="before")
    @classmethod
    def _argv_list(cls, value: Any) -> Any:
        return argv_list(value, "[python, -m, unittest]")

    @field_validator("command")
    @classmethod
    def _program(cls, value: list[str]) -> list[str]:
        if not value[0]:
            raise ValueError("command[0] (the program) must not be empty")
        return value

    @field_validator("env", mode="before")
    @classmethod
    def _env_text(cls, value: Any) -> Any:
        return env_mapping(value)


class Command(Evaluator[CommandConfig]):
    """Passes when ``command`` exits with ``expected_exit_code`` (default 0) in a copy of ``after/``.

    - Each evaluation copies the artifact's full post-run tree into a new temporary
      folder, runs there and deletes the folder (also on timeout or error): whatever the
      command writes never reaches the artifact, so re-evaluation is repeatable. The
      copy is not a sandbox — the command runs as the user, with the user's interpreter
      (unless the workspace is a sandbox: see below).
    - ``command`` is an argv list, never a shell string. A relative program with a slash
      (``./check.sh``) is resolved in the copy; a bare name through ``PATH``.
    - Environment: the host environment is not passed. The child gets ``PATH`` (the
      host's, with the folder of the Python running evalh put first, so ``python`` is
      the interpreter evalh runs in, e.g. its venv), ``HOME`` set to the copy (tools
      write caches there, not into the user's home), the Windows basics where they
      exist, then ``env`` on top. ``inherit_env: true`` passes the whole host
      environment instead (``PATH`` still gets the interpreter folder first).
      The host environment is read once, when the eval loads.
    - ``timeout_seconds`` (default 120): the command's whole process group is killed
      and the verdict fails with ``timed_out``. Leftover processes of a command that
      exited are killed too.
    - ``capture_output`` (default true): the last ``max_output_bytes`` (8 KiB) of stdout
      and stderr go into ``detail`` with their full sizes and whether they were cut;
      known secret values are masked. ``false`` records only the sizes.

    - Sandboxed workspaces (``docker_volume``): the copy goes into a fresh sandbox
      container like the cell's (same image and limits, recorded in the artifact) and the
      command runs there with cwd ``/workspace``, never on the host. It gets ``HOME=/tmp``
      and ``env``, nothing of the host; ``inherit_env`` does not apply. A limit it hits
      (processes, memory, disk, processes left running) fails the verdict, named.

    Needs a workspace: an eval without ``workspace:`` gets an error result. POSIX only.
    """

    def __init__(self, name: str, type_name: str, config: dict[str, Any], context: EvaluatorContext | None = None) -> None:
        super().__init__(name, type_name, config, context)
        cfg = self.config
        host = dict(self.context.env)
        if cfg.inherit_env:
            base = host
        else:
            base = {k: host[k] for k in _WINDOWS_BASICS if k in host}
            base["PATH"] = host.get("PATH", os.defpath)
        interpreter_dir = str(Path(sys.executable).parent)
        path = base.get("PATH", os.defpath)
        if path.split(os.pathsep)[0] != interpreter_dir:
            base["PATH"] = interpreter_dir + os.pathsep + path
        self._base_env = base
        self._inherit = cfg.inherit_env
        # For artifacts of sandboxed (docker_volume) workspaces: the engine is the one of this environment.
        self._runtime = ContainerRuntime(RuntimeConfig(), self.context.env)

    async def evaluate(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        if artifact is None:
            raise ValueError(f"{self.type_name} needs a workspace: add a `workspace:` block to the eval "
                             f"(e.g. type: tempdir_snapshot) so runs leave a FilesystemArtifact")
        cfg = self.config
        spec = _sandbox_of(artifact)
        limits: list[LimitHit] = []
        workdir = Path(tempfile.mkdtemp(prefix="evalh-command-"))
        try:
            copied = await ArtifactFiles(artifact).copy_after(workdir)
            started = time.monotonic()
            if spec is not None:
                outcome, limits = await self._run_in_sandbox(spec, workdir)
            else:
                env = dict(self._base_env)
                if not self._inherit:
                    env["HOME"] = str(workdir)
                env.update(cfg.env)
                outcome = await _run(cfg.command, workdir, env, cfg.timeout_seconds, cfg.max_output_bytes)
            elapsed_ms = round((time.monotonic() - started) * 1000)
        finally:
            await asyncio.to_thread(_remove_tree, workdir)

        secrets = self.context.secret_values
        detail: dict[str, Any] = {
            "command": [mask_text(a, secrets) for a in cfg.command],
            "exit_code": outcome.exit_code,
            "expected_exit_code": cfg.expected_exit_code,
            "timed_out": outcome.timed_out,
            "duration_ms": elapsed_ms,
            "files_copied": copied,
        }
        if spec is not None:
            detail["sandbox"] = spec.image
        if limits:
            detail["sandbox_limits"] = [hit.name for hit in limits]
        for stream_name, stream in (("stdout", outcome.stdout), ("stderr", outcome.stderr)):
            detail[f"{stream_name}_bytes"] = stream.total
            if cfg.capture_output:
                detail[stream_name] = mask_text(stream.text(), secrets)
                detail[f"{stream_name}_truncated"] = stream.truncated
        if outcome.timed_out:
            stopped = "the sandbox was frozen and removed" if spec is not None else "the process group was killed"
            return Verdict(False, f"timed out after {cfg.timeout_seconds:g}s; {stopped}",
                           score=0.0, detail=detail)
        if limits:
            return Verdict(False, f"sandbox limit: {'; '.join(map(str, limits))}", score=0.0, detail=detail)
        if outcome.exit_code != cfg.expected_exit_code:
            tail = _last_line(outcome.stderr.text()) or _last_line(outcome.stdout.text())
            reason = f"ended with {describe_exit(outcome.exit_code)}, expected {cfg.expected_exit_code}"
            return Verdict(False, reason + (f": {mask_text(tail, secrets)}" if tail else ""), score=0.0, detail=detail)
        return Verdict(True, f"exited with {cfg.expected_exit_code} as expected", score=1.0, detail=detail)


    async def _run_in_sandbox(self, spec: SandboxSpec, files: Path) -> tuple[_Outcome, list[LimitHit]]:
        """The command in a fresh sandbox holding a copy of ``files`` (cwd /workspace), removed after."""
        cfg = self.config
        env = {"HOME": "/tmp", **cfg.env}  # the host's environment stays on the host
        try:
            sandbox = await asyncio.to_thread(Sandbox.start, self._runtime, spec, f"evalh-command-{self.name}")
        except ContainerError as exc:
            raise ContainerError(f"sandbox not started: {exc}") from None
        try:
            await asyncio.to_thread(sandbox.put_tree, files)
            before = await asyncio.to_thread(sandbox.counters)
            argv = sandbox.exec_argv(cfg.command, env_names=env)
            outcome = await _run(argv, files, sandbox.exec_env(env), cfg.timeout_seconds, cfg.max_output_bytes)
            if outcome.timed_out:
                await asyncio.to_thread(sandbox.freeze)
                return outcome, []
            # What a check leaves running is killed, as on the host; it is not the verdict's concern.
            limits = [hit for hit in await asyncio.to_thread(sandbox.settle, before) if hit.name != "leftovers"]
            if not limits and outcome.exit_code != cfg.expected_exit_code:
                if hint := explain_failure(outcome.stderr.text() + outcome.stdout.text(), spec):
                    limits.append(hint)
            return outcome, limits
        finally:
            await asyncio.shield(asyncio.to_thread(sandbox.remove))


def _sandbox_of(artifact: FilesystemArtifact) -> SandboxSpec | None:
    """The isolation of the workspace that made ``artifact`` (docker_volume), or None (host)."""
    recorded = (artifact.model_extra or {}).get("sandbox")
    return SandboxSpec.model_validate(recorded) if isinstance(recorded, dict) else None


class _Tail:
    """The last ``limit`` bytes of a stream, and how many bytes it had in all."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.buffer = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        self.buffer += data
        if len(self.buffer) > 2 * self.limit + 65536:  # trim now and then, not on every chunk
            del self.buffer[:len(self.buffer) - self.limit]

    @property
    def truncated(self) -> bool:
        return self.total > self.limit

    def text(self) -> str:
        data = bytes(self.buffer[-self.limit:]) if self.limit else b""
        return data.decode("utf-8", errors="replace")


class _Outcome:
    def __init__(self, exit_code: int | None, timed_out: bool, stdout: _Tail, stderr: _Tail) -> None:
        self.exit_code, self.timed_out, self.stdout, self.stderr = exit_code, timed_out, stdout, stderr


class _Collector(GroupProtocol):
    """Keeps the tails of stdout and stderr."""

    def __init__(self, loop: asyncio.AbstractEventLoop, limit: int) -> None:
        super().__init__(loop)
        self.streams = {1: _Tail(limit), 2: _Tail(limit)}

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.streams[fd].add(data)


async def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float, limit: int) -> _Outcome:
    loop = asyncio.get_running_loop()
    try:
        transport, proto = await loop.subprocess_exec(
            lambda: _Collector(loop, limit), *argv,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=cwd, env=env, start_new_session=True,
        )
    except FileNotFoundError:
        raise FileNotFoundError(f"cannot start command: {argv[0]!r} not found "
                                f"(PATH={env.get('PATH', '')!r})") from None
    except (OSError, ValueError) as exc:  # not executable, NUL in an argument
        raise OSError(f"cannot start command {argv[0]!r}: {exc}") from None
    pgid = transport.get_pid()  # start_new_session: the command leads its own group
    try:
        done, _ = await asyncio.wait([proto.exited], timeout=timeout)
        timed_out = not done
        kill_group(pgid)  # on timeout the command itself; otherwise what it left running
        if timed_out:
            await asyncio.wait([proto.exited], timeout=REAP_SECONDS)
        await asyncio.wait([proto.pipes_closed], timeout=PIPE_GRACE_SECONDS)
        exit_code = None if timed_out else transport.get_returncode()
        return _Outcome(exit_code, timed_out, proto.streams[1], proto.streams[2])
    finally:
        if not proto.exited.done():  # cancelled: kill the group and reap before propagating
            kill_group(pgid)
            await asyncio.wait([proto.exited], timeout=REAP_SECONDS)
        transport.close()


def _remove_tree(path: Path) -> None:
    def make_writable(func: Any, name: str, _exc: Any) -> None:
        # A read-only folder (copied modes) cannot lose its entries until it is writable.
        os.chmod(os.path.dirname(name), stat.S_IRWXU)
        if os.path.isdir(name) and not os.path.islink(name):
            os.chmod(name, stat.S_IRWXU)
        func(name)

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=make_writable)
    else:
        shutil.rmtree(path, onerror=make_writable)


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""

