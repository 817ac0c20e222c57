"""A throwaway Docker engine for the sandbox tests (Debian's `docker.io`; never a mock).

Started exactly as ../shared/design/real-components.md says: its own data root, exec root,
pid file and socket in a temporary folder, and its networking off (``--bridge=none
--iptables=false --ip-forward=false --ip-masq=false``), so the host's network is never
touched. Images are built offline from local files: a root folder with Debian's static
busybox, imported with ``docker import``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

BUSYBOX = Path("/bin/busybox")
IMAGE = "local/busybox:1"
STARTUP_SECONDS = 120


@dataclass(frozen=True)
class Engine:
    host: str  # unix:///.../sock
    root: Path

    @property
    def env(self) -> dict[str, str]:
        """This process's environment pointed at the engine (what a user sets with DOCKER_HOST)."""
        return {**os.environ, "DOCKER_HOST": self.host}

    def docker(self, *args: str, input: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["docker", "-H", self.host, *args], input=input, capture_output=True, check=check,
                              timeout=300)


def why_docker_cannot_run() -> str | None:
    """None when dockerd, the docker CLI and a static busybox are installed and we are root."""
    missing = [name for name in ("dockerd", "docker") if shutil.which(name) is None]
    if missing:
        return f"{' and '.join(missing)} not installed (Debian: apt-get install docker.io)"
    if not BUSYBOX.is_file():
        return "no static busybox for the test image (Debian: apt-get install busybox-static)"
    if os.geteuid() != 0:
        return "dockerd needs root"
    return None


@contextmanager
def running_dockerd() -> Iterator[Engine]:
    """Start dockerd in a temporary folder; stop it and remove the folder at the end."""
    # A short path: the socket's path must fit in 108 bytes.
    root = Path(tempfile.mkdtemp(prefix="evalh-dk-", dir="/tmp"))
    sock = root / "sock"
    log = open(root / "log", "wb")
    proc = subprocess.Popen(
        ["dockerd", "--data-root", str(root / "data"), "--exec-root", str(root / "exec"), "--pidfile",
         str(root / "pid"), "-H", f"unix://{sock}", "--bridge=none", "--iptables=false", "--ip-forward=false",
         "--ip-masq=false"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=root)
    engine = Engine(f"unix://{sock}", root)
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while engine.docker("version", check=False).returncode != 0:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"dockerd did not start: {(root / 'log').read_text()[-2000:]}")
            time.sleep(0.2)
        build_busybox_image(engine, IMAGE)
        yield engine
    finally:
        for line in engine.docker("ps", "-aq", check=False).stdout.decode().split():
            engine.docker("rm", "-f", line, check=False)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
        subprocess.run(["umount", "-R", str(root / "exec")], capture_output=True, check=False)
        shutil.rmtree(root, ignore_errors=True)


def why_podman_cannot_run() -> str | None:
    """None when podman (its Docker-compatible service) and the docker CLI can be used here."""
    if shutil.which("podman") is None:
        return "podman is not installed (Debian: apt-get install podman)"
    if shutil.which("docker") is None or not BUSYBOX.is_file():
        return "the docker CLI and busybox-static are needed too"
    if os.geteuid() != 0:
        return "the podman service is run as root here"
    return None


@contextmanager
def running_podman() -> Iterator[Engine]:
    """Podman's Docker-compatible API service with its storage in a temporary folder.

    The same docker CLI (and so the same evalh code) talks to it. Root here lacks
    CAP_SYS_RESOURCE, so containers get nofile/nproc ulimits by default (containers.conf),
    as real-components.md says Podman needs.
    """
    root = Path(tempfile.mkdtemp(prefix="evalh-pm-", dir="/tmp"))
    sock = root / "sock"
    (root / "containers.conf").write_text('[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]\n')
    storage = ["--root", str(root / "root"), "--runroot", str(root / "run"), "--tmpdir", str(root / "tmp")]
    env = {**os.environ, "CONTAINERS_CONF": str(root / "containers.conf")}
    log = open(root / "log", "wb")
    # In its own folder: conmon writes a file `oom` to its working directory when the kernel's
    # out-of-memory killer ends a container (the hostile agents' test; containers/conmon#504),
    # and that was the checkout's.
    proc = subprocess.Popen(["podman", *storage, "system", "service", "--time=0", f"unix://{sock}"], env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=root)
    engine = Engine(f"unix://{sock}", root)
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not sock.exists() or engine.docker("version", check=False).returncode != 0:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"podman system service did not start: {(root / 'log').read_text()[-2000:]}")
            time.sleep(0.2)
        build_busybox_image(engine, IMAGE)
        yield engine
    finally:
        subprocess.run(["podman", *storage, "rm", "-af", "-t", "0"], env=env, capture_output=True, check=False)
        subprocess.run(["podman", *storage, "volume", "rm", "-af"], env=env, capture_output=True, check=False)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
        subprocess.run(["podman", *storage, "system", "reset", "-f"], env=env, capture_output=True, check=False)
        _kill_strays(root)
        shutil.rmtree(root, ignore_errors=True)


def _kill_strays(root: Path) -> None:
    """Podman 4.3 leaves a conmon behind for some exec sessions of a removed container: end
    the processes that name this service's own folder (ours alone), by pid."""
    marker = str(root).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker in (entry / "cmdline").read_bytes():
                os.kill(int(entry.name), signal.SIGKILL)
        except OSError:
            continue


def build_busybox_image(engine: Engine, tag: str, extra: dict[str, bytes] | None = None,
                        changes: tuple[str, ...] = ()) -> None:
    """``tag``: a root file system of static busybox (sh, cp, nc, ...) with /etc/passwd, imported offline."""
    with tempfile.TemporaryDirectory() as folder:
        rootfs = Path(folder)
        (rootfs / "bin").mkdir()
        (rootfs / "etc").mkdir()
        (rootfs / "tmp").mkdir()
        (rootfs / "tmp").chmod(0o1777)  # as in real images: the engine gives a tmpfs /tmp this mode
        (rootfs / "workspace").mkdir()
        shutil.copy2(BUSYBOX, rootfs / "bin" / "busybox")
        applets = subprocess.run([str(BUSYBOX), "--list"], capture_output=True, text=True, check=True).stdout.split()
        for applet in applets:
            if applet != "busybox":
                os.symlink("busybox", rootfs / "bin" / applet)
        (rootfs / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n")
        (rootfs / "etc" / "group").write_text("root:x:0:\nnogroup:x:65534:\n")
        for name, data in (extra or {}).items():
            path = rootfs / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            path.chmod(0o755)
        tar = subprocess.run(["tar", "-C", str(rootfs), "-c", "."], capture_output=True, check=True).stdout
        engine.docker("import", "-c", "ENV PATH=/bin", *[a for c in changes for a in ("-c", c)], "-", tag, input=tar)
