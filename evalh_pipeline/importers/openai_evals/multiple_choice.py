"""openai/evals' ``MultipleChoice`` eval class (evals/elsuite/multiple_choice.py at commit
4bfc1f58): each question's answers are shuffled into lettered options and the model must
answer with the correct letter.

openai/evals reads the questions from a Hugging Face dataset (``args.dataset``,
``hf://hellaswag?split=validation`` or ``hf://hendrycks_test?name=...&split=...``); the import
does not download it: it reads the rows, as ``get_dataset`` builds them (``question``,
``answers``, ``label``), from ``<data>/<entry>.jsonl`` (``--data DIR``, default the registry's
``data/``). Everything else is openai/evals' own:

- the options: ``make_abc`` (evals/formatting.py) shuffles the answer order with the
  sample's ``random.Random(f"{base}.{split}.{index}:{seed}".encode())`` (eval.py:127-137,
  the eval's seed 20220722, ``base.split`` the entry's name) and letters them ``A) ...``;
- the prompt: ``instructions`` + "\\nPlease answer with the letter of the correct answer." +
  "\\n\\n" + question + "\\n" + options (multiple_choice.py:69-79), sent as one system message
  with temperature 0 and max_tokens 1;
- the verdict: ``record_and_check_match`` with the correct letter (a match when the answer
  starts with it), as ``Match``.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from evalh_pipeline.importers.openai_evals.graders import match_evaluator
from evalh_pipeline.importers.openai_evals.registry import RegistryEval
from evalh_pipeline.importers.report import BadSource, ImportReport

CLASS = "evals.elsuite.multiple_choice:MultipleChoice"
ARGS = frozenset({"dataset", "instructions"})
SEED = 20220722  # evals/eval.py:60, the Eval default
REQUEST = {"temperature": 0.0, "max_tokens": 1}


def make_abc(answers: list[str], correct: int, rng: random.Random) -> tuple[str, str]:
    """evals/formatting.py make_abc (shuffle=True): the lettered options and the correct letter."""
    order = list(range(len(answers)))
    rng.shuffle(order)
    options = "\n".join(f"{chr(ord('A') + i)}) {answers[j]}" for i, j in enumerate(order))
    return options, chr(ord("A") + order.index(correct))


def rows_path(found: RegistryEval, data_dir: Path | None) -> Path:
    """Where the dataset's rows are read: ``<data>/<entry>.jsonl``; missing is bad input."""
    dataset = found.args.get("dataset")
    path = (data_dir or found.file.parent) / f"{found.entry_key}.jsonl"
    if not path.is_file():
        raise BadSource(str(found.file), found.arg_line("dataset"), f"{found.entry_key}.args.dataset",
                        f"{dataset!r} is a Hugging Face dataset, which the import does not download: export its rows "
                        f"as JSONL (question, answers, label) to {path} (--data DIR names another folder)")
    return path


def cases(found: RegistryEval, rows: list[tuple[str, int, Any]], report: ImportReport) -> list[dict[str, Any]]:
    """One case per row, its prompt and correct letter as openai/evals makes them."""
    instructions = found.args.get("instructions") or ""
    base, split = found.entry_key.split(".")[0:2] if found.entry_key.count(".") >= 1 else (found.entry_key, "")
    out: list[dict[str, Any]] = []
    for index, (file, number, row) in enumerate(rows):
        question = row.get("question") if isinstance(row, dict) else None
        answers = row.get("answers") if isinstance(row, dict) else None
        label = row.get("label") if isinstance(row, dict) else None
        if not (isinstance(question, str) and isinstance(answers, list) and all(isinstance(a, str) for a in answers)
                and isinstance(label, int) and 0 <= label < len(answers)):
            report.add(file, number, "", "a row needs question (text), answers (texts) and label (an index into "
                                         "answers), as openai/evals' Sample", "sample skipped")
            continue
        rng = random.Random(f"{base}.{split}.{index}:{SEED}".encode("utf-8"))
        options, letter = make_abc(answers, label, rng)
        prompt = f"{instructions}\nPlease answer with the letter of the correct answer.\n\n{question}\n{options}"
        out.append({"id": f"sample-{index}", "input": {"messages": [{"role": "system", "content": prompt}]},
                    "metadata": {"samples_line": number, "label": label, "answers": answers},
                    "expected": {"facts": {"ideal": letter}},
                    "evaluators": [{"name": "match", **match_evaluator([letter])}]})
    return out
