"""What kind of file a path is, and reading a file only when it is a regular one.

Opening a FIFO blocks until a writer comes; reading a device (``/dev/zero``) never ends.
Trees the system under test writes, fixtures, datasets and price tables may hold either,
so every walk records them by kind (``special:fifo``) and every read of a file that should
be regular goes through :func:`open_regular`, which opens without blocking and checks
the opened file before reading a byte.
"""

from __future__ import annotations

import os
import stat

from evalh_pipeline.errors import UserError

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)

_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "fifo", "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "socket", "a socket"),
    (stat.S_ISCHR, "char-device", "a character device"),
    (stat.S_ISBLK, "block-device", "a block device"),
)


class NotARegularFile(UserError, OSError):
    """The path is a FIFO, a device, a socket or a folder where a regular file was expected."""


def is_special(mode: int) -> bool:
    """A FIFO, socket or device: never opened, never copied (links and folders are not special)."""
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))


def special_kind(mode: int) -> str:
    """``fifo``, ``socket``, ``char-device``, ``block-device`` (``unknown`` for anything else)."""
    for test, name, _ in _SPECIAL_KINDS:
        if test(mode):
            return name
    return "unknown"


def describe_mode(mode: int) -> str:
    """What a non-regular file is, for messages: ``a directory``, ``a named pipe (FIFO)``…"""
    if stat.S_ISREG(mode):
        return "a file"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    for test, _, words in _SPECIAL_KINDS:
        if test(mode):
            return words
    return "not a regular file"


def not_a_file_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be read as a file (``… is a directory, not a file``), None when it can.

    Follows symlinks, as opening the path would; never opens it.
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return f"file not found: {os.fspath(path)}"
    except OSError as exc:
        return f"cannot read {os.fspath(path)}: {exc.strerror or exc}"
    if stat.S_ISREG(mode):
        return None
    return f"{os.fspath(path)} is {describe_mode(mode)}, not a file"


def open_regular(path: str | os.PathLike[str], *, follow_symlinks: bool = True) -> int:
    """A read-only descriptor of ``path`` if it is a regular file; raises :class:`NotARegularFile`
    otherwise. A special file is never opened (opening some devices acts on them): the path is
    checked first, and the descriptor again, opened non-blocking, in case it was swapped."""
    mode = os.stat(path, follow_symlinks=follow_symlinks).st_mode
    if not stat.S_ISREG(mode):
        raise NotARegularFile(f"{os.fspath(path)} is {describe_mode(mode)}, not a file")
    flags = os.O_RDONLY | _O_NONBLOCK | _O_BINARY | (0 if follow_symlinks else _O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotARegularFile(f"{os.fspath(path)} is {describe_mode(mode)}, not a file")
        if _O_NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | os.PathLike[str], *, follow_symlinks: bool = True) -> bytes:
    """The bytes of a regular file (see :func:`open_regular`)."""
    with os.fdopen(open_regular(path, follow_symlinks=follow_symlinks), "rb") as handle:
        return handle.read()
