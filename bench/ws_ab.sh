#!/usr/bin/env bash
# The attention template's warp-specialised Hopper path (WS=1) on the GPU
# machine: (1) the correctness gate (every task shape, 3 seeds) of the WS
# configurations named in WS_GATE (default: a spread over CONSUMERS,
# BLOCK_N, STAGES, OVERLAP, REGSPLIT, LOADS, O_STAGE; WS_GATE=all: every
# valid one, PERSIST over WS_PERSIST, LOADS over WS_LOADS and O_STAGE over
# WS_OSTAGE, each default "0 1"),
# (2) interleaved A/B timing (evoeng bench --against) of WS configurations
# against the best FA2-path configuration (WGMMA=1, BLOCK_M=64,
# BLOCK_N=128, WARPS=4, STAGES=3) at the large shapes, and one-knob A/Bs
# inside the WS path (OVERLAP, PINGPONG, REGSPLIT (at 2 consumers: 3 need it), CONSUMERS, STAGES, PERSIST,
# LOADS, O_STAGE: 16-byte output stores after a quad transpose, 1, against 4-byte fragment stores, 0),
# (3) 'ostage' (not part of 'all'): the O_STAGE A/B alone at the four large non-causal shapes
# (B4 H8 S2048 and B8 H16 S512, D=64 and D=128).
# (4) 'lazy' (not part of 'all'): LAZY 1 (no accumulator rescale until a
# row maximum would grow by more than 2^8) against 0, each shape with the
# configuration that won its row of the side-by-side table: the seed shape,
# B4 H8 S2048 (non-causal and causal) and B8 H16 S512, D=64 and D=128.
# WS_LAZY (default "0") is the LAZY values of the WS_GATE=all list.
# (5) 'tail' (not part of 'all'): TAIL 1 (the persistent scheduler's last,
# partly full wave cut into items of all consumer warpgroups but one)
# against 0 at B4 H S2048 D64 with H = 6 (264 tiles of 192 rows: two full
# waves on 132 SMs, no tail: a control), 7, 8 (352 tiles: 2.67 waves) and 9
# (396: 3.0 waves, a control), with 3 consumers (the table winner) and with
# 2 (ping-pong); and at the shapes where no tail fits (B8 H16 S512, D=128
# S2048: controls). WS_TAIL (default "0") is the TAIL values of the
# WS_GATE=all list.
# (6) 'lsum' (not part of 'all'): LSUM 1 (the row sums of P on the tensor
# cores, a P x ones wgmma of n8 after each P V step, instead of 64 FADDs a
# thread per tile and the final quad shuffles) against 0, each row's table
# winner (the seed shape, B4 H8 S2048 and B8 H16 S512, D=64 and D=128,
# causal and not). WS_LSUM (default "0") is the LSUM values of the
# WS_GATE=all list.
# (7) 'descadd' (not part of 'all'): DESCADD 1 (wgmma descriptors by adding
# offsets to one a tile) against 0, at the same rows with LSUM 0 and LSUM 1,
# and at the FA2 path's WGMMA winners (the small rows).
# (8) 'early' (not part of 'all'): EARLY 1 (each full-barrier wait under the
# wgmma before it) against 0, and PVSPLIT 1 and 2 (P V issued in 2 or 4
# chunks, each once its exponentials are packed) against 0, in the loop
# without the intra-warpgroup overlap at 2 consumers (the constraints keep
# both off at 3, where they spill), at B4 H8 S2048, B8 H16 S512 and the
# seed shape; then the 2-consumer configuration with both against each
# row's table winner.
# (9) 'stagger' (not part of 'all'): STAGGER 1 (in a CTA's first tile the
# second consumer warpgroup starts its first Q K^T once the first one's is
# done) against 0, at 2 consumers without the overlap (the constraints
# keep it there): the seed shape (non-causal, causal), B8 H16 S512 (both),
# B4 H8 S2048 D64 and D128, with EARLY and PVSPLIT=2 and without.
# (10) 'bn256' (not part of 'all'): BLOCK_N 256 (256-key tiles: half the
# tiles, so half the per-tile waits, maxima and rescales) against 128, at 2
# consumers with REGSPLIT (the only place 256 keys fit at D=64): the seed
# shape (non-causal with STAGGER and LAZY, causal), B8 H16 S512 (both,
# PERSIST), B4 H8 S2048 D64 (both, PERSIST, LAZY); then the 256-key
# configurations against each row's winner (BN256_WIN: space-separated
# "K:A|B", K as in knob_rows, A the 256-key configuration, B the winner).
# (11) 'compile' (not part of 'all', no GPU): the gate's list compiled by check
# without --gpu (a spill fails it); WS_CACHE=DIR keeps the cubins for a gate.
# (12) 'maxskip' (not part of 'all'): MAXSKIP 1 and 2 (LAZY's exponentials
# without row maxima; 2: no mask on the fast way) against 0, at the rows'
# winners where the constraint allows it (2 consumers, LAZY, no overlap, no
# PVSPLIT): B4 H8 S2048 D64 (both), B8 H16 S512 D64, the seed shape (causal
# with 128-key tiles, non-causal with 256), B4 H8 S2048 D128 (EARLY, no
# PVSPLIT).
# (13) 'otma' (not part of 'all'): OTMA 1 (each consumer warp's rows of O
# by one TMA store a 64-column box) against 0, where the constraint allows
# it (no PERSIST, O_STAGE=1): the seed shape's winner (non-causal, causal,
# and at B8 H16 S512 D64 and D128), and the causal seed configuration with
# STAGES=2, EARLY and PVSPLIT=1.  WS_REPEAT=N makes every A/B of a mode N independent ones
# (evoeng bench --repeat: the ratios, their median and spread).
# Input profiles (issue 33): every A/B runs on the task's timing profiles,
# interleaved (evoeng bench prints each profile's ratio under the worst
# one, which the revert rule reads); after each mode, MODE_profiles.txt
# has one line per A/B: the shape, the knobs that differ (B's value ->
# A's), the worst ratio and each profile's (the technique table per
# profile). WS_PROFILE=NAME runs every A/B on that profile alone.
# Usage: bench/ws_ab.sh OUTDIR [gate|compile|ab|knobs|ostage|lazy|tail|lsum|descadd|early|stagger|bn256|maxskip|otma|all]
set -u
out=${1:?usage: ws_ab.sh OUTDIR [gate|compile|ab|knobs|ostage|lazy|tail|lsum|descadd|early|stagger|bn256|maxskip|otma|all]}
what=${2:-all}
mkdir -p "$out"
E=${EVOENG:-build/src/evoeng}
T=${TASK:-templates/attention/task.json}   # TASK: another spec
export EVOENG_CACHE_DIR=${EVOENG_CACHE_DIR:-/tmp/evoeng-cache}
BEST="WGMMA=1,BLOCK_M=64,BLOCK_N=128,WARPS=4,STAGES=3"
ws() { echo "WS=1,CONSUMERS=$1,BLOCK_M=$((64 * $1)),BLOCK_N=$2,STAGES=$3,OVERLAP=$4,REGSPLIT=$5,PINGPONG=${6:-0},PERSIST=${7:-0},LOADS=${8:-0},O_STAGE=${9:-1},LAZY=${10:-0},TAIL=${11:-0},LSUM=${12:-0}${13:+,DESCADD=${13}}"; }
if [ "${WS_GATE:-}" = all ]; then
    gate=()
    for c in 1 2 3; do for n in 64 128; do for s in 1 2 3; do for o in 0 1; do for r in 0 1; do
        for p in ${WS_PERSIST:-0 1}; do for l in ${WS_LOADS:-0 1}; do for e in ${WS_OSTAGE:-0 1}; do for z in ${WS_LAZY:-0}; do for tl in ${WS_TAIL:-0}; do for ls in ${WS_LSUM:-0}; do
            gate+=("$(ws $c $n $s $o $r 0 $p $l $e $z $tl $ls)")
            [ $o = 1 ] && [ $c -ge 2 ] && gate+=("$(ws $c $n $s $o $r 1 $p $l $e $z $tl $ls)")
        done; done; done; done; done; done
    done; done; done; done; done
