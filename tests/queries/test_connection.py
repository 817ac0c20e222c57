"""The queries' DuckDB connection: bounded memory, spilling to a folder of its own that goes away."""

from __future__ import annotations

import tempfile

from evalh_pipeline.queries.sql import MEMORY_LIMIT, TEMP_PREFIX, connect


def test_a_table_larger_than_the_memory_limit_spills_to_a_private_temp_folder_removed_on_close(
        tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    con = connect()
    (limit,) = con.execute("SELECT current_setting('memory_limit')").fetchone()
    assert limit.startswith("61.0 MiB") and MEMORY_LIMIT == "64MB"  # DuckDB counts MB as 10^6 bytes

    # About 90 MB of strings: more than the limit lets DuckDB keep in memory.
    con.execute("CREATE TEMP TABLE t AS SELECT repeat(range::VARCHAR, 4) || '-padding-padding' AS s "
                "FROM range(1500000)")
    assert con.execute("SELECT count(*), max(s) FROM t").fetchone() == (1_500_000, "999999999999999999999999-padding-padding")
    (spill,) = [p for p in tmp_path.iterdir()]
    assert spill.name.startswith(TEMP_PREFIX) and any(spill.iterdir())

    con.close()
    assert list(tmp_path.iterdir()) == []


def test_connections_never_share_a_spill_folder():
    first, second = connect(), connect()
    try:
        folders = {con.execute("SELECT current_setting('temp_directory')").fetchone()[0] for con in (first, second)}
    finally:
        first.close()
        second.close()
    assert len(folders) == 2
    assert all(folder.startswith(tempfile.gettempdir()) for folder in folders)
