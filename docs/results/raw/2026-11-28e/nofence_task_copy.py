import json, sys, re
d = sys.argv[1]
t = json.load(open(d + "/task.json"))
t["params"]["NOFENCE"] = {"values": [0, 1], "default": 0}
json.dump(t, open(d + "/task.json", "w"), indent=1)
p = d + "/attention_ws.cuh"
s = open(p).read()
assert s.count("#if WS_PS && !LOADS\n") == 1
s = s.replace("#if WS_PS && !LOADS\n", "#if WS_PS && !LOADS && !NOFENCE\n")
open(p, "w").write(s)
