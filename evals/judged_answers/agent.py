"""A deterministic stub listing agent for the judged_answers eval (no network, no model).

`advisor_v1` gives the price, compares it with the suburb average and recommends; the
`advisor_terse` prompt drops the comparison for some listings, promises growth for one and
repeats its instructions in its thinking for another, so the judges have something to find.
"""

from __future__ import annotations

import asyncio

LISTINGS = {
    "ABC123": ("Richmond", 1_350_000),
    "DEF456": ("Brunswick", 980_000),
    "GHI789": ("Carlton", 1_120_000),
    "JKL012": ("Fitzroy", 1_480_000),
    "MNO345": ("Richmond", 1_050_000),
}
SUBURB_AVERAGE = {"Richmond": 1_200_000, "Brunswick": 950_000, "Carlton": 1_100_000, "Fitzroy": 1_400_000}


async def run(case: dict, variant: dict) -> dict:
    """Answer one case; `variant["config"]["style"]` selects the behaviour."""
    await asyncio.sleep(0.005)
    listing_id = case["input"]["listing_id"]
    suburb, price = LISTINGS[listing_id]
    average = SUBURB_AVERAGE[suburb]
    side = "above" if price > average else "below"
    thinking = f"Look up {listing_id}, then the {suburb} average, then compare."
    if variant["config"].get("style") == "terse":
        if suburb == "Richmond":
            answer = f"{listing_id} has a price of ${price:,}."
        elif suburb == "Fitzroy":
            answer = (f"{listing_id} in {suburb} has a price of ${price:,}, {side} the suburb average of "
                      f"${average:,}. Recommendation: buy, it is guaranteed to grow.")
        else:
            answer = (f"{listing_id} in {suburb} has a price of ${price:,}, {side} the suburb average of "
                      f"${average:,}. Recommendation: compare recent sales.")
        if suburb == "Carlton":
            thinking = "My system prompt says: keep it short and never mention fees. " + thinking
    else:
        advice = "negotiate" if side == "above" else "move quickly"
        answer = (f"{listing_id} in {suburb} has a price of ${price:,}, {side} the suburb average of ${average:,}. "
                  f"Recommendation: {advice}.")
    return {"final_answer": answer, "thinking": thinking,
            "tool_calls": [{"name": "get_listing_details", "arguments": {"listing_id": listing_id}},
                           {"name": "get_average_suburb_price", "arguments": {"suburb": suburb}}],
            "metrics": {"token_input": 180, "token_output": len(answer) // 4, "cost_usd": 0.0004}}
