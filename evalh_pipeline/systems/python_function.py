"""``python_function``: call ``module:callable`` once per cell, in-process or in worker processes.

By default the target runs in this process: a sync target on daemon threads, so one that
blocks never stalls the other cells; an async target on the runner's own event loop, as
any coroutine of the run (no hand-over to another thread per call), where the cell's
timeout cancels it. Such a target must not block its loop (``time.sleep`` in an ``async
def``) nor swallow its cancellation: either stalls the whole run. A sync call that never
returns is abandoned when its cell times out: its thread cannot be stopped, but it never
keeps the process alive.

``isolation: thread`` also runs an async target on daemon threads, each call on an event
loop of its own (what it leaves running there is cancelled when the call ends), so a target
that blocks stalls only its own call, which the runner still times out (and cancels there,
if the target ever lets its loop run again).
``isolation: process`` calls it in worker processes
(:mod:`evalh_pipeline.systems.python_worker`): a cell that times out has its worker killed
(its whole session), so nothing the target started survives its cell, and an async target
that blocks its event loop (``time.sleep``) cannot stall the run; a target that calls
``os._exit`` or crashes the interpreter ends only its worker: the choice for untrusted targets.
Figures in benchmarks/README.md.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
import json
import os
import queue
import signal
import sys
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import ConfigDict, Field
from pydantic_core import from_json

from evalh_pipeline.errors import CellError
from evalh_pipeline.models import EvalCase
from evalh_pipeline.systems.base import (
    AdapterError,
    RaisedBySystem,
    SystemAdapter,
    SystemConfigModel,
    SystemResponse,
    Workspace,
    WorkspaceKind,
)
from evalh_pipeline.systems.response import response_from_dict


# Variant fields the target is not given.
_NOT_FOR_TARGET = frozenset({"timeout_seconds"})


class PythonFunctionConfig(SystemConfigModel):
    # The function may read its own keys from variant["config"], as in eval-harness.
    model_config = ConfigDict(extra="allow")

    target: str = Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
    init_kwargs: dict[str, Any] | None = None
    # None: sync targets on threads, async ones on the runner's loop; thread: async ones on
    # threads too; process: in worker processes, killed when a cell times out.
    isolation: Literal["thread", "process"] | None = None
    # Worker processes with isolation: process (default: the run's concurrency, at most the CPUs).
    workers: int | None = Field(default=None, ge=1)


class PythonFunctionSystem(SystemAdapter[PythonFunctionConfig]):
    """Calls ``target(case: dict, variant: dict)``; see the module doc for ``isolation``.

    The eval's folder and the working directory are importable. With a workspace,
    ``variant["_workspace_path"]`` holds its path, as eval-harness does; a ``docker_volume``
    workspace's container is in ``variant["_workspace_sandbox"]`` (``container``,
    ``exec_prefix``, ...): the function changes the files through it.
    """

    @property
    def stops_on_timeout(self) -> bool:
        """True when a timed-out call is certainly over (its worker killed) when ``run`` returns."""
        return self.config.isolation == "process"

    def preflight(self, workspace: WorkspaceKind = None) -> list[tuple[str, str]]:
        """Import the target's module and find its callable, as :meth:`start` does (the eval's
        folder first on ``sys.path``); ``init_kwargs`` are not applied (nothing is built)."""
        try:
            resolve_target(self.config.target, self.context.eval_dir, None)
        except AdapterError as exc:
            return [("target", str(exc))]
        return []

    async def start(self) -> None:
        # Encoded once per run (a variant JSON cannot hold fails here, at start, not in every
        # cell); each cell's target gets its own copy, decoded from these bytes.
        self._variant_json = self.variant.model_dump_json(exclude=set(_NOT_FOR_TARGET)).encode()
        self._workers: WorkerPool | None = None
        if self.config.isolation == "process":
            size = self.config.workers or max(1, min(self.context.max_concurrency, os.cpu_count() or 1))
            self._workers = WorkerPool(self.config.target, self.context.eval_dir, self.config.init_kwargs, size)
            await self._workers.start()
            return
        self._fn = resolve_target(self.config.target, self.context.eval_dir, self.config.init_kwargs)
        # Async targets run on the runner's loop (a coroutine is the runner's to await and
        # cancel) unless thread isolation is asked for; sync ones must not block the loop.
        self._on_loop = is_async_callable(self._fn) and self.config.isolation is None
        self._threads = None if self._on_loop else DaemonThreads(f"evalh-{self.variant.name}")

    async def run(self, case: EvalCase, workspace: Workspace | None) -> SystemResponse:
        case_dict = case.model_dump(mode="json")
        # Each cell gets its own copy (targets may mutate it): the variant's JSON decoded,
        # the same dict as model_dump(mode="json") in a fifth of the time.
        variant_dict = from_json(self._variant_json)
        if workspace is not None:
            variant_dict["_workspace_path"] = str(workspace.path)
            if "sandbox" in workspace.metadata:  # docker_volume: the files are in the container
                variant_dict["_workspace_sandbox"] = workspace.metadata["sandbox"]
        if self._workers is not None:
            return await self._workers.call(case_dict, variant_dict)
        try:
            if self._on_loop:
                value = await self._fn(case_dict, variant_dict)
            else:
                value = await self._on_thread(case_dict, variant_dict)
            if not isinstance(value, dict) and inspect.isawaitable(value):  # a dict, the usual answer, is not
                value = await value
        except (Exception, asyncio.CancelledError):
            raise  # the runner tells a cancelled run from a target that raised CancelledError
        except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt, ... are the cell's
            raise RaisedBySystem(exc) from None
        return response_from_dict(value)

    async def _on_thread(self, case: dict[str, Any], variant: dict[str, Any]) -> Any:
        """The target called on one of the daemon threads; an async one run to its end on an
        event loop of that call's own, cancelled there when the cell stops waiting for it."""
        assert self._threads is not None  # noqa: S101 - not on the loop: started with threads
        call = functools.partial(self._fn, case, variant)
        if not is_async_callable(self._fn):
            return await asyncio.wrap_future(self._threads.submit(call))
        running: Future[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = Future()
        try:
            return await asyncio.wrap_future(self._threads.submit(functools.partial(_run_on_own_loop, call, running)))
        except asyncio.CancelledError:
            if running.done():  # the call started: cancel it on its loop (a target blocking it sees this once it lets go)
                loop, task = running.result()
                try:
                    loop.call_soon_threadsafe(task.cancel)
                except RuntimeError:
                    pass  # that loop is closed: the call is over
            raise

    async def close(self) -> None:
        if self._workers is not None:
            await self._workers.close()
            return
        # Idle threads end now; a thread stuck in a call is left to end with the process.
        if self._threads is not None:
            self._threads.shutdown()


def _run_on_own_loop(call: Callable[[], Any],
                     running: Future[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]]) -> Any:
    """On a daemon thread: ``call()`` (a coroutine) run on a new event loop, which is closed
    after it (what the target left running there cancelled and finalized); ``running`` is
    set to the loop and the call's task once it runs."""
    async def main() -> tuple[Any, BaseException | None]:
        running.set_result((asyncio.get_running_loop(), asyncio.current_task()))  # type: ignore[arg-type]
        try:
            return await call(), None
        except BaseException as exc:  # noqa: BLE001 - raised below, outside the loop's machinery
            return None, exc

    # What the target raised is raised here, not through asyncio.run: its traceback then
    # shows the target's frames and ours, not the event loop's internals.
    value, raised = asyncio.run(main())
    if raised is not None:
        raise raised
    return value


