"""Reads stdin; with --text prints it back with a leading space, else parses it as JSON and
prints it with final_answer added (for the cli_templates compat eval)."""

import json
import sys

data = sys.stdin.read()
if "--text" in sys.argv:
    print(" " + data.strip())
    print()
else:
    value = json.loads(data)
    value["final_answer"] = f"{value['question']} ({value['id']})"
    print(json.dumps(value))