else
    gate=("$(ws 3 128 2 0 1)" "$(ws 2 128 2 1 1)" "$(ws 1 64 1 0 0)" "$(ws 2 64 3 1 0)"
          "$(ws 3 64 3 1 1)" "$(ws 1 128 2 1 0)" "$(ws 2 128 1 0 1)" "$(ws 2 128 2 1 1 1)" "$(ws 3 64 2 1 1 1)" "$(ws 3 128 2 0 1 0 1)" "$(ws 2 128 2 1 1 1 1)"
          "$(ws 3 128 1 1 1 0 0 1)" "$(ws 2 128 2 1 1 1 1 1)" "$(ws 1 64 2 1 0 0 1 1)"
          "$(ws 3 128 2 0 1 0 0 0 0)" "$(ws 2 128 2 1 1 1 1 0 0)" "$(ws 1 64 1 0 0 0 0 0 0)" "$(ws 2 64 3 1 0 0 1 1 0)")
fi
if [ "$what" = gate ] || [ "$what" = compile ] || [ "$what" = all ]; then
    # 'compile' (no GPU needed): the same list through check without --gpu,
    # every compile variant, a spill failing it; with WS_CACHE=DIR it fills
    # that cache for a later 'gate' on the GPU machine (carry DIR there)
    if [ "$what" = compile ]; then
        WS_CHECK="--arch sm_90"; f=compile; echo "=== compile (sm_90a), every compile variant, no spill allowed"
    else
        WS_CHECK=--gpu; f=gate; echo "=== correctness gate, every shape, 3 seeds"
    fi
    # one check per configuration, ${WS_PAR:-4} at a time, each with its own
    # compile cache (WS_CACHE=DIR: that one shared) and a 120 s limit (a hang is a failure)
    one() {
        log=$(EVOENG_CACHE_DIR=${WS_CACHE:-$EVOENG_CACHE_DIR/$$_$RANDOM} timeout 120 $E check $T $WS_CHECK --sample 0 -j 4 --params "$1" 2>&1)
        rc=$?
        if echo "$log" | grep -q "invalid"; then echo "INVALID $1"; return; fi
        if [ "$WS_CHECK" = --gpu ]; then
            if echo "$log" | grep -qE "gate: 1 passed, 0 failed"; then echo "PASS $1"; else echo "FAIL $1"; echo "$log" | tail -20; fi
        elif [ $rc -eq 0 ]; then echo "PASS $1"; else echo "FAIL $1"; echo "$log" | tail -5; fi
    }
    export -f one; export E T EVOENG_CACHE_DIR WS_CACHE WS_CHECK
    printf '%s\n' "${gate[@]}" | xargs -P "${WS_PAR:-4}" -I{} bash -c 'one "$@"' _ {} > "$out/${f}_raw.txt" 2>&1
    grep -v "^INVALID" "$out/${f}_raw.txt" | tee -a "$out/$f.txt"
    echo "$f: $(grep -c '^PASS' "$out/${f}_raw.txt") passed, $(grep -c '^FAIL' "$out/${f}_raw.txt") failed, $(grep -c '^INVALID' "$out/${f}_raw.txt") invalid (skipped) of ${#gate[@]}" | tee -a "$out/$f.txt"
