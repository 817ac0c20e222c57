"""The verdict cache: keyed by everything that decides a reply, atomic files, misses on damage."""

from __future__ import annotations

import asyncio

from evalh_pipeline.llm.chat import JudgeReply
from evalh_pipeline.judges.cache import VerdictCache, cache_key

REPLY = JudgeReply(text='{"rubric": {"score": 4, "reason": "ok"}}', tokens_in=120, tokens_out=20, model="m",
                   cost_usd=0.0003)


def test_the_key_changes_with_backend_model_prompt_and_schema():
    base = ("openai_compatible", "gpt-4o", "system", "user", {"type": "object"})
    keys = {cache_key(*base),
            cache_key("anthropic", *base[1:]),
            cache_key(base[0], "gpt-4o-mini", *base[2:]),
            cache_key(*base[:3], "user!", base[4]),
            cache_key(*base[:4], {"type": "object", "required": []})}
    assert len(keys) == 5
    assert cache_key(*base) == cache_key(*base) and len(cache_key(*base)) == 64


def test_a_stored_reply_comes_back_whole(tmp_path):
    cache = VerdictCache(tmp_path / "judge")
    key = cache_key("b", "m", "s", "u", {})
    assert asyncio.run(cache.get(key)) is None
    asyncio.run(cache.put(key, REPLY))
    assert asyncio.run(cache.get(key)) == REPLY
    assert (tmp_path / "judge" / key[:2] / f"{key}.json").is_file()


def test_a_damaged_entry_is_a_miss(tmp_path):
    cache = VerdictCache(tmp_path)
    key = cache_key("b", "m", "s", "u", {})
    asyncio.run(cache.put(key, REPLY))
    (tmp_path / key[:2] / f"{key}.json").write_text('{"text": "trunc')
    assert asyncio.run(cache.get(key)) is None


def test_concurrent_writers_of_one_key_leave_one_readable_file_and_no_temp_files(tmp_path):
    cache = VerdictCache(tmp_path)
    key = cache_key("b", "m", "s", "u", {})

    async def many() -> None:
        await asyncio.gather(*(cache.put(key, REPLY) for _ in range(20)), *(cache.get(key) for _ in range(20)))

    asyncio.run(many())
    assert asyncio.run(cache.get(key)) == REPLY
    assert [p.name for p in (tmp_path / key[:2]).iterdir()] == [f"{key}.json"]
