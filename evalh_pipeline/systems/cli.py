"""``cli``: run a command once per cell (an argv list, never a shell) and read its stdout."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from evalh_pipeline.common.containers import LimitHit, Sandbox, explain_failure
from evalh_pipeline.models import EvalCase, TraceOutput
from evalh_pipeline.common.processes import (
    PIPE_GRACE_SECONDS,
    REAP_SECONDS,
    GroupProtocol,
    argv_list,
    describe_exit,
    env_mapping,
    kill_group,
)
from evalh_pipeline.common.masking import MASK, is_secret_key, mask_text
from evalh_pipeline.systems.base import (
    AdapterError,
    SystemAdapter,
    SystemConfigModel,
    SystemResponse,
    Workspace,
    WorkspaceKind,
)
from evalh_pipeline.systems.response import response_from_dict
from evalh_pipeline.common.templating import MissingTemplateField, render_case_template, template_problems

STDERR_TAIL_BYTES = 4096
STDOUT_LIMIT_BYTES = 32 * 1024 * 1024
SNIPPET_CHARS = 500
_NAMES = ("case_json",)


class CliConfig(SystemConfigModel):
    command: list[str] = Field(min_length=1)
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    inherit_env: bool = False
    stdin_template: str | None = None
    output_format: Literal["text", "json"] = "text"
    # eval-harness's key: `json` keeps the whole stdout object as output.structured (see run()).
    parse_stdout_as: Literal["text", "json"] | None = None

    @field_validator("command", mode="before")
    @classmethod
    def _argv_list(cls, value: Any) -> Any:
        return argv_list(value, "[program, arg1, arg2]")

    @field_validator("env", mode="before")
    @classmethod
    def _env_text(cls, value: Any) -> Any:
        return env_mapping(value)

    @field_validator("command")
    @classmethod
    def _command_templates(cls, value: list[str]) -> list[str]:
        if not value[0]:
            raise ValueError("command[0] (the program) must not be empty")
        problems = [f"command[{i}]: {p}" for i, arg in enumerate(value) for p in template_problems(arg, _NAMES)]
        if problems:
            raise ValueError("; ".join(problems))
        return value

    @field_validator("stdin_template")
    @classmethod
    def _stdin_templates(cls, value: str | None) -> str | None:
        if value is not None and (problems := template_problems(value, _NAMES)):
            raise ValueError("; ".join(problems))
        return value

    @model_validator(mode="after")
    def _one_output_key(self) -> "CliConfig":
        if self.parse_stdout_as is not None and "output_format" in self.model_fields_set:
            raise ValueError("give output_format or eval-harness's parse_stdout_as, not both")
        return self


class CliSystem(SystemAdapter[CliConfig]):
    """Runs ``command`` (an argv list, never a shell) once per cell; POSIX only.

    - ``command`` items may hold ``{{ case.<path> }}`` and ``{{ case_json }}`` templates,
      rendered per case; each item stays one argument whatever the value contains.
      Strings render as they are, other values as JSON, null as empty; a path the case
      lacks fails the cell (``adapter_error``). The program is found on the child's
      ``PATH``; a relative path with a slash (``./agent.sh``) is relative to the cwd.
    - ``cwd``: relative to the eval's folder (default: the eval's folder). A workspace,
      when the cell has one, is the cwd instead. A sandboxed workspace (``docker_volume``)
      runs the command inside its container (``docker exec``, cwd ``/workspace``) with
      exactly ``env``; a limit it hits fails the cell with ``sandbox_limit``, named.
    - Environment: the host environment is not passed. The child gets exactly ``env``
      plus the host's ``PATH`` (so programs resolve as in the shell that started the
      run) unless ``env`` sets ``PATH`` itself. With ``inherit_env: true`` it gets the
      host environment with ``env`` layered on top. To pass one host variable, write
      ``env: {HOME: "${HOME}"}``: ``${VAR}`` expands when the eval loads and secret-like
      names are masked in the run's config snapshot. Env values never reach the trace.
    - ``stdin_template``: rendered per case (the templates of :mod:`evalh_pipeline.common.templating`,
      eval-harness's ``{{ input.x }}``, ``{{ case_id }}`` and ``| json`` included; a missing
      field renders empty as in eval-harness; ``{{ case_json }}`` is the whole case as JSON)
      and written to stdin, then stdin is closed; without it stdin is /dev/null.
    - ``output_format: text`` (default): stripped stdout is ``output.final_answer``.
      ``json``: stdout must be one JSON object, read like a ``python_function`` return
      value (``final_answer``, ``tool_calls``, ``metrics``, ...). Logs belong on stderr.
      eval-harness's ``parse_stdout_as`` keeps its meaning: ``text`` is stdout without its
      trailing newlines; ``json`` makes the whole object ``output.structured`` (a non-object
      is ``{"value": ...}``) with its string ``final_answer`` / ``thinking`` as the answer.
    - A non-zero exit, invalid JSON or more than 32 MiB of stdout fail the cell with
      ``adapter_error`` (the message has the exit code and stderr's last 4 KB).
    - ``extra`` records ``exit_code``, ``argv`` (as rendered; URL credentials and the
      values of secret-looking flags such as ``--api-key`` masked) and ``stderr`` (the
      last 4 KB, when there is any).
    - The command runs in its own process group. When the command exits, whatever it
      left running in that group is killed; when the cell is cancelled (the runner's
      timeout), the whole group is killed with SIGKILL and the command reaped before the
      cancellation propagates.
    """

    async def start(self) -> None:
        cfg = self.config
        host = self.context.host_env
        if cfg.inherit_env:
            env = dict(host)
        else:
            env = {"PATH": host.get("PATH", os.defpath)}
        env.update(cfg.env)
        self._env = env
        self._cwd = self._configured_cwd()
        if cfg.cwd is not None and not self._cwd.is_dir():
            raise AdapterError(f"cli cwd {cfg.cwd!r} is not a directory ({self._cwd})")

    def _configured_cwd(self) -> Path:
        """``cwd``, relative to the eval's folder (default: the eval's folder)."""
        cwd = Path(self.config.cwd).expanduser() if self.config.cwd is not None else Path(".")
        return (cwd if cwd.is_absolute() else self.context.eval_dir / cwd).resolve()

    def _child_path(self) -> str:
        """The ``PATH`` the command is looked up on: ``env``'s, else the host's (see the class doc)."""
        cfg = self.config
        return cfg.env.get("PATH") or self.context.host_env.get("PATH", os.defpath)

    def preflight(self, workspace: WorkspaceKind = None) -> list[tuple[str, str]]:
        """``cwd`` a folder, and the program ``command[0]`` found (on the child's ``PATH``, or
        as a path) and executable. Not checked: a templated program, one run in a sandboxed
        workspace's container, a relative path when the cwd is the cell's workspace."""
        cfg = self.config
        cwd = self._configured_cwd()
        if cfg.cwd is not None and workspace is None and not cwd.is_dir():
            return [("cwd", f"{cfg.cwd!r} is not a directory ({cwd})")]
        program = cfg.command[0]
        if "{{" in program or workspace == "sandbox":
            return []
        if "/" not in program:
            if shutil.which(program, path=self._child_path()) is None:
                return [("command", f"program {program!r} is not found on the command's PATH "
                                    f"({mask_text(self._child_path())})")]
            return []
        path = Path(program).expanduser()
        if not path.is_absolute():
            if workspace is not None:
                return []  # relative to the cell's workspace, which exists only during the run
            path = cwd / path
        if not path.is_file():
            return [("command", f"program {program!r} does not exist ({path})")]
        if not os.access(path, os.X_OK):
            return [("command", f"program {program!r} is not executable ({path}: chmod +x it)")]
        return []

    async def run(self, case: EvalCase, workspace: Workspace | None) -> SystemResponse:
        cfg = self.config
        case_dict = case.model_dump(mode="json")
        names = {"case_json": lambda: json.dumps(case_dict, ensure_ascii=False)}
        try:
            argv = [render_case_template(arg, case_dict, names=names) for arg in cfg.command]
            stdin = (None if cfg.stdin_template is None
                     else render_case_template(cfg.stdin_template, case_dict, names=names, strict=False).encode())
        except MissingTemplateField as exc:
            raise AdapterError(f"case {case.id!r} has no field for template {exc.template}") from None
        sandbox = workspace.sandbox if workspace is not None else None
        limits: list[LimitHit] = []
        if sandbox is not None:
            result, limits = await _run_in_sandbox(sandbox, argv, stdin, cfg.env)
        else:
            cwd = workspace.path if workspace is not None else self._cwd
            result = await _run_process(argv, stdin=stdin, cwd=Path(cwd), env=self._env)

        stdout = result.stdout.decode("utf-8", errors="replace")
        stderr = result.stderr_tail.decode("utf-8", errors="replace")
        extra: dict[str, Any] = {"exit_code": result.exit_code, "argv": _masked_argv(argv, self.context.secret_values)}
        if stderr:
            extra["stderr"] = stderr
        if result.overflow:
            raise AdapterError(f"command wrote more than {STDOUT_LIMIT_BYTES:,} bytes to stdout; "
                               f"it was killed", partial=SystemResponse(extra=extra))
        if limits or result.exit_code != 0:
            partial = SystemResponse(extra=extra)
            if stdout.strip():
                partial.output = TraceOutput(final_answer=stdout.strip())
            message = f"command ended with {describe_exit(result.exit_code)}"
            if sandbox is not None and not limits and (hint := explain_failure(stderr + stdout[-4096:], sandbox.spec)):
                limits.append(hint)
            if limits:
                extra["sandbox_limits"] = [hit.name for hit in limits]
                message = f"sandbox limit: {'; '.join(map(str, limits))} ({message})"
            raise AdapterError(message + (f"; stderr (tail):\n{stderr}" if stderr else "; no stderr"),
                               partial=partial, type="sandbox_limit" if limits else "adapter_error")
        if cfg.parse_stdout_as is not None:
            return _eval_harness_output(stdout, cfg.parse_stdout_as, extra)
        if cfg.output_format == "text":
            return SystemResponse(output=TraceOutput(final_answer=stdout.strip()), extra=extra)
        try:
            value = json.loads(stdout)
        except ValueError as exc:
            shown = stdout[:SNIPPET_CHARS] + ("..." if len(stdout) > SNIPPET_CHARS else "")
            raise AdapterError(f"stdout is not valid JSON ({exc}): {shown!r}",
                               partial=SystemResponse(extra=extra)) from None
        try:
            response = response_from_dict(value)
        except AdapterError as exc:
            exc.partial = SystemResponse(extra=extra)
            raise
        response.extra = {**response.extra, **extra}
        return response


def _eval_harness_output(stdout: str, mode: str, extra: dict[str, Any]) -> SystemResponse:
    """stdout read as eval-harness's ``parse_stdout_as`` does."""
    if mode == "text":
        return SystemResponse(output=TraceOutput(final_answer=stdout.rstrip("\n")), extra=extra)
    try:
        value = json.loads(stdout)
    except ValueError as exc:
        shown = stdout[:SNIPPET_CHARS] + ("..." if len(stdout) > SNIPPET_CHARS else "")
        raise AdapterError(f"parse_stdout_as is json but stdout is not valid JSON ({exc}): {shown!r}",
                           partial=SystemResponse(extra=extra)) from None
    if not isinstance(value, dict):
        return SystemResponse(output=TraceOutput(structured={"value": value}), extra=extra)
    answer, thinking = value.get("final_answer"), value.get("thinking")
    return SystemResponse(output=TraceOutput(final_answer=answer if isinstance(answer, str) else None,
                                             thinking=thinking if isinstance(thinking, str) else None,
                                             structured=value), extra=extra)