fi
shapes=("--dim B=4 --dim H=8 --dim S=2048" "--dim B=4 --dim H=8 --dim S=2048 --dim CAUSAL=1"
        "--dim B=8 --dim H=16 --dim S=512" "--dim B=8 --dim H=16 --dim S=512 --dim CAUSAL=1"
        "--dim B=4 --dim H=8 --dim S=2048 --dim D=128" "--dim B=8 --dim H=16 --dim S=512 --dim D=128"
        "--dim CAUSAL=1")
if [ "$what" = ab ] || [ "$what" = all ]; then
    echo "=== A/B: WS (A) against the FA2-path best (B)"
    for dims in "${shapes[@]:0:4}"; do
        for c in ${WS_AB:-"$(ws 3 128 2 0 1)" "$(ws 2 128 2 1 1)" "$(ws 2 128 2 1 1 1)"}; do
            echo "--- $dims $c" | tee -a "$out/ab.txt"
            $E bench $T $dims --params "$c" --against "$BEST" 2>&1 | grep -E "verdict|latency|TFLOP|vs against|error|fail" | tee -a "$out/ab.txt"
        done
    done
fi
# one interleaved A/B: knob_ab FILE DIMS A B
knob_ab() {
    [ -n "$3" ] && [ -n "$4" ] || { echo "ws_ab.sh: an A/B without two configurations ($1, $2)" >&2; exit 2; }
    echo "--- $2 A=$3 B=$4" | tee -a "$out/$1"
    $E bench $T $2 --params "$3" --against "$4" ${WS_REPEAT:+--repeat $WS_REPEAT} ${WS_PROFILE:+--profile $WS_PROFILE} 2>&1 |
        grep -E "verdict|latency|TFLOP|vs against|ratios|median|profile|error|fail" | tee -a "$out/$1"
}
# per_profile FILE: one line per A/B of FILE (knob_ab's blocks) into
# FILE's _profiles.txt twin: the shape, the knobs that differ (B -> A),
# the ratio the revert rule reads (--repeat: the median of those) and each
# profile's (--repeat: each profile's median)
per_profile() {
    [ -f "$out/$1" ] || return 0
    awk '
    function flush() { if (hdr != "") printf "%s | worst %s |%s\n", hdr, worst, profs; hdr = ""; worst = "-"; profs = "" }
    /^--- / {
        flush()
        a = $0; sub(/.* A=/, "", a); sub(/ B=.*/, "", a)
        b = $0; sub(/.* B=/, "", b)
        dims = $0; sub(/^--- /, "", dims); sub(/ ?A=.*/, "", dims); gsub(/--dim /, "", dims)
        na = split(a, pa, ","); nb = split(b, pb, ",")
        delete va; diff = ""
        for (i = 1; i <= nb; i++) { split(pb[i], kv, "="); va[kv[1]] = kv[2] }
        for (i = 1; i <= na; i++) { split(pa[i], kv, "="); if (va[kv[1]] != kv[2]) diff = diff (diff ? ", " : "") kv[1] " " va[kv[1]] "->" kv[2] }
        hdr = (dims == "" ? "seed shape" : dims) " | " (diff == "" ? "(same)" : diff)
        next
    }
    /vs against/ { r = $0; sub(/.*ratio \(this\/against\) /, "", r); sub(/[ ,(].*/, "", r); worst = r }
    /^  median / { worst = $2 }
    /^    profile / && /A\/B ratio/ { r = $0; sub(/.*A\/B ratio /, "", r); sub(/ .*/, "", r); profs = profs " " $2 " " r }
    /^    profile / && / median / { r = $0; sub(/.* median /, "", r); sub(/ .*/, "", r); profs = profs " " $2 " " r }
    END { flush() }' "$out/$1" >"$out/${1%.txt}_profiles.txt"
}
trap 'for f in "$out"/*.txt; do case $f in *_profiles.txt|*/gate*.txt|*/compile*.txt) ;; *) per_profile "$(basename "$f")";; esac; done' EXIT
# configuration $1 with knob $2 moved from $3 to $4, wherever ws() put it
# (a knob ws() appends later must not break the swap: --params refuses a
# knob given twice)
knob_set() {
    local c=",$1,"
    [ "${c/,$2=$3,/}" != "$c" ] || { echo "ws_ab.sh: no $2=$3 in $1" >&2; exit 2; }
    c=${c/,$2=$3,/,$2=$4,}
    c=${c#,}
    echo "${c%,}"
}
# knob_rows FILE KNOB ROW...: KNOB 1 against 0 at each ROW, "K:CONFIG" (K an
# index into shapes, empty for the seed shape; CONFIG has KNOB=0); with
# KR_FROM / KR_TO set, KNOB=KR_TO against KNOB=KR_FROM
knob_rows() {
    local f=$1 knob=$2 pair k c
    shift 2
    for pair; do
        k=${pair%%:*} c=${pair#*:}
        knob_ab "$f" "${k:+${shapes[$k]}}" "$(knob_set "$c" "$knob" "${KR_FROM:-0}" "${KR_TO:-1}")" "$c"
    done
}
if [ "$what" = knobs ] || [ "$what" = all ]; then
    echo "=== one-knob A/Bs inside the WS path"
    for k in ${WS_KNOB_SHAPES:-0 2}; do   # indices into shapes (4, 5: D=128)
        dims=${shapes[$k]}
        for pair in "$(ws 2 128 2 1 1) $(ws 2 128 2 0 1)" "$(ws 2 128 2 1 1 1) $(ws 2 128 2 1 1)" \
                    "$(ws 2 128 2 0 1) $(ws 2 128 2 0 0)" "$(ws 3 128 2 0 1) $(ws 2 128 2 0 1)" \
                    "$(ws 3 128 3 0 1) $(ws 3 128 2 0 1)" "$(ws 3 64 2 1 1 1) $(ws 3 64 2 1 1)" \
                    "$(ws 3 128 2 0 1 0 1) $(ws 3 128 2 0 1)" "$(ws 2 128 2 1 1 1 1) $(ws 2 128 2 1 1 1)" \
                    "$(ws 2 128 2 1 1 1 1 1) $(ws 2 128 2 1 1 1 1)" "$(ws 3 128 2 0 1 0 0 1) $(ws 3 128 2 0 1)" \
                    "$(ws 3 128 2 0 1) $(ws 3 128 2 0 1 0 0 0 0)" "$(ws 2 128 2 1 1 1 1) $(ws 2 128 2 1 1 1 1 0 0)"; do
            set -- $pair
            knob_ab knobs.txt "$dims" "$1" "$2"
        done
    done
fi
if [ "$what" = ostage ]; then
    echo "=== O_STAGE 1 against 0 inside the WS path, D=64 and D=128"
    for k in 0 2 4 5; do
        for c in "$(ws 3 128 2 0 1)" "$(ws 2 128 2 1 1 1 1)" "$(ws 2 128 2 1 1)"; do
            knob_ab ostage.txt "${shapes[$k]}" "$c" "$(knob_set "$c" O_STAGE 1 0)"
        done
    done
fi
if [ "$what" = tail ]; then
    echo "=== TAIL 1 against 0 inside the WS path"
    for h in 6 7 8 9; do
        for c in "$(ws 3 128 3 0 1 0 1 0 1 1)" "$(ws 2 128 3 1 1 1 1 0 1 1)"; do
            knob_ab tail.txt "--dim B=4 --dim H=$h --dim S=2048" "$(knob_set "$c" TAIL 0 1)" "$c"
        done
    done
    knob_rows tail.txt TAIL "2:$(ws 3 128 3 0 1 0 1 0 1 1)" "4:$(ws 3 128 3 0 1 0 1 0 1 1)"
fi
# each row's table winner (index into shapes, or empty: the seed shape)
winners=(":$(ws 2 128 1 1 0)" "0:$(ws 3 128 3 1 1 0 1 0 1 1 1)" "1:$(ws 3 128 3 1 1 0 1 0 0 1)"
         "2:$(ws 3 128 2 1 1 1 1)" "3:$(ws 2 128 2 1 1 1 1)" "4:$(ws 2 128 3 1 1 1 1)"
         "5:$(ws 2 128 3 1 1 1 1)" "0:$(ws 2 128 3 1 1 1 1 0 1 1 1)")
if [ "$what" = lsum ]; then
    echo "=== LSUM 1 against 0 inside the WS path, each row's table winner"
    knob_rows lsum.txt LSUM "${winners[@]}"
    for c in "$(ws 2 128 2 1 1 1 1)" "$(ws 2 128 3 1 1 1 1)"; do   # the D=128 causal rows
        for k in 1 3; do knob_ab lsum.txt "${shapes[$k]} --dim D=128" "$(knob_set "$c" LSUM 0 1)" "$c"; done
    done
fi
if [ "$what" = descadd ]; then
    echo "=== DESCADD 1 against 0, each row's table winner with LSUM 0 and 1, and the WGMMA winners"
    for pair in ${WS_DESC_ROWS:-"${winners[@]}"}; do
        k=${pair%%:*} c=${pair#*:}
        for ls in 0 1; do
            c1=$(knob_set "$c" LSUM 0 $ls)
            knob_ab descadd.txt "${k:+${shapes[$k]}}" "$c1,DESCADD=1" "$c1,DESCADD=0"
        done
    done
    for dims in "--dim CAUSAL=1" "--dim B=2 --dim H=8 --dim S=512"; do
        knob_ab descadd.txt "$dims" "$BEST,DESCADD=1" "$BEST,DESCADD=0"
    done
fi
if [ "$what" = early ]; then
    echo "=== EARLY and PVSPLIT against 0 (2 consumers, no overlap), then against each row's winner"
    for pair in "0:$(ws 2 128 3 0 1 0 1 0 1 1)" "2:$(ws 2 128 2 0 1 0 1)" ":$(ws 2 128 2 0 1 0 1)"; do
        k=${pair%%:*} c=${pair#*:}
        knob_ab early.txt "${k:+${shapes[$k]}}" "$c,PVSPLIT=0,EARLY=1" "$c,PVSPLIT=0,EARLY=0"
        for v in 1 2; do knob_ab early.txt "${k:+${shapes[$k]}}" "$c,PVSPLIT=$v,EARLY=1" "$c,PVSPLIT=0,EARLY=1"; done
    done
    for pair in "0:$(ws 3 128 3 0 1 0 1 0 1 1 1)" "2:$(ws 3 128 2 0 1 0 1 0 1 0 0 0 1)" ":$BEST"; do
        k=${pair%%:*} c=${pair#*:}
        knob_ab early.txt "${k:+${shapes[$k]}}" "$(ws 2 128 2 0 1 0 1),PVSPLIT=2,EARLY=1" "$c"
    done
fi
if [ "$what" = stagger ]; then
    echo "=== STAGGER 1 against 0 (2 consumers, no overlap)"
    ep="PVSPLIT=2,EARLY=1"
    knob_rows stagger.txt STAGGER ":$(ws 2 128 2 0 1 0 1),$ep,STAGGER=0" "6:$(ws 2 128 3 0 1 0 0 0 1 0 0 0 1),$ep,STAGGER=0" \
        ":$(ws 2 128 2 0 1 0 1),STAGGER=0" "2:$(ws 2 128 2 0 1 0 1),$ep,STAGGER=0" "3:$(ws 2 128 2 0 1 0 1),$ep,STAGGER=0" \
        "0:$(ws 2 128 3 0 1 0 1 0 1 1),$ep,STAGGER=0" "0:$(ws 2 128 3 0 1 0 1 0 1 1),STAGGER=0" "4:$(ws 2 128 3 0 1 0 1),$ep,STAGGER=0"
fi
if [ "$what" = bn256 ]; then
    echo "=== BLOCK_N 256 against 128 (2 consumers, REGSPLIT)"
    KR_FROM=128 KR_TO=256 knob_rows bn256.txt BLOCK_N ":$(ws 2 128 2 0 1 0 0 0 1 1),STAGGER=1" ":$(ws 2 128 2 0 1)" \
        "6:$(ws 2 128 2 0 1)" "2:$(ws 2 128 2 0 1 0 1)" "3:$(ws 2 128 2 0 1 0 1)" "0:$(ws 2 128 2 0 1 0 1 0 1 1)" \
        "1:$(ws 2 128 2 0 1 0 1 0 1 1)"
    for pair in ${BN256_WIN:-}; do
        k=${pair%%:*} c=${pair#*:}
        w=${c#*|} c=${c%%|*}
        knob_ab bn256_win.txt "${k:+${shapes[$k]}}" "$c" "$w"
    done
fi
if [ "$what" = maxskip ]; then
    echo "=== MAXSKIP 1 and 2 against 0 (2 consumers, LAZY, no overlap, no PVSPLIT), the rows' winners"
    ms_rows=("0:$(ws 2 256 3 0 1 0 1 0 1 1),STAGGER=1,MAXSKIP=0" "1:$(ws 2 256 2 0 1 0 1 0 0 1 1),STAGGER=1,MAXSKIP=0"
             "2:$(ws 2 256 2 0 1 0 1 0 1 1 0 0 1),STAGGER=1,MAXSKIP=0" "6:$(ws 2 128 2 0 0 0 0 0 1 1),STAGGER=1,MAXSKIP=0"
             ":$(ws 2 256 1 0 1 0 0 0 1 1),STAGGER=1,MAXSKIP=0" "4:$(ws 2 128 3 0 1 0 1 0 1 1 0 0 1),EARLY=1,MAXSKIP=0")
    for v in 1 2; do KR_TO=$v knob_rows maxskip.txt MAXSKIP "${ms_rows[@]}"; done
fi
if [ "$what" = otma ]; then
    echo "=== OTMA 1 against 0 (the WS epilogue by TMA stores), where the constraint allows it"
    knob_rows otma.txt OTMA ":$(ws 2 128 1 0 0),STAGGER=1,OTMA=0" "6:$(ws 2 128 1 0 0),STAGGER=1,OTMA=0" \
        "2:$(ws 2 128 1 0 0),STAGGER=1,OTMA=0" "5:$(ws 2 128 1 0 0),STAGGER=1,OTMA=0" \
        "6:$(ws 2 128 2 0 1 0 0 0 1 0 0 0 1),EARLY=1,PVSPLIT=1,STAGGER=1,OTMA=0"
fi
if [ "$what" = lazy ]; then
    echo "=== LAZY 1 against 0 inside the WS path, each shape's table winner"
    knob_rows lazy.txt LAZY ":$(ws 2 128 1 1 0)" "0:$(ws 2 128 2 1 1 0 1)" "1:$(ws 2 128 2 1 1 1 1)" "3:$(ws 2 128 2 1 1 1 1)" \
        "2:$(ws 2 128 3 1 1 0 1)" "4:$(ws 2 128 3 1 1 1 1)" "5:$(ws 2 128 3 1 1 1 1)" "0:$(ws 3 128 2 0 1)"
fi
