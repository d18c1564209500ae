#!/usr/bin/env bash
# TAIL's first run on a GPU (it stays out of the search until this has
# passed): from the repository root on the GPU machine,
#   bash bench/tail_gpu.sh OUTDIR [SECONDS]
# (1) writes OUTDIR/tail_task.json (bench/tail_sched.py --task: the
#     constraint TAIL == 0 dropped, gate shapes B1 H40 S900 at D=64 and 128
#     whose last wave TAIL cuts);
# (2) the TAIL 1 against 0 A/Bs (bench/ws_ab.sh tail: B4 H6..9 S2048 D64
#     with 3 and 2 consumers, controls where no tail fits);
# (3) the gate of every valid TAIL=1 configuration (WS_GATE=all,
#     PERSIST=1, LOADS and O_STAGE 0 and 1; set WS_CACHE=DIR to a compile
#     cache filled ahead on a machine without a GPU, and carry DIR:
#       python3 bench/tail_sched.py --task /tmp/tt.json
#       TASK=/tmp/tt.json WS_GATE=all WS_PERSIST=1 WS_TAIL=1 WS_CACHE=DIR \
#           bash bench/ws_ab.sh /tmp/c compile
#     (about 25 MB, 10 minutes on 2 cores));
# (4) if TAIL won at B4 H8 S2048 with 3 consumers (ratio < 0.98), a search
#     of SECONDS (default 60) at that shape on the TAIL spec and
#     compare_sdpa.py on its best (bench/sdpa_shapes.sh).
# Then drop "TAIL == 0" from templates/attention/task.json, add the two
# gate shapes, and quote OUTDIR's logs.
set -u
out=${1:?usage: tail_gpu.sh OUTDIR [SECONDS]}
secs=${2:-60}
mkdir -p "$out"
export TASK=$out/tail_task.json
python3 bench/tail_sched.py --task "$TASK" || exit 1
python3 bench/tail_sched.py 4,8,2048,3 4,8,2048,2 1,40,900,3 1,40,900,2 | tee "$out/schedule.txt"
bash bench/ws_ab.sh "$out/ab" tail > "$out/tail_ab.log" 2>&1
grep -E "^---|ratio" "$out/ab/tail.txt"
r=$(awk '/^---.*H=8 .*A=WS=1,CONSUMERS=3/{f=1} f&&/ratio/{sub(/.*\(this\/against\) /,""); print $1; exit}' "$out/ab/tail.txt")
echo "B4 H8 S2048 D64, 3 consumers, TAIL 1 / 0: ${r:-none}"
WS_GATE=all WS_PERSIST=1 WS_TAIL=1 WS_LOADS="0 1" WS_OSTAGE="0 1" WS_PAR=${WS_PAR:-8} \
    bash bench/ws_ab.sh "$out/gate" gate > "$out/gate.log" 2>&1
tail -1 "$out/gate/gate.txt"
if awk -v r="${r:-}" 'BEGIN { exit !(r != "" && r < 0.98) }'; then
    GENERATIONS=100000 bash bench/sdpa_shapes.sh "$out/search" "$secs" 4,8,2048,64,0 > "$out/search.log" 2>&1
    grep -E "^B4 H8 S2048 D64 " "$out/search.log"
    rm -f "$out"/search/*.db
else
    echo "no search: TAIL did not win at B4 H8 S2048 D64"
fi
