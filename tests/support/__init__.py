"""Helpers the tests of several areas share: nothing here is a test, and nothing here is
specific to one area (an area's own helpers stay in its folder, e.g. tests/view/support.py).

- :mod:`tests.support.readiness`: wait until a server process answers over HTTP;
- :mod:`tests.support.http_server`: a raw asyncio HTTP server on loopback, answering as a
  test says;
- :mod:`tests.support.pty_terminal`: run a command on a real pseudo-terminal.

``run_evalh`` stays in tests/conftest.py (tests import it from there).
"""
