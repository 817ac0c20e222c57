"""Containers through the Docker command line (an argv, never a shell).

Used by the ``docker_volume`` workspace (the cell's sandbox), the ``command`` evaluator (a
fresh sandbox over a cell's after-state) and the ``docker`` system (a service container).

Why the CLI rather than an SDK: one code path speaks to Docker Engine and to Podman (its
Docker-compatible service, ``podman system service``, reached with ``docker_host``; or
Podman's own CLI with ``binary: podman``), and no extra dependency is needed.

A sandbox is one long-lived container per cell whose first process is ``sh`` waiting on an
open, empty stdin (so the image needs ``sh``), with the workspace on a size-limited tmpfs
volume at ``/workspace``. Commands run in it with ``exec``. Keeping the container alive
between commands keeps the volume mounted and the container's cgroup readable, which is how
a command's limit hits are told apart (``pids.events``, the OOM-kill counter, a full volume).
The first process is the namespace's init, which ``kill -9 -1`` cannot reach: that is how
what a command leaves running is killed without losing the workspace.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import tarfile
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalh_pipeline.errors import InfrastructureError

# Client-side variables the docker (or podman) CLI reads; nothing else of the host reaches it.
_CLIENT_ENV = ("PATH", "HOME", "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT", "DOCKER_CERT_PATH",
               "DOCKER_TLS_VERIFY", "DOCKER_API_VERSION", "CONTAINER_HOST", "CONTAINERS_CONF",
               "XDG_RUNTIME_DIR", "TMPDIR")
WORKDIR = "/workspace"
LABEL = "evalh.sandbox"
# Below this many free bytes the workspace volume counts as full (tmpfs keeps a little back).
_FULL_BYTES = 64 * 1024
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


def parse_size(value: str | int) -> int:
    """``512m``, ``1g``, ``64k``, ``1.5GiB`` or a number of bytes -> bytes."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    match = _SIZE.match(str(value))
    if match is None:
        raise ValueError(f"not a size: {value!r} (write a number of bytes or e.g. 512m, 1g)")
    number, unit = float(match.group(1)), match.group(2).lower()
    return int(number * 1024 ** " kmgt".index(unit or " "))


def show_size(size: int) -> str:
    """Bytes as the largest whole binary unit: ``1 GiB``, ``512 MiB``, ``70000 B``."""
    for unit, power in (("GiB", 3), ("MiB", 2), ("KiB", 1)):
        if size % 1024 ** power == 0:
            return f"{size // 1024 ** power} {unit}"
    return f"{size} B"


class ContainerError(InfrastructureError, RuntimeError):
    """A container command failed (its stderr is in the message) or could not start."""


class RuntimeConfig(BaseModel):
    """Which engine to talk to: ``binary`` (docker or podman) and ``docker_host`` (its API socket).

    ``docker_host`` unset: the CLI's own default (``DOCKER_HOST`` of the environment evalh runs in).
    """

    model_config = ConfigDict(extra="forbid")

    binary: str = "docker"
    docker_host: str | None = None


class SandboxSpec(RuntimeConfig):
    """The isolation of a sandbox; every limit has a default, loosened only by naming it.

    - ``network: none`` (default): no network at all; ``bridge`` must be asked for.
    - ``memory``: what the processes may use besides the workspace and ``/tmp`` (both are
      in memory and are added to the container's limit, so a full disk is a disk error,
      not an out-of-memory kill).
    - ``disk``: the size of ``/workspace``; ``tmp_size``: of ``/tmp``; ``pids``: processes;
      ``cpus``: CPU time, as a number of cores.
    - ``user``: the non-root ``uid:gid`` every process runs as (files are given to it).
    - ``ulimits``: extra ``--ulimit`` values (Podman run as root needs nofile/nproc here).
    """

    image: str = Field(min_length=1)
    user: str = "65534:65534"
    network: Literal["none", "bridge"] = "none"
    cpus: float = Field(default=1.0, gt=0)
    memory: str | int = "1g"
    pids: int = Field(default=256, ge=8)
    disk: str | int = "1g"
    tmp_size: str | int = "64m"
    ulimits: dict[str, int] = Field(default_factory=dict)

    @field_validator("memory", "disk", "tmp_size")
    @classmethod
    def _size(cls, value: str | int) -> str | int:
        if parse_size(value) < 1024 * 1024:
            raise ValueError(f"must be at least 1m, got {value!r}")
        return value

    @field_validator("user")
    @classmethod
    def _numeric_user(cls, value: str) -> str:
        if not re.fullmatch(r"[1-9]\d*:\d+", value):
            raise ValueError(f"user must be a non-root numeric uid:gid such as 65534:65534, got {value!r}")
        return value

    @property
    def uid_gid(self) -> tuple[int, int]:
        uid, gid = self.user.split(":")
        return int(uid), int(gid)


