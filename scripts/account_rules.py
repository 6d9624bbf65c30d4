#!/usr/bin/env python3
"""The account rule of protocol v3 (design note §V3.4, §V3.5), as a plain Python model, stdlib only.

Written from the design text, not from the Swift code (`Sources/ContinuumCore/AccountRules.swift`), so that the two
check each other through `Tests/ContinuumCoreTests/Resources/account-scenarios.json`.

Scenario file: {"scenarios": [{"name", "description", "founder", "recovery" (a key or null), "records": [...],
"expected": {...}}]}. Records are abstract: keys are short names ("L", "D", "k"), ids short strings ("r1").
A record has
  id          its record id
  author      the key that signed it; its account log is named by that key
  kind        "found" | "join" | "add" | "remove" (the `account` record founding or joining, `device-add`,
              `device-remove`; every add is taken to carry a valid consent)
  sequence    its place in the author's account log, from 1
  previous    optional: the id at sequence - 1 of the same log. When left out it is the one record of the same
              author at sequence - 1 (the file must then hold exactly one); give it for a fork, or to name a record
              the scenario does not hold
  target      add and remove: the key added or removed
  frontier    remove: {log name: {"through": n, "head": id or null}}; a log name is the key whose log it is
`expected` is {"devices", "removed", "counting_removals", "counting_records"}, each a sorted list.

The rule, as this model reads it (f is the founder, k the recovery key):
- R is *within* a removal S of d: S's frontier lists d's log, sequence(R) <= through, and walking `previous` back
  from the head, every record down to sequence(R) is held and the one reached is R (§V3.4).
- S *cuts* a record x of S's target that is not within S, unless x is a removal, signed by S's target, of S's
  author (a mutual removal).
- *Add paths* are walks of adds from f or k; an add whose target is f or k adds nothing. Adds of removed keys stay
  on paths: what a removed device added within the frontier keeps its path (§V3.4 "records already held within
  the frontier keep counting"; `recover`'s frontier cuts a thief's sock devices explicitly).
- *Ancestors* of x: the keys other than x without whose adds x has no path (f and k have none).
- Kept removals: signed by k, or by a key with an add path (cuts not judged); a removal naming k is inert.
- R *depends on* S (S is decided first) when S cuts R or S cuts an add on a path of R's author; but not when R's
  target is an ancestor of S's author AND R cuts an add on a path of S's author (amendment A1 below).
- Decisions follow the strongly connected components of "depends on", dependencies first. R counts when R is
  signed by k; otherwise when no counting removal R depends on, outside R's component, cuts R, and R's author has
  an add path none of whose adds is cut by such a removal nor by R itself (amendment A2 below).
- removed = the targets of counting removals; devices = f and the added keys (k excepted) with an add path none
  of whose adds a counting removal cuts, minus the removed.
- Counting records: the counting removals, and every other record whose author is k or has an add path none of
  whose adds a counting removal cuts, that no counting removal cuts, and that is not an add of a removed key.

Where the design text was read or amended (see the report to the lead; each has a scenario):
- "decided in an earlier component" = a removal R depends on directly: then no tie-break is needed and the result
  cannot depend on an order of independent components.
- A1: the text's exception ("not when S's author has R's target among its ancestors") applies only when R actually
  cuts that authority. Taken alone it lets a thief remove an honest remover's ancestor (scenario
  thief-removes-the-adder-of-the-remover) and breaks a cycle along an add chain (cycle-along-an-add-chain),
  against the outcomes table.
- A2: a removal whose own frontier cuts its author's every add path does not count
  (thief-removes-the-adder-cutting-its-add).
- A self-removal is a mutual removal of itself by the text's exception, so it is not cut by itself: it counts.

Usage:
    python3 scripts/account_rules.py           print each scenario's computed state
    python3 scripts/account_rules.py --write   fill in every scenario's `expected`
    python3 scripts/account_rules.py --check   exit 1, naming the scenario, when a stored `expected` differs
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "Tests" / "ContinuumCoreTests" / "Resources" / "account-scenarios.json"


class Account:
    """The records of one scenario and everything the rule derives from them (records read as a set)."""

    def __init__(self, scenario: dict):
        self.founder = scenario["founder"]
        self.recovery = scenario.get("recovery")
        self.roots = {self.founder} | ({self.recovery} if self.recovery else set())
        self.records = {r["id"]: r for r in scenario["records"]}
        if len(self.records) != len(scenario["records"]):
            raise ValueError(f"{scenario['name']}: two records with one id")
        self.previous = {rid: self._previous(r, scenario["name"]) for rid, r in self.records.items()}
        self.adds = [r for r in self.records.values() if r["kind"] == "add" and r["target"] not in self.roots]
        self.removals = [r for r in self.records.values() if r["kind"] == "remove"]

    def _previous(self, record: dict, name: str):
        if record["sequence"] == 1 or "previous" in record:
            return record.get("previous")
        below = [r["id"] for r in self.records.values()
                 if r["author"] == record["author"] and r["sequence"] == record["sequence"] - 1]
        if len(below) != 1:
            raise ValueError(f"{name}: {record['id']} needs an explicit `previous`")
        return below[0]

    # --- within and cuts (§V3.4) -------------------------------------------------------------------------------

    def within(self, record: dict, removal: dict) -> bool:
        entry = removal["frontier"].get(record["author"])
        if entry is None or record["sequence"] > entry["through"]:
            return False
        current, sequence = entry["head"], entry["through"]
        while sequence > record["sequence"]:
            held = self.records.get(current)
            if held is None or held["author"] != record["author"] or held["sequence"] != sequence:
                return False
            current, sequence = self.previous[current], sequence - 1
        return current == record["id"]

    def cuts(self, removal: dict, record: dict) -> bool:
        if record["author"] != removal["target"] or self.within(record, removal):
            return False
        mutual = record["kind"] == "remove" and record["target"] == removal["author"]
        return not mutual

    # --- add paths ---------------------------------------------------------------------------------------------

    def reached(self, starts, cut=frozenset(), without=None) -> set:
        """Keys reached from `starts` over adds not in `cut` and not signed by `without`."""
        seen, todo = set(starts), list(starts)
        while todo:
            key = todo.pop()
            if key == without:
                continue
            for add in self.adds:
                if add["author"] == key and add["id"] not in cut and add["target"] not in seen:
                    seen.add(add["target"])
                    todo.append(add["target"])
        return seen

    def has_path(self, key: str, cut=frozenset()) -> bool:
        return key in self.reached(self.roots, cut)

    def ancestors(self, key: str) -> set:
        if key in self.roots or not self.has_path(key):
            return set()
        signers = {add["author"] for add in self.adds}
        return {y for y in signers if y != key and key not in self.reached(self.roots, without=y)}

    def on_a_path(self, add: dict, key: str) -> bool:
        if key in self.roots or not self.has_path(add["author"]):
            return False
        return key in self.reached({add["target"]})

    def cuts_a_path(self, removal: dict, key: str) -> bool:
        return any(self.cuts(removal, add) and self.on_a_path(add, key) for add in self.adds)

    # --- the procedure (§V3.5) ---------------------------------------------------------------------------------

    def depends(self, r: dict, s: dict) -> bool:
        if not (self.cuts(s, r) or self.cuts_a_path(s, r["author"])):
            return False
        excepted = r["target"] in self.ancestors(s["author"]) and self.cuts_a_path(r, s["author"])
        return not excepted

    def state(self) -> dict:
        kept = [r for r in self.removals
                if r["target"] != self.recovery and (r["author"] == self.recovery or self.has_path(r["author"]))]
        deps = {r["id"]: [s for s in kept if s is not r and self.depends(r, s)] for r in kept}
        reach = {}
        for r in kept:
            seen, todo = set(), [r["id"]]
            while todo:
                for s in deps[todo.pop()]:
                    if s["id"] not in seen:
                        seen.add(s["id"])
                        todo.append(s["id"])
            reach[r["id"]] = seen
        decided: dict[str, bool] = {}

        def counts(r: dict) -> bool:
            if r["id"] not in decided:
                decided[r["id"]] = self._judge(r, [s for s in deps[r["id"]]
                                                    if r["id"] not in reach[s["id"]] and counts(s)])
            return decided[r["id"]]

        counting = [r for r in kept if counts(r)]
        removed = {r["target"] for r in counting}
        cut = {a["id"] for a in self.adds if any(self.cuts(r, a) for r in counting)}
        keys = ({self.founder} | {a["target"] for a in self.adds}) - {self.recovery}
        devices = {key for key in keys if self.has_path(key, cut)} - removed
        others = [x for x in self.records.values() if x["kind"] != "remove"
                  and (x["author"] == self.recovery or self.has_path(x["author"], cut))
                  and not any(self.cuts(r, x) for r in counting)
                  and not (x["kind"] == "add" and x["target"] in removed)]
        return {
            "devices": sorted(devices),
            "removed": sorted(removed),
            "counting_removals": sorted((r["id"] for r in counting), key=natural),
            "counting_records": sorted((x["id"] for x in counting + others), key=natural),
        }

    def _judge(self, r: dict, judges: list) -> bool:
        """Rules 1 and 2: `judges` are the counting removals R depends on, outside R's component."""
        if r["author"] == self.recovery:
            return True
        if any(self.cuts(s, r) for s in judges):
            return False
        cut = {a["id"] for a in self.adds if self.cuts(r, a) or any(self.cuts(s, a) for s in judges)}
        return self.has_path(r["author"], frozenset(cut))


