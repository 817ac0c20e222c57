"""A PostgreSQL DSN shown in a label or an error: never its password, in either form."""

from __future__ import annotations

import pytest

from evalh_pipeline.outputs.stores.postgres import dsn_passwords, redact_dsn
from evalh_pipeline.outputs.stores.reading import store_from_url


@pytest.mark.parametrize(("dsn", "shown"), [
    ("postgresql://evalh:s3cr@t@db:5432/evals", "postgresql://evalh:***@db:5432/evals"),
    ("postgresql:///evals?host=/tmp/s&password=pw-1&sslmode=require",
     "postgresql:///evals?host=/tmp/s&password=***&sslmode=require"),
    ("host=db password='a b\\' c' dbname=evals", "host=db password=*** dbname=evals"),
    ("host=db sslpassword = kp dbname=evals", "host=db sslpassword = *** dbname=evals"),
])
def test_redact_dsn_hides_every_password_form(dsn, shown):
    assert redact_dsn(dsn) == shown


def test_the_passwords_of_a_dsn_include_the_words_of_a_quoted_one():
    assert dsn_passwords("host=db password='pw with spaces'") == {"pw with spaces", "with", "spaces"}


def test_an_unknown_store_string_is_refused_without_its_password():
    with pytest.raises(ValueError) as caught:
        store_from_url("mysql://u:hunter22@db/x")
    assert "hunter22" not in str(caught.value)


def test_a_keyword_dsn_names_a_postgres_store_with_its_schema():
    store = store_from_url("host=/tmp/sock dbname=evals password='x#y'#schema=team_a")
    assert store.config.dsn == "host=/tmp/sock dbname=evals password='x#y'" and store.config.schema_ == "team_a"
