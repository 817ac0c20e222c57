"""Issue 25, item 4: ``--store "host=… user=… password=… dbname=…"`` (the libpq form
``dsn:`` accepts) printed the password in the errors of ``evalh runs`` and ``evalh inspect``.

Now the keyword form names a PostgreSQL store as the URL form does, and no error shows
the password (a quoted one with spaces included). A real PostgreSQL server over its
Unix socket.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.e2e

PASSWORD = "pw-9c1e77b0a4d2"
SPACED = "pw with 7f3a spaces"


def keyword_dsn(postgres_dsn: str, password: str, dbname: str) -> str:
    socket = parse_qs(urlsplit(postgres_dsn).query)["host"][0]
    return f"host={socket} user=postgres password={password} dbname={dbname}"


@pytest.mark.parametrize("password", [PASSWORD, f"'{SPACED}'"])
@pytest.mark.parametrize("command", [["runs"], ["inspect", "2026-01-01T00-00-00-000000_x"]])
def test_a_keyword_dsn_in_errors_never_shows_its_password(tmp_path, env, postgres_dsn, command, password):
    store = keyword_dsn(postgres_dsn, password, "no_such_database")

    proc = run_evalh([command[0], "--store", store, *command[1:]], env, tmp_path)

    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "no_such_database" in proc.stderr  # the error is about the store it was given
    for secret in (PASSWORD, SPACED, *SPACED.split()[1:3]):
        if len(secret) > 3:
            assert secret not in proc.stdout and secret not in proc.stderr, proc.stderr


def test_a_keyword_dsn_names_a_postgres_store(tmp_path, env, postgres_dsn):
    proc = run_evalh(["runs", "--store", keyword_dsn(postgres_dsn, PASSWORD, "postgres")], env, tmp_path)

    assert proc.returncode == 0, proc.stderr
    assert "0 run(s)" in proc.stdout and PASSWORD not in proc.stdout + proc.stderr