def natural(rid: str):
    """Sorts "r2" before "r10"."""
    digits = "".join(c for c in rid if c.isdigit())
    return (rid.rstrip("0123456789"), int(digits) if digits else 0, rid)


def dump(document: dict) -> str:
    """The scenario file with one record per line, so that a diff shows which record changed."""
    line = lambda value: json.dumps(value, ensure_ascii=False)
    blocks = []
    for scenario in document["scenarios"]:
        fields = [f'      "{key}": {line(value)}' for key, value in scenario.items() if key != "records"]
        records = ",\n".join(f"        {line(r)}" for r in scenario["records"])
        fields.insert(len(fields) - ("expected" in scenario), f'      "records": [\n{records}\n      ]')
        blocks.append("    {\n" + ",\n".join(fields) + "\n    }")
    head = ",\n".join(f'  "{key}": {line(value)}' for key, value in document.items() if key != "scenarios")
    return "{\n" + (head + ",\n" if head else "") + '  "scenarios": [\n' + ",\n".join(blocks) + "\n  ]\n}\n"


def main(argv: list[str]) -> int:
    mode = argv[1] if len(argv) > 1 else ""
    if mode not in ("", "--write", "--check"):
        print(__doc__.split("Usage:")[1], file=sys.stderr)
        return 2
    document = json.loads(SCENARIOS.read_text())
    failures = 0
    for scenario in document["scenarios"]:
        computed = Account(scenario).state()
        if mode == "--write":
            scenario["expected"] = computed
        elif mode == "--check":
            if scenario.get("expected") != computed:
                failures += 1
                print(f"account-scenarios.json: scenario {scenario['name']!r}: stored expected "
                      f"{json.dumps(scenario.get('expected'))}, the model computes {json.dumps(computed)}",
                      file=sys.stderr)
        else:
            print(f"{scenario['name']}: {json.dumps(computed)}")
    if mode == "--write":
        SCENARIOS.write_text(dump(document))
        print(f"wrote {len(document['scenarios'])} scenarios to {SCENARIOS.relative_to(ROOT)}")
    if mode == "--check":
        if failures:
            print(f"{failures} scenario(s) differ: run scripts/account_rules.py --write only once the rule's "
                  "change is meant, and check the new expected values by hand", file=sys.stderr)
            return 1
        print(f"all {len(document['scenarios'])} scenarios match")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
