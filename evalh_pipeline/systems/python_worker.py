"""The worker process of ``python_function`` with ``isolation: process``.

``python -m evalh_pipeline.systems.python_worker EVAL_DIR TARGET INIT_KWARGS_JSON`` imports
the target as the in-process adapter does, then serves calls: frames on stdin, replies on
the process's original stdout (fd 1 is pointed at stderr, so what the target prints never
corrupts the protocol). What a call prints through ``sys.stdout`` / ``sys.stderr`` is sent
back with its reply (``printed``) for the cell's trace (systems/cell_output.py). Calls run concurrently: async targets on this process's event
loop, sync ones on daemon threads. The parent kills the whole process (its session) when a
cell times out; at end of input (the parent closed the pipe or died) the worker exits.

A frame is an 8-byte big-endian length and that many bytes of ASCII JSON.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
import struct
import sys
import threading
import traceback
from typing import Any, BinaryIO

HEADER = struct.Struct(">Q")


def write_frame(handle: BinaryIO, message: dict[str, Any]) -> None:
    data = json.dumps(message, ensure_ascii=True).encode("ascii")
    handle.write(HEADER.pack(len(data)) + data)
    handle.flush()


def _read_exactly(handle: BinaryIO, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = handle.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _reply(value: Any) -> dict[str, Any]:
    """The target's return value as a reply: the response, or why it is not one."""
    from evalh_pipeline.store.recording import json_safe
    from evalh_pipeline.systems.base import AdapterError
    from evalh_pipeline.systems.response import response_from_dict

    try:
        response = response_from_dict(value)
    except AdapterError as exc:
        reply: dict[str, Any] = {"error": {"type": exc.type, "message": str(exc)}}
        if exc.partial is not None:  # what the cell records beside its error (an answer not text)
            reply["partial"] = json_safe(exc.partial)[0]
        return reply
    data, problems = json_safe(response)
    return {"response": data, "unserializable": problems}


def _failure(exc: BaseException) -> dict[str, Any]:
    stack = "".join(traceback.format_exception(exc, limit=20))
    return {"error": {"type": "exception", "message": f"{type(exc).__name__}: {exc}", "stack": stack}}


def main(argv: list[str]) -> None:
    eval_dir, target, init_kwargs = argv[0], argv[1], json.loads(argv[2])
    protocol_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the target's prints go to stderr
    protocol_in = os.fdopen(os.dup(0), "rb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)

    from evalh_pipeline.systems.base import AdapterError
    from evalh_pipeline.systems.cell_output import CURRENT, CellOutput, RoutedStream
    from evalh_pipeline.systems.python_function import is_async_callable, resolve_target

    # What a call prints goes to its cell's trace (systems/cell_output.py); the rest to stderr.
    sys.stdout = RoutedStream("stdout", sys.stdout)
    sys.stderr = RoutedStream("stderr", sys.stderr)

    try:
        fn = resolve_target(target, eval_dir, init_kwargs)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent as the adapter failing to start
        # The same words as the in-process adapter's (an AdapterError says what failed itself).
        problem = str(exc) if isinstance(exc, AdapterError) else f"{type(exc).__name__}: {exc}"
        write_frame(protocol_out, {"id": 0, "start_error": problem})
        return
    is_async = is_async_callable(fn)
    write_frame(protocol_out, {"id": 0, "ready": True})

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)

    def send(message: dict[str, Any]) -> None:  # only ever called on the loop's thread
        write_frame(protocol_out, message)

    async def call(request: dict[str, Any]) -> None:
        ident = request["id"]
        output = CellOutput()
        CURRENT.set(output)  # this call's task only: each task runs in a context of its own
        try:
            if is_async:
                value = await fn(request["case"], request["variant"])
            else:
                future: asyncio.Future[Any] = loop.create_future()

                def work() -> None:
                    try:
                        result = fn(request["case"], request["variant"])
                    except BaseException as exc:  # noqa: BLE001 - the target's, reported as the cell's error
                        loop.call_soon_threadsafe(_settle, future, None, exc)
                    else:
                        loop.call_soon_threadsafe(_settle, future, result, None)

                # The thread runs in a copy of this call's context, so its prints are the call's.
                threading.Thread(target=contextvars.copy_context().run, args=(work,), daemon=True,
                                 name="evalh-cell").start()
                value = await future
            if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
                value = await value
            send({"id": ident, **_reply(value), "printed": output.texts()})
        except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt, ... are the cell's
            send({"id": ident, **_failure(exc.original if isinstance(exc, _Raised) else exc),
                  "printed": output.texts()})

    def read() -> None:
        while True:
            header = _read_exactly(protocol_in, HEADER.size)
            if header is None:
                break
            body = _read_exactly(protocol_in, HEADER.unpack(header)[0])
            if body is None:
                break
            request = json.loads(body)
            loop.call_soon_threadsafe(loop.create_task, call(request))  # the coroutine runs on the loop
        # End of input: the parent is gone or done. Leave at once, even if a call blocks the loop.
        os._exit(0)

    threading.Thread(target=read, daemon=True, name="evalh-worker-reader").start()
    loop.run_forever()


def _settle(future: asyncio.Future[Any], result: Any, exc: BaseException | None) -> None:
    if future.done():
        return
    if exc is not None:
        future.set_exception(_Raised(exc))
    else:
        future.set_result(result)


class _Raised(Exception):
    """A BaseException from a sync target, carried to the loop without stopping it."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(str(original))
        self.original = original


if __name__ == "__main__":
    main(sys.argv[1:])
