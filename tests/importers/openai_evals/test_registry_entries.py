"""Sixty-five entries of openai/evals' own registry, as the ``evals`` wheel on PyPI ships them
(tests/support/openai_evals_wheel.py), import with no error in their reports and
`evalh run --dry-run` accepts each, read with the registry's own samples. The same check runs
over a whole registry with `python -m tests.support.import_openai_registry DIR`."""

from __future__ import annotations

from evalh_pipeline.importers.openai_evals import multiple_choice
from evalh_pipeline.importers.openai_evals.registry import read_registry
from tests.support.import_openai_registry import MAPPED, check, data_files

# (registry file, eval): over every class the import maps (Match, Includes, FuzzyMatch,
# ModelBasedClassify with several specs). Left out of the wheel's entries with a mapped class:
# those the import refuses with a stated reason (multicomp_n, the battle spec, meta-evals'
# labelled samples), and most of the rest only to keep the test short.
ENTRIES = [
    ("test-modelgraded.yaml", "joke-fruits"),
    ("test-modelgraded.yaml", "joke-fruits-v2"),
    ("test-modelgraded.yaml", "joke-fruits-likert"),
    ("test-basic.yaml", "test-fuzzy-match"),
    ("test-basic.yaml", "test-includes"),
    ("test-basic.yaml", "test-includes-ignore-case"),
    ("time-zone-conversion.yaml", "test-time-zone-conversion"),
    ("algebra-word-problems.yaml", "algebra-word-problems"),
    ("counterfactual-reasoning.yaml", "counterfactual-reasoning-fuzzy-match"),
    ("rock-climbing.yaml", "rock-climbing"),
    ("chinese_ancient_masterpieces_dynasty.yaml", "chinese_ancient_masterpieces_dynasty"),
    ("chinese_famous_novel.yaml", "chinese_famous_novel"),
    ("chinese_chu_ci.yaml", "chinese_chu_ci"),
    ("multi-step-equations.yaml", "multi-step-equations"),
    ("japanese_prime_minister.yaml", "japanese_prime_minister"),
    ("polish-syllable-count.yaml", "polish-syllable-count"),
    ("unwanted-rhyming.yaml", "unwanted-rhyming"),
    ("stock-options.yaml", "stock-option-terms-bull-call-spread"),
    ("shape-in-shape.yaml", "shape-in-shape"),
    ("word_vector_over_reliance.yaml", "word_vector_over_reliance"),
    ("latin_grammar.yaml", "latin-grammar"),
    ("thirty_six_stratagems.yaml", "thirty_six_stratagems"),
    ("reasoning_with_contradictory_statements.yaml", "reasoning_with_contradictory_statements"),
    ("chinese_poem.yaml", "chinese_poem"),
    ("spanish_feminine_noun_masculine_article.yaml", "spanish_feminine_noun_masculine_article"),
    ("security_guide.yaml", "security_guide"),
    ("finance.yaml", "finance"),
    ("chinese-lantern-riddles.yaml", "chinese-lantern-riddles"),
    ("reverse-polish-notation.yaml", "reverse-polish-notation"),
    ("russian-rhyme.yaml", "russian-rhyme"),
    ("confusing_korean.yaml", "confusing_korean"),
    ("hebrew_grammar.yaml", "hebrew_grammar"),
    ("loss-logic.yaml", "loss-logic-fact"),
    ("russian_medical.yaml", "russian_medical"),
    ("logic.yaml", "logic-fact"),
    ("adultery_state_laws.yaml", "adultery_state_laws"),
    ("korean_date_counting.yaml", "korean_date_counting"),
    ("chinese_idioms.yaml", "chinese_idioms"),
    ("syntax-check.yaml", "syntax-check"),
    ("financial-derivatives.yaml", "financial-derivatives"),
    ("logic-container.yaml", "logic-container"),
    ("finnish-rhyme.yaml", "finnish-rhyme"),
    ("knot-theory.yaml", "knot-theory-unknotting-problem"),
    ("detect-hshd.yaml", "detect-hshd"),
    ("python_list_comprehension.yaml", "python_list_comprehension"),
    ("stock-options.yaml", "stock-option-terms-bear-call-spread"),
    ("ab.yaml", "ab"),
    ("music-theory-chord-names.yaml", "music-theory-chord-names"),
    ("chinese_song_ci.yaml", "chinese_song_ci"),
    ("korean_romanization.yaml", "korean_romanization"),
    ("crontab.yaml", "crontab"),
    ("russian-verse.yaml", "russian-verse"),
    ("irish-plural-nouns.yaml", "irish-plural-nouns"),
    ("hebrew-homophones.yaml", "hebrew-homophones"),
    ("stock-options.yaml", "stock-options-bull-call-spread"),
    ("hebrew_plurals.yaml", "hebrew-plurals"),
    ("track_objects.yaml", "track_objects"),
    ("shared-borders.yaml", "shared-borders"),
    ("day-of-week-from-date.yaml", "day-of-week-from-date"),
    ("chinese_homophonic.yaml", "chinese-homo"),
    ("automata-and-complexity.yaml", "automata-and-complexity"),
    ("allergen-information.yaml", "allergen-information"),
    ("passing-balls.yaml", "passing-balls"),
    ("historical-kana-orthography-reading.yaml", "historical-kana-orthography-reading"),
    ("simple_math.yaml", "simple_math"),
]


def test_sixty_five_registry_entries_of_the_wheel_import_with_no_error_and_dry_run(wheel_registry, tmp_path,
                                                                                  monkeypatch):
    monkeypatch.chdir(tmp_path)
    found = {(file, e.name): e for file in {f for f, _ in ENTRIES} for e in read_registry(wheel_registry.evals(file))}
    entries = [found[pair] for pair in ENTRIES]
    assert {e.grader for e in entries} == set(MAPPED) - {multiple_choice.CLASS}  # its questions: Hugging Face (hf://)
    lines = {}
    for e in entries:
        wheel_registry.data(*data_files(e))
        lines[e.name] = check(wheel_registry.root, e, tmp_path / "data", tmp_path / "out" / e.name)
    assert {name: line for name, (ok, line) in lines.items() if not ok} == {}
    assert len(lines) == len(ENTRIES) >= 50
