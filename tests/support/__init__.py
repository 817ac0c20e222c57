"""Helpers the tests of several areas share: nothing here is a test, and nothing here is
specific to one area (an area's own helpers stay in its folder, e.g. tests/view/support.py).

- :mod:`tests.support.readiness`: wait until a server process answers over HTTP;
- :mod:`tests.support.http_server`: a raw asyncio HTTP server on loopback, answering as a
  test says;
- :mod:`tests.support.pty_terminal`: run a command on a real pseudo-terminal;
- :mod:`tests.support.evalh_process`: ``evalh`` as a real process (``EVALH``, ``run_evalh``);
- :mod:`tests.support.evals`: a small offline eval written from a template (``write_eval``);
- :mod:`tests.support.paths`: the repository (``REPO``) and the benchmark's fixture writer.

tests/conftest.py holds fixtures and the tier hooks only; helpers are imported from here.
"""