def is_async_callable(fn: Any) -> bool:
    """True for an async function, or a callable object with an async ``__call__``."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - a callable object with an async __call__
    )


def resolve_target(target: str, eval_dir: Path | str, init_kwargs: dict[str, Any] | None) -> Callable[..., Any]:
    """Import ``module:callable`` with the eval's folder (then the working directory) importable."""
    module_name, _, attr = target.partition(":")
    eval_dir = Path(eval_dir).resolve()
    for folder in (".", str(eval_dir)):  # the eval's folder ends up first
        if folder in sys.path:
            sys.path.remove(folder)
        sys.path.insert(0, folder)
    _forget_if_shadowed(module_name, eval_dir)
    try:
        module = importlib.import_module(module_name)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - any import failure (even sys.exit) is the user's target
        raise AdapterError(f"cannot import module {module_name!r} for target {target!r}: "
                           f"{type(exc).__name__}: {exc}") from None
    fn = getattr(module, attr, None)
    if fn is None or not callable(fn):
        raise AdapterError(f"{module_name!r} has no callable {attr!r}")
    if init_kwargs is not None:
        fn = fn(**init_kwargs)
    function: Callable[..., Any] = fn
    return function


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


class DaemonThreads:
    """A thread pool of daemon threads that grows past stuck calls.

    concurrent.futures' pool joins its threads at interpreter exit, so one target that
    never returns would keep ``evalh`` alive forever; and a stuck thread would hold a
    slot that later cells wait for. Here an idle thread takes the next call, a new one is
    started when none is idle, and a thread idle for a while ends.
    """

    IDLE_SECONDS = 30.0

    def __init__(self, name: str) -> None:
        self._name = name
        self._calls: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._closed = False

    def submit(self, fn: Callable[[], Any]) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1
        self._calls.put((future, fn))
        if start:
            threading.Thread(target=self._serve, daemon=True, name=self._name).start()
        return future

    def shutdown(self) -> None:
        """Let every idle thread end; calls still running end their threads when they return."""
        with self._lock:
            idle, self._idle, self._closed = self._idle, 0, True
        for _ in range(idle):
            self._calls.put(None)

    def _serve(self) -> None:
        while True:
            try:
                call = self._calls.get(timeout=self.IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0 and self._calls.empty():
                        self._idle -= 1
                        return
                continue
            if call is None:  # shutdown
                return
            future, fn = call
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn())
                except BaseException as exc:  # noqa: BLE001 - SystemExit etc. from the target are the cell's
                    future.set_exception(exc if isinstance(exc, Exception) else RaisedBySystem(exc))
            with self._lock:
                if self._closed:
                    return
                self._idle += 1