def isolation_args(*, user: str | None, read_only: bool, tmp_size: str | int, cap_drop_all: bool = True) -> list[str]:
    """The ``docker run`` options every evalh container gets (the sandbox's and the docker system's).

    A read-only root with a tmpfs ``/tmp``, no capabilities, no privilege gain (setuid), a non-root
    user; ``user=None``, ``read_only=False``, ``cap_drop_all=False`` relax one each.
    """
    args = ["--security-opt", "no-new-privileges"]
    if read_only:
        args += ["--read-only", "--tmpfs", f"/tmp:rw,exec,nosuid,nodev,size={parse_size(tmp_size)},mode=1777"]
    if cap_drop_all:
        args += ["--cap-drop", "ALL"]
    if user is not None:
        args += ["--user", user]
    return args


def client_env(env: Mapping[str, str] | None = None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The CLI's environment: its own settings from ``env`` (default: this process's), then ``extra``."""
    source = os.environ if env is None else env
    found = {k: source[k] for k in _CLIENT_ENV if k in source}
    found.setdefault("PATH", os.defpath)
    found.update(extra or {})
    return found


class ContainerRuntime:
    """Runs the docker (or podman) CLI with an argv; raises :class:`ContainerError` on failure."""

    def __init__(self, config: RuntimeConfig, env: Mapping[str, str] | None = None) -> None:
        self.config = config
        self.env = client_env(env)
        host = config.docker_host
        podman = Path(config.binary).name.startswith("podman")
        # Absolute: a command's env may set PATH for the container, not for finding the CLI.
        binary = shutil.which(config.binary, path=self.env["PATH"]) or config.binary
        self.base = [binary, *((["--url", host] if podman else ["-H", host]) if host else [])]

    def run(self, *args: str, stdin: bytes | None = None, timeout: float = 120) -> bytes:
        """``<binary> args...``; its stdout."""
        argv = [*self.base, *args]
        try:
            done = subprocess.run(argv, input=stdin, capture_output=True, env=self.env, timeout=timeout, check=False)
        except FileNotFoundError:
            raise ContainerError(f"{self.config.binary!r} was not found on PATH: sandboxes need the docker "
                                 f"(or podman) command line and a running engine") from None
        except subprocess.TimeoutExpired:
            raise ContainerError(f"`{self.config.binary} {' '.join(args[:2])}` did not finish within {timeout:g}s") from None
        if done.returncode != 0:
            message = done.stderr.decode("utf-8", "replace").strip()[-2000:]
            raise ContainerError(f"`{self.config.binary} {' '.join(args[:2])}` failed: {message or 'no error output'}")
        return done.stdout

    def quiet(self, *args: str) -> bool:
        """Like :meth:`run` for clean-up steps: True when it worked."""
        try:
            self.run(*args)
        except ContainerError:
            return False
        return True

    def state(self, container: str) -> dict[str, Any]:
        """``State`` of ``docker inspect`` (Status, Pid, OOMKilled, ExitCode, ...)."""
        data = json.loads(self.run("inspect", "--type", "container", "--format", "{{json .State}}", container))
        return data if isinstance(data, dict) else {}

    def logs_tail(self, container: str, lines: int = 20) -> str:
        """The container's last ``lines`` lines of output (stdout and stderr), or why not."""
        argv = [*self.base, "logs", "--tail", str(lines), container]
        try:
            done = subprocess.run(argv, capture_output=True, env=self.env, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"(no logs: {exc})"
        text = (done.stdout + done.stderr).decode("utf-8", "replace").strip()
        return text or "(the container wrote nothing)"


@dataclass
class Counters:
    """A container's cgroup counters: processes refused (pids limit), OOM kills, live processes."""

    pids_refused: int = 0
    oom_kills: int = 0
    procs: frozenset[int] = frozenset()


@dataclass(frozen=True)
class LimitHit:
    """One limit a command ran into: ``name`` (pids, memory, disk, leftovers, read_only, network)
    and what happened, in words."""

    name: str
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass
class Sandbox:
    """One running sandbox container with its workspace volume (see the module's docstring)."""

    runtime: ContainerRuntime
    spec: SandboxSpec
    container: str
    volume: str
    mountpoint: Path | None = None
    init_pid: int = 0
    frozen: bool = False
    _cgroups: dict[str, Path] = field(default_factory=dict)

    @classmethod
    def start(cls, runtime: ContainerRuntime, spec: SandboxSpec, prefix: str, labels: Mapping[str, str] | None = None) -> Sandbox:
        """Create the volume and start the container; nothing is left behind when it fails."""
        name = f"{_safe(prefix)[:60]}-{uuid.uuid4().hex[:12]}"
        uid, gid = spec.uid_gid
        label_args = [a for k, v in {LABEL: "1", **(labels or {})}.items() for a in ("--label", f"{k}={v}")]
        runtime.run("volume", "create", "--driver", "local", "--opt", "type=tmpfs", "--opt", "device=tmpfs",
                    # nr_blocks (pages), not size: Podman reads size= as an XFS quota it cannot set here.
                    "--opt", f"o=nr_blocks={-(-parse_size(spec.disk) // _PAGE)},uid={uid},gid={gid},mode=0755",
                    *label_args, name)
        try:
            memory = parse_size(spec.memory) + parse_size(spec.disk) + parse_size(spec.tmp_size)
            ulimits = [a for k, v in spec.ulimits.items() for a in ("--ulimit", f"{k}={v}:{v}")]
            container = runtime.run(
                "run", "-d", "-i", "--name", name, *label_args,
                "--network", spec.network, *isolation_args(user=spec.user, read_only=True, tmp_size=spec.tmp_size),
                "--memory", str(memory), "--memory-swap", str(memory), "--cpus", f"{spec.cpus:g}",
                "--pids-limit", str(spec.pids), *ulimits,
                "-v", f"{name}:{WORKDIR}", "-w", WORKDIR, "--entrypoint", "sh", spec.image,
            ).decode().strip()
        except BaseException:
            runtime.quiet("rm", "-f", name)
            runtime.quiet("volume", "rm", "-f", name)
            raise
        sandbox = cls(runtime, spec, container, name)
        try:
            sandbox._locate()
        except BaseException:
            sandbox.remove()
            raise
        return sandbox

    def _locate(self) -> None:
        """Find the init's pid, cgroups and the volume's mount point (readable when the engine is local)."""
        state = self.runtime.state(self.container)
        if state.get("Status") != "running":
            raise ContainerError(f"the sandbox container of image {self.spec.image!r} stopped at once "
                                 f"(exit code {state.get('ExitCode')}): the image needs `sh`; "
                                 f"logs: {self.runtime.logs_tail(self.container)}")
        self.init_pid = int(state.get("Pid") or 0)
        self._cgroups = _cgroup_dirs(self.init_pid)
        try:
            mount = self.runtime.run("volume", "inspect", "--format", "{{.Mountpoint}}", self.volume).decode().strip()
            self.mountpoint = Path(mount) if mount and os.path.ismount(mount) else None
        except (ContainerError, OSError):
            self.mountpoint = None

    @property
    def handle(self) -> dict[str, Any]:
        """What a python_function or plugin system gets in ``workspace.metadata['sandbox']``."""
        return {"container": self.container, "volume": self.volume, "workdir": WORKDIR, "user": self.spec.user,
                "binary": self.runtime.config.binary, "docker_host": self.runtime.config.docker_host,
                "exec_prefix": self.exec_argv([], env_names=())}

    # -- files ---------------------------------------------------------------------------

    def put_tree(self, source: Path) -> None:
        """Copy a host folder's contents to ``/workspace``, owned by the sandbox user (streamed)."""
        uid, gid = self.spec.uid_gid
        argv = [*self.runtime.base, "cp", "-", f"{self.container}:{WORKDIR}"]
        with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              env=self.runtime.env) as proc:
            assert proc.stdin is not None and proc.stderr is not None
            try:
                with tarfile.open(fileobj=proc.stdin, mode="w|", format=tarfile.PAX_FORMAT) as archive:
                    for path in sorted(source.rglob("*")):
                        _add(archive, path, path.relative_to(source).as_posix(), uid, gid)
                proc.stdin.close()
            except BrokenPipeError:
                pass  # the CLI failed: its stderr says why
            error = proc.stderr.read()
            proc.wait()
        if proc.returncode != 0:
            raise ContainerError(f"`{self.runtime.config.binary} cp` into /workspace failed: "
                                 f"{error.decode('utf-8', 'replace').strip()}")

    def get_tree(self, destination: Path) -> None:
        """Copy ``/workspace``'s contents into ``destination`` (created), modes and links as they are."""
        destination.mkdir(parents=True, exist_ok=True)
        argv = [*self.runtime.base, "cp", f"{self.container}:{WORKDIR}/.", "-"]
        with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.runtime.env) as proc:
            assert proc.stdout is not None
            unpacker = _Unpacker(destination)
            try:
                with tarfile.open(fileobj=proc.stdout, mode="r|") as archive:
                    for member in archive:
                        unpacker.add(archive, member)
                unpacker.finish()
            except (tarfile.TarError, OSError) as exc:
                proc.kill()
                raise ContainerError(f"could not read the sandbox's files: {exc}") from None
            finally:
                error = proc.stderr.read() if proc.stderr else b""
                proc.wait()
        if proc.returncode != 0:
            raise ContainerError(f"`{self.runtime.config.binary} cp` of /workspace failed: "
                                 f"{error.decode('utf-8', 'replace').strip()}")

    # -- commands ------------------------------------------------------------------------

    def exec_argv(self, argv: list[str], *, env_names: Iterable[str], stdin: bool = False,
                  workdir: str = WORKDIR) -> list[str]:
        """The host argv that runs ``argv`` in the sandbox; ``env_names`` are read from the CLI's
        environment (so values never appear in a process list)."""
        env_args = [a for name in env_names for a in ("-e", name)]
        return [*self.runtime.base, "exec", *(["-i"] if stdin else []), "-u", self.spec.user, "-w", workdir,
                *env_args, self.container, *argv]

    def exec_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """The CLI's environment for :meth:`exec_argv` with ``env`` passed into the sandbox."""
        return {**self.runtime.env, **env}

    def counters(self) -> Counters | None:
        """The cgroup counters now, or None when the engine's cgroups cannot be read from here."""
        if not self._cgroups:
            return None
        pids = self._cgroups.get("pids")
        memory = self._cgroups.get("memory")
        refused = _read_key(pids / "pids.events", "max") if pids else 0
        oom = 0
        if memory is not None:
            oom = max(_read_key(memory / "memory.events", "oom_kill"), _read_key(memory / "memory.oom_control", "oom_kill"))
        procs: set[int] = set()
        if pids is not None:
            try:
                procs = {int(p) for p in (pids / "cgroup.procs").read_text().split()}
            except OSError:
                procs = set()
        live = frozenset(p for p in procs if p != self.init_pid and not _zombie(p))
        return Counters(refused, oom, live)

    def volume_full(self) -> bool | None:
        """True when ``/workspace`` has (almost) no space left; None when it cannot be seen from here."""
        if self.mountpoint is None:
            return None
        try:
            stats = os.statvfs(self.mountpoint)
        except OSError:
            return None
        return stats.f_bavail * stats.f_frsize < _FULL_BYTES

    def settle(self, before: Counters | None) -> list[LimitHit]:
        """After a command: kill what it left running; return the limits it hit."""
        after = self.counters()
        hits: list[LimitHit] = []
        leftovers = len(after.procs) if after is not None else 0
        if not self.frozen and not self.runtime.quiet(*self.exec_argv(["sh", "-c", "kill -9 -1 2>/dev/null; true"],
                                                                      env_names=())[len(self.runtime.base):]):
            self.freeze()  # not even one more process could start (a fork bomb): stop everything
        if after is not None and before is not None:
            if after.pids_refused > before.pids_refused:
                hits.append(LimitHit("pids", f"process limit ({self.spec.pids} processes) reached: "
                                     f"{after.pids_refused - before.pids_refused} process starts were refused"))
            if after.oom_kills > before.oom_kills:
                hits.append(LimitHit("memory", f"memory limit ({show_size(parse_size(self.spec.memory))}) reached: "
                                     f"the out-of-memory killer ended {after.oom_kills - before.oom_kills} process(es)"))
        if self.volume_full():
            hits.append(LimitHit("disk", f"disk limit ({show_size(parse_size(self.spec.disk))} for /workspace) "
                                         "reached: no space left"))
        if leftovers:
            hits.append(LimitHit("leftovers", f"processes left running: {leftovers} process(es) outlived the "
                                              "command and were killed"))
        return hits

    def freeze(self) -> None:
        """Stop every process at once (the engine's freezer); the files stay readable."""
        if not self.frozen:
            self.frozen = self.runtime.quiet("pause", self.container)

    def remove(self) -> None:
        """Remove the container and its volume; safe to call twice."""
        self.runtime.quiet("rm", "-f", "-v", self.container)
        self.runtime.quiet("volume", "rm", "-f", self.volume)


