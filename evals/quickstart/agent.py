"""A deterministic stub agent for the quickstart eval (no network, no model).

It answers questions about property listings by "calling" two tools. The
`agent_experimental` variant uses a shortened prompt that forgets to look up the
suburb average for some listings, so the comparison has regressions to show.
"""

from __future__ import annotations

import asyncio

LISTINGS = {
    "ABC123": {"suburb": "Richmond", "price": 1_350_000},
    "DEF456": {"suburb": "Brunswick", "price": 980_000},
    "GHI789": {"suburb": "Carlton", "price": 1_120_000},
    "JKL012": {"suburb": "Fitzroy", "price": 1_480_000},
    "MNO345": {"suburb": "Richmond", "price": 1_050_000},
    "PQR678": {"suburb": "Brunswick", "price": 870_000},
}
SUBURB_AVERAGE = {"Richmond": 1_200_000, "Brunswick": 950_000, "Carlton": 1_100_000, "Fitzroy": 1_400_000}


async def run(case: dict, variant: dict) -> dict:
    """Answer one case; `variant["config"]["prompt_version"]` selects the behaviour."""
    await asyncio.sleep(0.01)  # pretend to think
    listing_id = case["input"]["listing_id"]
    listing = LISTINGS.get(listing_id)
    calls = [{"name": "get_listing_details", "arguments": {"listing_id": listing_id}}]
    if listing is None:
        return {"final_answer": f"I could not find listing {listing_id}.", "tool_calls": calls,
                "metrics": {"token_input": 120, "token_output": 12}}
    suburb = listing["suburb"]
    skips_average = variant["config"].get("prompt_version") == "v2-short" and suburb in ("Richmond", "Fitzroy")
    if skips_average:
        answer = f"Listing {listing_id} is priced at ${listing['price']:,}."
    else:
        calls.append({"name": "get_average_suburb_price", "arguments": {"suburb": suburb}})
        average = SUBURB_AVERAGE[suburb]
        verdict = "above" if listing["price"] > average else "below"
        answer = (f"Listing {listing_id} in {suburb} is priced at ${listing['price']:,}, "
                  f"{verdict} the suburb average of ${average:,}.")
    return {
        "final_answer": answer,
        "tool_calls": calls,
        "metrics": {"token_input": 150 + 10 * len(calls), "token_output": len(answer) // 4, "cost_usd": 0.0004},
    }