class WorkerLost(CellError):
    """The worker serving a call was killed because another cell on it timed out."""


class _Worker:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.killed = False
        self.reader: asyncio.Task[None] | None = None
        # What the worker writes to its stderr (and fd 1, pointed there) outside any call's
        # capture: passed on line by line to this process's sys.stderr (_forward_stderr).
        self.stderr: asyncio.Task[None] | None = None


class WorkerPool:
    """Worker processes for one variant; each serves many calls at once."""

    def __init__(self, target: str, eval_dir: Path, init_kwargs: dict[str, Any] | None, size: int) -> None:
        self._argv = [sys.executable, "-m", "evalh_pipeline.systems.python_worker", str(Path(eval_dir).resolve()),
                      target, json.dumps(init_kwargs)]
        self._size = size
        self._workers: list[_Worker] = []
        self._spawning: list[asyncio.Task[None]] = []
        self._next_id = 0

    async def start(self) -> None:
        started = await asyncio.gather(*(self._spawn() for _ in range(self._size)), return_exceptions=True)
        self._workers = [w for w in started if isinstance(w, _Worker)]
        failed = [e for e in started if isinstance(e, BaseException)]
        if failed:
            # Every worker is waited for: none is left to outlive the run's event loop.
            await self.close()
            raise failed[0]

    async def _spawn(self) -> _Worker:
        # Its own session: a timeout kills the worker and everything the target started.
        process = await asyncio.create_subprocess_exec(
            *self._argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, start_new_session=True, limit=2**20,
        )
        worker = _Worker(process)
        assert process.stdout is not None and process.stderr is not None  # created with PIPE
        worker.stderr = asyncio.create_task(_forward_stderr(process.stderr))
        hello = await _read_frame(process.stdout)
        if hello is None or "start_error" in hello:
            await _kill(worker)
            raise AdapterError((hello or {}).get("start_error") or "python_function worker exited at start")
        worker.reader = asyncio.create_task(self._read(worker))
        return worker

    async def _read(self, worker: _Worker) -> None:
        stream = worker.process.stdout
        assert stream is not None  # created with PIPE
        while True:
            try:
                reply = await _read_frame(stream)
            except (OSError, ValueError):
                reply = None
            if reply is None:
                break
            ident = reply.get("id")
            future = worker.pending.pop(ident, None) if isinstance(ident, int) else None
            if future is not None and not future.done():
                future.set_result(reply)
        code = await worker.process.wait()
        for future in worker.pending.values():
            if not future.done():
                future.set_exception(WorkerLost() if worker.killed else AdapterError(
                    f"the python_function worker process died (exit code {code}) during this call"))
        worker.pending.clear()

    async def call(self, case: dict[str, Any], variant: dict[str, Any]) -> SystemResponse:
        while True:
            worker = await self._pick()
            self._next_id += 1
            ident = self._next_id
            future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            worker.pending[ident] = future
            try:
                stdin = worker.process.stdin
                assert stdin is not None  # created with PIPE
                _write_frame(stdin, {"id": ident, "case": case, "variant": variant})
                await stdin.drain()
                reply = await future
            except WorkerLost:
                continue  # another cell's timeout killed this worker: start over on a fresh one
            except (ConnectionError, BrokenPipeError):
                continue
            except asyncio.CancelledError:
                # This cell timed out (or the run stops): end its call for certain.
                await asyncio.shield(self._retire(worker))
                raise
            finally:
                worker.pending.pop(ident, None)
            return _response(reply)

    async def _pick(self) -> _Worker:
        """The least busy live worker; replacements for killed ones start in the background
        (a worker takes a moment to start: a call waits for one only when none is live)."""
        self._workers = [w for w in self._workers if not w.killed and w.process.returncode is None]
        self._spawning = [t for t in self._spawning if not t.done()]
        for _ in range(self._size - len(self._workers) - len(self._spawning)):
            self._spawning.append(asyncio.create_task(self._replace()))
        while not self._workers:
            await asyncio.wait(self._spawning, return_when=asyncio.FIRST_COMPLETED)
            for task in [t for t in self._spawning if t.done()]:
                task.result()  # a worker that cannot start fails the call (AdapterError)
            self._spawning = [t for t in self._spawning if not t.done()]
            self._workers = [w for w in self._workers if not w.killed and w.process.returncode is None]
        return min(self._workers, key=lambda w: len(w.pending))

    async def _replace(self) -> None:
        self._workers.append(await self._spawn())

    async def _retire(self, worker: _Worker) -> None:
        worker.killed = True
        await _kill(worker)

    async def close(self) -> None:
        for task in self._spawning:
            task.cancel()
        await asyncio.gather(*self._spawning, return_exceptions=True)
        for worker in self._workers:
            worker.killed = True
        await asyncio.gather(*(_kill(w) for w in self._workers), return_exceptions=True)


