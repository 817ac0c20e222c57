"""A listing agent; the candidate branch forgets the suburb on even cases and the lookup on
every fifth (for the regressions compat eval)."""

LISTINGS = {"Richmond": 1_350_000, "Brunswick": 1_100_000, "Carlton": 1_500_000}


def run(case, variant):
    n = case["input"]["n"]
    suburb = case["input"]["suburb"]
    candidate = variant["metadata"]["branch"] == "candidate"
    answer = f"The listing in {suburb} is priced at {LISTINGS[suburb]}, above average."
    if candidate and n % 2 == 0:
        answer = f"The listing is priced at {LISTINGS[suburb]}."
    price = LISTINGS[suburb] if not (candidate and n % 3 == 0) else 0
    calls = [] if candidate and n % 5 == 0 else [{"name": "get_listing_details", "arguments": {"n": n}}]
    calls.append({"name": "report_price", "arguments": {"price": price}})
    return {"final_answer": answer, "tool_calls": calls}
