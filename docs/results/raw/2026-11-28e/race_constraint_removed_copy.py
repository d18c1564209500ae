import json, sys
t = json.load(open(sys.argv[1]))
n = len(t["constraints"])
t["constraints"] = [c for c in t["constraints"] if c["expr"] != "WS == 0 || OVERLAP == 0 || PERSIST == 0 || PACKGQA == 0"]
assert len(t["constraints"]) == n - 1
json.dump(t, open(sys.argv[1], "w"), indent=1)