class _Result:
    __slots__ = ("exit_code", "stdout", "stderr_tail", "overflow")

    def __init__(self, exit_code: int, stdout: bytes, stderr_tail: bytes, overflow: bool) -> None:
        self.exit_code, self.stdout, self.stderr_tail, self.overflow = exit_code, stdout, stderr_tail, overflow


class _Collector(GroupProtocol):
    """Collects stdout (up to a limit) and the tail of stderr."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.overflow = False

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            if self.overflow:
                return
            if len(self.stdout) + len(data) > STDOUT_LIMIT_BYTES:
                self.overflow = True
                kill_group(self.pid)
                return
            self.stdout += data
        else:
            self.stderr += data
            if len(self.stderr) > 2 * STDERR_TAIL_BYTES:
                del self.stderr[:-STDERR_TAIL_BYTES]


async def _run_process(argv: list[str], *, stdin: bytes | None, cwd: Path, env: dict[str, str]) -> _Result:
    loop = asyncio.get_running_loop()
    try:
        transport, proto = await loop.subprocess_exec(
            lambda: _Collector(loop), *argv,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=cwd, env=env, start_new_session=True,
        )
    except (OSError, ValueError) as exc:  # not found, not executable, bad cwd, NUL in an argument
        raise AdapterError(f"cannot start command {argv[0]!r}: {exc}") from None
    pgid = transport.get_pid()  # start_new_session: the command leads its own group
    try:
        if stdin is not None:
            pipe = transport.get_pipe_transport(0)
            assert isinstance(pipe, asyncio.WriteTransport)  # stdin=PIPE
            pipe.write(stdin)  # buffered by the transport; a command that never reads is fine
            pipe.close()
        await asyncio.shield(proto.exited)  # a cancelled await must not cancel the exit signal itself
        kill_group(pgid)  # leftovers of a command that exited
        await asyncio.wait([proto.pipes_closed], timeout=PIPE_GRACE_SECONDS)
        exit_code = transport.get_returncode()
        assert exit_code is not None
        return _Result(exit_code, bytes(proto.stdout), bytes(proto.stderr[-STDERR_TAIL_BYTES:]), proto.overflow)
    finally:
        if not proto.exited.done():  # cancelled (timeout) or failed: kill the group, reap the command
            kill_group(pgid)
            await asyncio.wait([proto.exited], timeout=REAP_SECONDS)
        transport.close()


async def _run_in_sandbox(sandbox: Sandbox, argv: list[str], stdin: bytes | None,
                          env: dict[str, str]) -> tuple[_Result, list[LimitHit]]:
    """``argv`` run inside the workspace's sandbox (cwd /workspace) with exactly ``env``; and
    the limits it hit. Whatever it leaves running is killed; when the cell is cancelled (its
    timeout) the whole container is frozen at once."""
    before = await asyncio.to_thread(sandbox.counters)
    host_argv = sandbox.exec_argv(argv, env_names=env, stdin=stdin is not None)
    try:
        # The docker CLI is a host process: run it like any command (its cwd does not matter).
        result = await _run_process(host_argv, stdin=stdin, cwd=Path(tempfile.gettempdir()), env=sandbox.exec_env(env))
    except BaseException:
        await asyncio.shield(asyncio.to_thread(sandbox.freeze))
        raise
    return result, await asyncio.to_thread(sandbox.settle, before)


def _masked_argv(argv: list[str], secret_values: frozenset[str] = frozenset()) -> list[str]:
    """The argv for the trace: known secrets, URL credentials and secret-looking flag values masked."""
    masked: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            masked.append(MASK)
            hide_next = False
            continue
        if arg.startswith("-"):
            flag, eq, value = arg.lstrip("-").partition("=")
            if is_secret_key(flag):
                if eq:
                    masked.append(f"{arg[: len(arg) - len(value)]}{MASK}")
                else:
                    masked.append(arg)
                    hide_next = True
                continue
        masked.append(mask_text(arg, secret_values))
    return masked