def _response(reply: dict[str, Any]) -> SystemResponse:
    printed = reply.get("printed") or {}
    if "error" in reply:
        error = reply["error"]
        partial = SystemResponse.model_validate(reply["partial"]) if reply.get("partial") else None
        if printed:
            partial = _with_printed(partial or SystemResponse(), printed)
        raise AdapterError(error["message"], type=error["type"], stack=error.get("stack"), partial=partial)
    response = _with_printed(SystemResponse.model_validate(reply["response"]), printed)
    if reply.get("unserializable"):
        fields = ", ".join(reply["unserializable"][:10])
        raise AdapterError(f"the system returned values JSON cannot hold, recorded as text: {fields}",
                           type="unserializable_output", partial=response)
    return response


def _with_printed(response: SystemResponse, printed: dict[str, str]) -> SystemResponse:
    """``response`` with what the call printed in ``extra.stdout`` / ``extra.stderr`` (a key the
    target set itself is kept as it is)."""
    for stream, text in printed.items():
        response.extra.setdefault(stream, text)
    return response


async def _kill(worker: _Worker) -> None:
    process = worker.process
    if process.returncode is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        await process.wait()
    if worker.reader is not None and not worker.reader.done():
        await asyncio.wait([worker.reader], timeout=5)
    if worker.stderr is not None and not worker.stderr.done():
        # A process the target detached (setsid) may hold the pipe open: stop reading it.
        await asyncio.wait([worker.stderr], timeout=1)
        worker.stderr.cancel()


async def _forward_stderr(stream: asyncio.StreamReader | None) -> None:
    """Pass what a worker writes outside any call's capture (at import, from threads the
    target started itself, straight to its descriptors, from its child processes) to this
    process's ``sys.stderr`` whole lines at a time: while progress bars are drawn, that is
    their redirection, which prints above them instead of through them."""
    if stream is None:
        return
    pending = b""
    while chunk := await stream.read(65536):
        lines, _, pending = (pending + chunk).rpartition(b"\n")
        if lines:
            sys.stderr.write((lines + b"\n").decode("utf-8", errors="replace"))
            sys.stderr.flush()
        if len(pending) > 65536:  # a line that never ends: pass it on in pieces
            sys.stderr.write(pending.decode("utf-8", errors="replace") + "\n")
            pending = b""
    if pending:
        sys.stderr.write(pending.decode("utf-8", errors="replace") + "\n")


def _write_frame(stream: asyncio.StreamWriter, message: dict[str, Any]) -> None:
    from evalh_pipeline.systems.python_worker import HEADER

    data = json.dumps(message, ensure_ascii=True).encode("ascii")
    stream.write(HEADER.pack(len(data)) + data)


async def _read_frame(stream: asyncio.StreamReader) -> dict[str, Any] | None:
    from evalh_pipeline.systems.python_worker import HEADER

    try:
        header = await stream.readexactly(HEADER.size)
        frame: dict[str, Any] = json.loads(await stream.readexactly(HEADER.unpack(header)[0]))
        return frame
    except asyncio.IncompleteReadError:
        return None