def explain_failure(text: str, spec: SandboxSpec) -> LimitHit | None:
    """The sandbox rule a failed command's output points at (None: none recognised)."""
    lowered = text.lower()
    if "read-only file system" in lowered:
        return LimitHit("read_only", f"the sandbox's root file system is read-only: only {WORKDIR} and /tmp are writable")
    if spec.network == "none" and any(s in lowered for s in ("network is unreachable", "network unreachable",
                                                                 "bad address", "name resolution", "could not resolve",
                                                                 "name or service not known")):
        return LimitHit("network", "the sandbox has no network (network: none)")
    if "no space left on device" in lowered:
        return LimitHit("disk", f"the sandbox's disk limit ({show_size(parse_size(spec.disk))} for /workspace, "
                                f"{show_size(parse_size(spec.tmp_size))} for /tmp) was reached")
    return None


def _safe(text: str) -> str:
    cleaned = re.sub(r"[^a-zA-Z0-9_.-]+", "-", text).strip("-.") or "x"
    return cleaned if cleaned[0].isalnum() else f"x{cleaned}"


def _cgroup_dirs(pid: int) -> dict[str, Path]:
    """Host folders of ``pid``'s pids and memory cgroups (cgroup v1 or v2); empty when unreadable."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return {}
    found: dict[str, Path] = {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            unified = Path("/sys/fs/cgroup") / path.lstrip("/")
            if (unified / "pids.events").exists():
                found.setdefault("pids", unified)
                found.setdefault("memory", unified)
        for name in controllers.split(","):
            if name in ("pids", "memory"):
                folder = Path("/sys/fs/cgroup") / name / path.lstrip("/")
                if folder.is_dir():
                    found[name] = folder
    return found


def _read_key(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True  # gone


def _add(archive: tarfile.TarFile, path: Path, name: str, uid: int, gid: int) -> None:
    """One fixture entry, owned by ``uid:gid``; fifos and sockets have no content to seed."""
    info = archive.gettarinfo(str(path), arcname=name)
    if not (info.isreg() or info.isdir() or info.issym()):
        return
    info.uid, info.gid, info.uname, info.gname = uid, gid, "", ""
    if info.isreg():
        with open(path, "rb") as handle:
            archive.addfile(info, handle)
    else:
        archive.addfile(info)


class _Unpacker:
    """Writes a ``docker cp`` archive of untrusted files under ``destination``, and nowhere else.

    Every entry's parent must be a folder this archive made (the archive lists folders before
    their contents), so nothing is written through a link; links are made as links, never
    followed; hard links must name a file of this archive; devices are skipped; set-id bits
    are dropped. Folders get their modes at the end (owner rwx kept, so the walk can enter).
    """

    def __init__(self, destination: Path) -> None:
        self.root = destination
        self.folders: dict[str, int] = {"": 0o755}
        self.files: set[str] = set()

    def add(self, archive: tarfile.TarFile, member: tarfile.TarInfo) -> None:
        name = member.name.removeprefix("./").rstrip("/")
        parts = name.split("/")
        if name in ("", ".") or name.startswith("/") or any(p in ("", ".", "..") for p in parts):
            return
        parent = "/".join(parts[:-1])
        if parent not in self.folders or name in self.folders:
            return  # under a link, or twice: not a path this archive made
        target = os.path.join(self.root, name)
        mode = member.mode & 0o777
        if member.isdir():
            os.mkdir(target, 0o700)
            self.folders[name] = mode
        elif member.isreg():
            source = archive.extractfile(member)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as handle:
                if source is not None:
                    shutil.copyfileobj(source, handle, 1 << 20)
                os.fchmod(handle.fileno(), mode)
            os.utime(target, (member.mtime, member.mtime), follow_symlinks=False)
            self.files.add(name)
        elif member.issym():
            os.symlink(member.linkname, target)
        elif member.islnk():
            linked = member.linkname.removeprefix("./")
            if linked in self.files:
                os.link(os.path.join(self.root, linked), target, follow_symlinks=False)
                self.files.add(name)
        elif member.isfifo():
            os.mkfifo(target, mode)

    def finish(self) -> None:
        for name, mode in sorted(self.folders.items(), reverse=True):
            if name:
                os.chmod(os.path.join(self.root, name), mode | stat.S_IRWXU)


