"""Always answers Richmond (for the broken_target compat eval)."""


def run(case, variant):
    return {"final_answer": "Richmond"}
