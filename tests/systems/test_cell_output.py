"""Each call's prints go to its own CellOutput (context variable), bounded with a marker."""

from __future__ import annotations

import asyncio
import contextvars
import io
import threading

from evalh_pipeline.systems.cell_output import CURRENT, CellOutput, RoutedStream


def test_writes_past_the_limit_are_counted_and_marked_not_kept():
    output = CellOutput(limit=10)
    output.write("stdout", "0123456")
    output.write("stdout", "789abcdef")
    assert output.texts() == {"stdout": "0123456789\n[evalh: 6 more characters of stdout not kept; "
                                        "a cell keeps the first 10]"}


def test_concurrent_calls_and_their_threads_keep_their_own_prints():
    fallback = io.StringIO()
    stream = RoutedStream("stdout", fallback)

    async def call(name: str) -> dict[str, str]:
        output = CellOutput()
        CURRENT.set(output)
        stream.write(f"{name} in task\n")
        await asyncio.sleep(0)
        thread = threading.Thread(target=contextvars.copy_context().run,
                                  args=(lambda: stream.write(f"{name} in thread\n"),))
        thread.start()
        thread.join()
        return output.texts()

    async def both() -> list[dict[str, str]]:
        return list(await asyncio.gather(call("a"), call("b")))

    assert asyncio.run(both()) == [{"stdout": "a in task\na in thread\n"}, {"stdout": "b in task\nb in thread\n"}]
    stream.write("no call\n")  # outside any call: the fallback
    assert fallback.getvalue() == "no call\n"
