#!/bin/sh
# carma sim from the command line: the table and JSON on the bundled CARMA traces,
# auto's results against CARMA's policies (the issue's figures), and bad input.
set -eu
CARMA="$CARMA_BIN/carma"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/helpers/preload.sh" # PRELOAD_ASAN_OPTIONS

# The table: one row per policy, nothing on stderr.
"$CARMA" sim --trace data/trace-mix90.csv --gpus 4xa100-40gb --sharing mps \
    --policy exclusive,oracle-magm,auto >"$T/table" 2>"$T/err" || fail "table run failed"
[ ! -s "$T/err" ] || fail "stderr not empty: $(cat "$T/err")"
for p in exclusive oracle-magm auto; do
    grep -q "^$p " "$T/table" || fail "no row for $p"
done
grep -q "^(bound) " "$T/table" || fail "no (bound) row"

# JSON with every figure, for every policy; the issue's comparisons on both traces.
for trace in trace-mix90 trace-t1; do
    "$CARMA" sim --trace "data/$trace.csv" --gpus 4xa100-40gb --sharing mps --policy all \
        --json >"$T/$trace.json" || fail "$trace: json run failed"
    python3 - "$T/$trace.json" "$trace" <<'PY' || fail "$trace: figures"
import json, sys
root = json.load(open(sys.argv[1]))
d, b = root["policies"], root["bounds"]
assert set(b) == {"makespan_s", "busy_gpu_s", "energy_j"}, b
for name, f in d.items():
    if f["gave_up"] == 0:
        for k in b:
            assert f[k] >= b[k] * (1 - 1e-9), (name, k, f[k], b[k])
keys = ["makespan_s", "mean_jct_s", "p50_jct_s", "p99_jct_s", "mean_wait_s", "p50_wait_s",
        "p99_wait_s", "oom_crashes", "lost_gpu_s", "energy_j", "mean_smact", "mean_smocc",
        "mean_mem_used_frac", "jobs", "succeeded", "gave_up", "busy_gpu_s"]
for name, f in d.items():
    missing = [k for k in keys if k not in f]
    assert not missing, (name, missing)
    assert 0 <= f["p50_wait_s"] <= f["p99_wait_s"] and 0 <= f["p50_jct_s"] <= f["p99_jct_s"], f
    assert f["p50_wait_s"] <= f["p50_jct_s"] and f["p99_wait_s"] <= f["p99_jct_s"], f
    assert 0 < f["mean_smocc"] < f["mean_smact"] <= 1, f
refs = [n for n in d if n not in ("auto", "exclusive")]
assert len(refs) == 9, refs
a, ex = d["auto"], d["exclusive"]
best_span = min(d[n]["makespan_s"] for n in refs)
best_jct = min(d[n]["mean_jct_s"] for n in refs)
best_energy = min(d[n]["energy_j"] for n in refs)
out = "%s: auto/best-CARMA makespan %.3f, JCT %.3f, energy %.3f; auto/exclusive makespan %.3f energy %.3f" % (
    sys.argv[2], a["makespan_s"] / best_span, a["mean_jct_s"] / best_jct,
    a["energy_j"] / best_energy, a["makespan_s"] / ex["makespan_s"], a["energy_j"] / ex["energy_j"])
print(out)
# What auto achieves under the model (docs/model.md): never a crash, the issue's JCT
# target, and level with the best CARMA policy on makespan and energy (0.93-1.05 of it
# on the exact replays; a guard against regressions, not the issue's 0.90 and 1.0,
# which the command reports).
assert a["oom_crashes"] == 0, "auto crashed"
assert a["mean_jct_s"] <= 0.75 * best_jct, out
assert a["makespan_s"] <= 1.05 * best_span, out
assert a["energy_j"] <= 1.07 * best_energy, out
assert a["makespan_s"] <= 0.85 * ex["makespan_s"], out
assert a["energy_j"] <= 0.97 * ex["energy_j"], out
assert d["or-rr"]["oom_crashes"] > 0, "or-rr should crash and recover"
for n, f in d.items():
    assert f["jobs"] == {"trace-mix90": 90, "trace-t1": 60}[sys.argv[2]], n
PY
done

# Bad input: exit 2, a message naming the file and line, and no partial table.
expect_bad() { # substring, args...
    want=$1; shift
    rc=0
    "$CARMA" sim "$@" >"$T/out" 2>"$T/err" || rc=$?
    [ "$rc" -eq 2 ] || fail "exit $rc, not 2: $*"
    [ ! -s "$T/out" ] || fail "partial output for: $*"
    grep -q -- "$want" "$T/err" || fail "error for '$*' lacks '$want': $(cat "$T/err")"
}
printf 'submit_s,workload\n0,vgg\n10,no_such_workload\n' >"$T/unknown.csv"
expect_bad "unknown.csv:3" --trace "$T/unknown.csv" --workloads data/workloads.csv
printf 'submit_s,workload\n20,vgg\n10,vgg\n' >"$T/order.csv"
expect_bad "order.csv:3" --trace "$T/order.csv" --workloads data/workloads.csv
printf 'submit_s,workload\n-5,vgg\n' >"$T/neg.csv"
expect_bad "neg.csv:2" --trace "$T/neg.csv" --workloads data/workloads.csv
printf 'submit_s,workload\n0,vgg,extra\n' >"$T/malformed.csv"
expect_bad "malformed.csv:2" --trace "$T/malformed.csv" --workloads data/workloads.csv
printf 'submit_s,workload,workload\n0,vgg,NOPE\n' >"$T/dupcol.csv"
expect_bad "dupcol.csv:1: column 'workload' given twice" --trace "$T/dupcol.csv" \
    --workloads data/workloads.csv
printf '\000submit_s,workload\n0,vgg\n' >"$T/nulstart.csv"
expect_bad "nulstart.csv:1: NUL byte in text" --trace "$T/nulstart.csv" \
    --workloads data/workloads.csv
printf 'submit_s,workload\n0,"Xcep\ntion"\n' >"$T/quoted_nl.csv"
expect_bad "quoted_nl.csv:2: unknown workload 'Xcep\\\\ntion'" --trace "$T/quoted_nl.csv" \
    --workloads data/workloads.csv
[ "$(wc -l <"$T/err")" -eq 1 ] || fail "a quoted newline printed raw: $(cat "$T/err")"
expect_bad "unknown GPU kind" --trace data/trace-mix90.csv --gpus 4xa200-40gb
expect_bad "more than" --trace data/trace-mix90.csv --gpus 100000xa100-40gb
expect_bad "bad count" --trace data/trace-mix90.csv --gpus 0xa100-40gb
expect_bad "trailing '/'" --trace data/trace-mix90.csv --gpus 2xa100-40gb/
expect_bad "--seed" --trace data/trace-mix90.csv --jitter 0.2 --seed -1
# An empty value (an unset shell variable) is not 0 ("no limit"); no blank or sign either.
for v in "" " 2" "+2" "2 "; do
    expect_bad "--max-attempts: expected 0..1000, got '$v'" --trace data/trace-t1.csv \
        --policy auto --max-attempts "$v"
    expect_bad "--seed: expected an integer in \[0, 2^63 - 1\], got '$v'" \
        --trace data/trace-t1.csv --policy auto --jitter 0.1 --seed "$v"
done
expect_bad "unknown policy" --trace data/trace-mix90.csv --policy oracle-xx
expect_bad "an empty name in the list" --trace data/trace-mix90.csv --policy auto,
expect_bad "'all' stands alone" --trace data/trace-mix90.csv --policy auto,all
expect_bad "unknown mode" --trace data/trace-mix90.csv --sharing mig2
expect_bad "no-such-file" --trace "$T/no-such-file.csv"
expect_bad "needs 2 GPUs" --trace data/trace-mix90.csv --gpus 1xa100-40gb --policy auto
# a job the GPUs cannot hold is named by its line, before any policy runs
expect_bad "trace1.csv:3: job dqn-b128 needs 8 GPUs but the run has 4" \
    --trace data/traces/philly-muri/trace1.csv --gpus 4xa100-40gb
# A regular file over the size bound is refused from its size, before it is read.
truncate -s 600M "$T/sparse.csv"
expect_bad "sparse.csv: 629145600 bytes, larger than 536870912 bytes" --trace "$T/sparse.csv"
rm -f "$T/sparse.csv"
: >"$T/empty.csv"
expect_bad "empty file" --trace "$T/empty.csv"
printf 'submit_s,workload\n' >"$T/nojobs.csv"
expect_bad "no jobs" --trace "$T/nojobs.csv" --workloads data/workloads.csv

# '-' reads standard input, for the trace or the catalog (not both); messages name it.
"$CARMA" sim --trace - --policy auto <data/trace-mix90.csv >"$T/out" || fail "--trace -"
"$CARMA" sim --trace data/trace-mix90.csv --policy auto >"$T/ref" || fail "mix90 auto"
cmp -s "$T/out" "$T/ref" || fail "--trace - gave another table: $(diff "$T/out" "$T/ref")"
"$CARMA" sim --trace data/trace-mix90.csv --workloads - --policy auto <data/workloads.csv \
    >"$T/out" || fail "--workloads -"
cmp -s "$T/out" "$T/ref" || fail "--workloads - gave another table"
rc=0
printf 'submit_s,workload\n0,vgg\n0,nope\n' |
    "$CARMA" sim --trace - >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" -eq 2 ] && [ ! -s "$T/out" ] && grep -q "^carma sim: <stdin>:3: unknown workload 'nope'" "$T/err" ||
    fail "--trace - error: $rc $(cat "$T/err")"
expect_bad "standard input can only be read once" --trace - --workloads -
# A compressed or binary file is named as such, not as a NUL byte in text.
gzip -c data/trace-t1.csv >"$T/t1.csv.gz"
expect_bad "t1.csv.gz: looks compressed (gzip): decompress it first" --trace "$T/t1.csv.gz"
expect_bad "t1.csv.gz: looks compressed (gzip)" --trace data/trace-t1.csv --workloads "$T/t1.csv.gz"
expect_bad "carma: binary file, not text" --trace "$CARMA"
# A byte order mark in the middle of a file is shown, not left invisible.
printf 'submit_s,workload\n\357\273\2770,vgg\n' >"$T/bommid.csv"
expect_bad "bommid.csv:2: submit_s '\\\\uFEFF0'" --trace "$T/bommid.csv" --workloads data/workloads.csv
# A time too small for a double is in range (it reads as 0 or a subnormal).
printf 'submit_s,workload\n4.9e-324,vgg\n' >"$T/subnormal.csv"
"$CARMA" sim --trace "$T/subnormal.csv" --workloads data/workloads.csv --policy auto >"$T/out" ||
    fail "4.9e-324 refused"

# A UTF-8 byte order mark (Excel's) is not part of a header, in a trace or a catalog.
printf '\357\273\277submit_s,workload\n0,vgg\n' >"$T/bom.csv"
printf '\357\273\277' >"$T/bomcat.csv"
cat data/workloads.csv >>"$T/bomcat.csv"
"$CARMA" sim --trace "$T/bom.csv" --workloads "$T/bomcat.csv" --policy auto >"$T/out" ||
    fail "a byte order mark was refused"
grep -q "^auto " "$T/out" || fail "no row after a byte order mark"
# A second one is bad text, refused at line 1 however the format is chosen.
printf '\357\273\277\357\273\277submit_s,workload\n0,vgg\n' >"$T/bom2.csv"
expect_bad "bom2.csv:1: a second byte order mark" --trace "$T/bom2.csv" --workloads data/workloads.csv
expect_bad "bom2.csv:1: a second byte order mark" --trace "$T/bom2.csv" --trace-format carma-csv \
    --workloads data/workloads.csv

# Given-up jobs are shown, and their policy is flagged: its figures count fewer jobs.
"$CARMA" sim --trace data/trace-mix90.csv --policy or-rr,exclusive --max-attempts 1 >"$T/out" ||
    fail "max-attempts run"
grep -q "gaveUp" "$T/out" || fail "no gaveUp column"
grep -q "^or-rr gave up [1-9][0-9]* of 90 jobs" "$T/out" || fail "given-up jobs not flagged"
grep -q "^exclusive gave up" "$T/out" && fail "exclusive flagged"
# Given-up jobs' unfinished work costs no energy and their finish no makespan: on t1 or-rr's
# energy falls below the (bound), so its row has neither span/ex nor kWh/ex (table and
# report) and the note says its makespan and energy may look better.
"$CARMA" sim --trace data/trace-t1.csv --policy exclusive,or-rr --max-attempts 1 \
    --report "$T/gaveup.html" >"$T/out" || fail "t1 max-attempts run"
grep -Eq '^or-rr +([0-9.]+ +){4}[1-9][0-9]* +[1-9][0-9]* .* - +-$' "$T/out" ||
    fail "span/ex or kWh/ex shown for a row that gave jobs up: $(cat "$T/out")"
grep -Eq '^exclusive .* 1\.000 +1\.000$' "$T/out" || fail "exclusive's ratios: $(cat "$T/out")"
grep -Eq '^\(bound\) .* 0\.[0-9]{3} +0\.[0-9]{3}$' "$T/out" || fail "bound's ratios: $(cat "$T/out")"
grep -q "^or-rr gave up [1-9][0-9]* of 60 jobs .* its makespan and energy may look better than the (bound), and it has no span/ex or kWh/ex (-)\.$" \
    "$T/out" || fail "the note does not say energy may beat the (bound): $(cat "$T/out")"
python3 - "$T/gaveup.html" <<'PY' || fail "report: ratios of a row that gave jobs up"
import re, sys
html = open(sys.argv[1], encoding="utf-8").read()
row = re.search(r"<tr><td>or-rr</td>(.*?)</tr>", html).group(1)
cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
assert cells[-1] == "-" and cells[-2] == "-" and cells[1] != "-", cells
assert "its makespan and energy may look better than the (bound)" in html
PY
# exclusive gave up the 10-hour job that auto finished: auto's makespan is not 10 times
# worse, it is not comparable; no row, the (bound) included, has ratios, and the line
# under the table says why (table and report).
printf 'name,model,batch,gpus,mem_mib,total_min,smact,smocc,drama,ramp_s\nA,a,1,1,1000,60,0.5,0.2,0.2,30\nBIG,big,1,1,35000,600,0.5,0.2,0.2,30\n' \
    >"$T/exgu-wl.csv"
printf 'submit_s,workload\n0,BIG\n0,A\n' >"$T/exgu.csv"
"$CARMA" sim --trace "$T/exgu.csv" --workloads "$T/exgu-wl.csv" --gpus 1xv100-32gb,1xa100-40gb \
    --policy exclusive,auto --max-attempts 1 --report "$T/exgu.html" >"$T/out" ||
    fail "exclusive gives up"
grep -Eq '^exclusive +1\.00 .* 1 +1 .* - +-$' "$T/out" || fail "exclusive's ratios: $(cat "$T/out")"
grep -Eq '^auto +10\.00 .* - +-$' "$T/out" || fail "auto's ratios: $(cat "$T/out")"
grep -Eq '^\(bound\) .* - +-$' "$T/out" || fail "bound's ratios: $(cat "$T/out")"
grep -q "relative to exclusive (no ratios: exclusive gave jobs up)\.$" "$T/out" ||
    fail "no ratios not said: $(cat "$T/out")"
# Percentiles interpolate between order statistics: auto's two JCTs, 1 h and 10 h, give
# p50 5.5 h and p99 9.91 h (table and JSON), and their waits (none) 0.
grep -Eq '^auto +10\.00 +5\.50 +9\.91 +0\.00 ' "$T/out" || fail "auto's JCTs: $(cat "$T/out")"
"$CARMA" sim --trace "$T/exgu.csv" --workloads "$T/exgu-wl.csv" --gpus 1xv100-32gb,1xa100-40gb \
    --policy auto --json >"$T/exgu.json" || fail "exgu json"
python3 - "$T/exgu.json" <<'PY' || fail "percentiles: $(cat "$T/exgu.json")"
import json, sys
a = json.load(open(sys.argv[1]))["policies"]["auto"]
assert abs(a["p50_jct_s"] - 5.5 * 3600) < 1e-6 and abs(a["p99_jct_s"] - 9.91 * 3600) < 1e-6, a
assert a["p50_wait_s"] == 0 and a["p99_wait_s"] == 0 and a["mean_wait_s"] == 0, a
PY
python3 - "$T/exgu.html" <<'PY' || fail "report: ratios against an exclusive that gave jobs up"
import re, sys
html = open(sys.argv[1], encoding="utf-8").read()
for p in ("exclusive", "auto", r"\(bound\)"):
    row = re.search(r"<tr><td>%s</td>(.*?)</tr>" % p, html).group(1)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    assert cells[-1] == "-" and cells[-2] == "-", (p, cells)
assert "(no ratios: exclusive gave jobs up)" in html
PY
"$CARMA" sim --trace data/trace-t1.csv --policy exclusive,or-rr --max-attempts 1 --json \
    >"$T/out" || fail "t1 max-attempts run, json"
python3 - "$T/out" <<'PY' || fail "t1 max-attempts: json"
import json, sys
r = json.load(open(sys.argv[1]))
o, b = r["policies"]["or-rr"], r["bounds"]
# energy_j stays the energy spent, below the bound here; the note says why
assert o["gave_up"] > 0 and isinstance(o["energy_j"], float) and o["energy_j"] < b["energy_j"], o
assert any(n.startswith("or-rr gave up") and "energy may look better" in n for n in r["notes"]), r
PY

# A run that finished no job has no makespan, JCT or wait ('-', JSON null), and no span/ex
# is taken from it; its energy and lost GPU time are those of the crashed run.
printf 'name,model,batch,gpus,mem_mib,total_min,smact,smocc,drama,ramp_s\nhuge,huge,1,1,50000,10,0.9,0.36,0.36,30\n' \
    >"$T/hugecat.csv"
printf 'submit_s,workload\n0,huge\n' >"$T/huge.csv"
"$CARMA" sim --trace "$T/huge.csv" --workloads "$T/hugecat.csv" --gpus 1xv100-32gb,1xa100-80gb \
    --policy exclusive,auto --max-attempts 1 >"$T/out" || fail "all given up"
grep -Eq '^exclusive +- +- +- +- +1 +1 ' "$T/out" || fail "figures of no finished job: $(cat "$T/out")"
grep -Eq '^auto +0\.17 +0\.17 +0\.17 +0\.00 .* - +-$' "$T/out" ||
    fail "span/ex or kWh/ex from a run that finished nothing: $(cat "$T/out")"
grep -q "relative to exclusive (none: exclusive finished no job)\.$" "$T/out" ||
    fail "no ratios not said: $(cat "$T/out")"
grep -q "^exclusive gave up 1 of 1 jobs after --max-attempts: no job finished" "$T/out" ||
    fail "no finished job not said: $(cat "$T/out")"
"$CARMA" sim --trace "$T/huge.csv" --workloads "$T/hugecat.csv" --gpus 1xv100-32gb,1xa100-80gb \
    --policy exclusive,auto --max-attempts 1 --json >"$T/out" || fail "all given up, json"
python3 - "$T/out" <<'PY' || fail "all given up: json"
import json, sys
ex = json.load(open(sys.argv[1]))["policies"]["exclusive"]
for k in ("makespan_s", "mean_jct_s", "p50_jct_s", "p99_jct_s", "mean_wait_s", "p50_wait_s",
          "p99_wait_s"):
    assert ex[k] is None, (k, ex)
assert ex["energy_j"] > 0 and ex["lost_gpu_s"] > 0 and ex["gave_up"] == 1, ex
PY

# est-* on a trace without estimates says every job asks for a whole GPU.
"$CARMA" sim --trace data/traces/philly-muri/trace3.csv --gpus 32xa100-40gb \
    --policy est-magm,exclusive >"$T/out" || fail "est-magm on muri"
grep -q "^est-magm: the trace gives no gpumemnet estimates" "$T/out" ||
    fail "est-* without estimates not said"
"$CARMA" sim --trace data/traces/philly-muri/trace3.csv --gpus 32xa100-40gb \
    --policy est-magm,auto,est-lug --json >"$T/out" || fail "est-magm on muri, json"
python3 - "$T/out" <<'PY' || fail "est-* without estimates not said in the JSON"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["trace_has_estimates"] is False, r
assert any(n.startswith("est-magm, est-lug: the trace gives no gpumemnet estimates")
           for n in r["notes"]), r["notes"]
PY
# ... and only when an est-* policy runs: auto has its own bound.
"$CARMA" sim --trace data/traces/philly-muri/trace3.csv --gpus 32xa100-40gb \
    --policy auto,exclusive >"$T/out" || fail "auto on muri"
grep -q "estimate" "$T/out" && fail "est-* note without an est-* policy: $(cat "$T/out")"
"$CARMA" sim --trace data/traces/philly-muri/trace3.csv --gpus 32xa100-40gb \
    --policy auto --json >"$T/out" || fail "auto on muri, json"
python3 - "$T/out" <<'PY' || fail "est-* note without an est-* policy in the JSON"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["notes"] == [], r["notes"]
PY

# Real-world trace variants (docs/traces.md). Gavel's 10-field layout (physical_cluster/),
# detected from its fields whatever the name; priority weights and SLOs are noted.
{
    printf 'ResNet-50 (batch size 64)\tpython3 main.py -b 64\timagenet\t--num_minibatches\t1\t5458\t2\t1\t-1.000000\t0\n'
    printf 'A3C\tpython3 main.py\trl\t--max-steps\t0\t8233\t1\t2\t-1.000000\t10\n'
    printf 'LM (batch size 10)\tpython main.py\tlm\t--steps\t1\t14336\t1\t1\t1.5\t20\n'
} >"$T/g10.txt"
"$CARMA" sim --trace "$T/g10.txt" --gpus 4xa100-40gb --policy auto,exclusive --json \
    --report "$T/g10.html" >"$T/out" || fail "gavel 10 fields"
python3 - "$T/out" <<'PY' || fail "gavel 10 fields: $(cat "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["trace_format"] == "gavel" and r["jobs"] == 3, r
assert r["notes"] == ["1 job has a priority weight other than 1 and 1 an SLO (Gavel): carma reads and checks them, but no policy uses them."], r["notes"]
PY
grep -q "1 job has a priority weight other than 1 and 1 an SLO (Gavel)" "$T/g10.html" ||
    fail "gavel note not in the report"
# ... the 9-field form, without the working directory
cut -f1,2,4- "$T/g10.txt" >"$T/g9.trace"
"$CARMA" sim --trace "$T/g9.trace" --gpus 4xa100-40gb --policy exclusive --json >"$T/out9" ||
    fail "gavel 9 fields"
"$CARMA" sim --trace "$T/g10.txt" --gpus 4xa100-40gb --policy exclusive --json >"$T/out10" ||
    fail "gavel 10 fields again"
python3 - "$T/out9" "$T/out10" <<'PY' || fail "gavel 9 and 10 fields differ"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert a["policies"] == b["policies"] and a["jobs"] == 3, (a, b)
PY
# Gavel's older 6 fields name no batch size: refused, saying so.
printf 'ResNet-18\tcd x && python3 main.py\t--num_steps\t101792\t10\t1\n' >"$T/g6.txt"
expect_bad "g6.txt:1: 6 tab-separated fields: Gavel's older layout .* name no batch size" \
    --trace "$T/g6.txt"
# Unknown names: all of them in one message, with line and jobs, and no file carma never reads.
printf 'job_id,num_gpu,submit_time,model_name,batch_size,duration\n0,1,0,resnet50,32,10\n1,1,1,dqn,32,10\n2,1,2,ResNet18,32,10\n3,1,3,resnet50,32,10\n' \
    >"$T/unk.csv"
expect_bad "unk.csv:2: 2 unknown models: 'resnet50' (line 2, 2 jobs), 'ResNet18' (line 4, 1 job). carma's model table is built in" \
    --trace "$T/unk.csv"
grep -q "model-profiles" "$T/err" && fail "unknown models: names a file carma does not read"
# A reordered Muri header is detected.
printf 'model_name,duration,job_id,batch_size,submit_time,num_gpu\ndqn,10000000,0,32,0,1\n' \
    >"$T/reordered.csv"
"$CARMA" sim --trace "$T/reordered.csv" --policy exclusive --json >"$T/out" ||
    fail "reordered muri header"
grep -q '"trace_format": "muri"' "$T/out" || fail "reordered muri header: $(cat "$T/out")"
# Alibaba: pods that name a GPU model are counted in a note (table, JSON, report); a list
# without times says it cannot be replayed.
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\np0,1,1,1,500,T4,LS,Running,0,400,10\np1,1,1,1,500,,LS,Running,5,400,10\np2,1,1,1,500,V100M16|V100M32,LS,Running,6,400,10\n' \
    >"$T/spec.csv"
"$CARMA" sim --trace "$T/spec.csv" --policy auto --report "$T/spec.html" >"$T/out" ||
    fail "alibaba gpu_spec"
grep -qx "2 pods name a GPU model (gpu_spec): carma places them on any kind." "$T/out" ||
    fail "gpu_spec note not in the table: $(cat "$T/out")"
grep -q "2 pods name a GPU model (gpu_spec): carma places them on any kind." "$T/spec.html" ||
    fail "gpu_spec note not in the report"
"$CARMA" sim --trace "$T/spec.csv" --policy auto --json >"$T/out" || fail "alibaba gpu_spec json"
python3 - "$T/out" <<'PY' || fail "gpu_spec note not in the JSON: $(cat "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["notes"] == ["2 pods name a GPU model (gpu_spec): carma places them on any kind."], r
PY
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,1,1,500\n' >"$T/multigpu.csv"
expect_bad "multigpu.csv:1: this Alibaba pod list has no creation_time, scheduled_time or deletion_time column (as the multigpu\* lists of cluster-trace-gpu-v2023), so it cannot be replayed in time" \
    --trace "$T/multigpu.csv"

# CARMA's own layout: the .sh trace in assets/..., the .rad tasks in workloads/.
mkdir -p "$T/carma/assets/traces" "$T/carma/workloads"
printf '# a task\nconda activate tf\npython /x/vgg16.py\nvgg16.model\n/raid/imagenet\n32\nexclusive\n1\n6684\n21525.8262\n3121.344643\n16000\n' \
    >"$T/carma/workloads/vgg.rad"
printf 'sleep 0\npython /h/rad/src/submit.py --task /h/rad/workloads/vgg.rad\nsleep 5\npython /h/rad/src/submit.py --task /h/rad/workloads/vgg.rad\n' \
    >"$T/carma/assets/traces/t.sh"
expect_bad "t.sh:2: task 'vgg'" --trace "$T/carma/assets/traces/t.sh" --workloads data/workloads.csv
# on standard input the .rad files are looked up in the current folder, and the error says
# where to name theirs
rc=0
"$CARMA" sim --trace - --workloads data/workloads.csv <"$T/carma/assets/traces/t.sh" >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -qF "<stdin>:2: task 'vgg': ./vgg.rad: No such file or directory (without --rad-dir, .rad files are looked up in the trace's folder, the current one for a trace on standard input: give their folder with --rad-dir DIR)" "$T/err" ||
    fail "--trace - without --rad-dir: exit $rc, $(cat "$T/err")"
"$CARMA" sim --trace "$T/carma/assets/traces/t.sh" --workloads data/workloads.csv \
    --rad-dir "$T/carma/workloads" --policy exclusive --json >"$T/out" || fail "--rad-dir"
python3 - "$T/out" <<'PY' || fail "--rad-dir: the trace"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["trace_format"] == "carma-sh" and r["jobs"] == 2, r
assert r["policies"]["exclusive"]["succeeded"] == 2, r
PY
expect_bad "--rad-dir: only a CARMA .sh trace reads .rad files; data/trace-t1.csv is a carma-csv trace" \
    --trace data/trace-t1.csv --rad-dir "$T/carma/workloads"
expect_bad "--rad-dir $T/carma/nope: No such file or directory" \
    --trace "$T/carma/assets/traces/t.sh" --workloads data/workloads.csv --rad-dir "$T/carma/nope"
expect_bad "--rad-dir $T/carma/workloads/vgg.rad: not a folder" \
    --trace "$T/carma/assets/traces/t.sh" --workloads data/workloads.csv \
    --rad-dir "$T/carma/workloads/vgg.rad"
"$CARMA" sim --help | grep -q -- "--rad-dir DIR" || fail "--rad-dir not in --help"
# A task file that is a FIFO (or a device) is refused, not waited on for a writer.
mkdir -p "$T/carma/fifo"
mkfifo "$T/carma/fifo/vgg.rad"
rc=0
timeout 20 "$CARMA" sim --trace "$T/carma/assets/traces/t.sh" --workloads data/workloads.csv \
    --rad-dir "$T/carma/fifo" >"$T/out" 2>"$T/err" </dev/null || rc=$?
[ "$rc" = 2 ] && [ ! -s "$T/out" ] &&
    grep -qF "t.sh:2: task 'vgg': $T/carma/fifo/vgg.rad: not a regular file" "$T/err" ||
    fail "a FIFO task file: exit $rc, $(cat "$T/err")"

# --estimator carma takes carma's bound from the catalog (est_carma_mib) where it has one,
# and says how many jobs fall back to history; no est-* job crashes on it.
"$CARMA" sim --trace data/trace-mix90.csv --policy est-magm,est-lug --estimator carma \
    >"$T/out" || fail "est-* with carma's bound"
grep -q "^est-magm, est-lug: --estimator carma: 78 of 90 jobs have carma's bound in the catalog" "$T/out" ||
    fail "carma's bound not said: $(tail -1 "$T/out")"
awk '/^est-(magm|lug) / && $6 != 0 { bad = 1 } END { exit bad }' "$T/out" || fail "est-* OOM on carma's bound"

# The table's header names settings that differ from the defaults; the same seed gives
# the same bytes (the speed goes to a terminal's stderr only).
"$CARMA" sim --trace data/trace-mix90.csv --policy auto --jitter 0.2 --seed 3 \
    --estimator horus --max-attempts 0 >"$T/a" 2>"$T/err" || fail "jittered run"
head -1 "$T/a" | grep -qx "carma sim: 90 jobs on 4xa100-40gb, sharing mps, jitter 0.2 (seed 3), estimator horus, max attempts 0 (no limit)" ||
    fail "settings not in the header: $(head -1 "$T/a")"
"$CARMA" sim --trace data/trace-mix90.csv --policy auto --jitter 0.2 --seed 3 \
    --estimator horus --max-attempts 0 >"$T/b" 2>&1 || fail "jittered run again"
cmp -s "$T/a" "$T/b" || fail "the same seed gave another table: $(diff "$T/a" "$T/b")"
expect_bad "expected an integer in \[0, 2^63 - 1\]" --trace data/trace-mix90.csv \
    --seed 9223372036854775808
# --jitter -0 is no jitter, and says 0, not -0 (JSON and report)
"$CARMA" sim --trace data/trace-t1.csv --policy auto --jitter -0 --json >"$T/out" ||
    fail "--jitter -0"
grep -q '"jitter": 0.0,' "$T/out" || fail "--jitter -0 in the JSON: $(grep jitter "$T/out")"
# A jittered run time past the limit is named, with the factor drawn and the settings.
printf 'name,model,batch,gpus,mem_mib,total_min,smact,smocc,drama,ramp_s\nbig,resnet,32,1,1000,1e8,0.5,0.2,0.2,30\n' \
    >"$T/bigcat.csv"
printf 'submit_s,workload\n0,big\n1,big\n2,big\n3,big\n' >"$T/big.csv"
expect_bad "big.csv:[0-9]: job big: run time 6e9 s times [0-9.]* (the jitter) is [0-9.e]* s: not positive or above 1e10 s (--jitter 2 --seed 1)" \
    --trace "$T/big.csv" --workloads "$T/bigcat.csv" --policy exclusive --jitter 2 --seed 1

# --report is checked before the run; a write that fails at the end keeps the figures.
expect_bad "--report $T/none/x.html: No such file or directory" --trace data/trace-mix90.csv \
    --report "$T/none/x.html"
expect_bad "--report $T: a folder" --trace data/trace-mix90.csv --report "$T"
# ... and refused when it is one of the run's inputs (also through a link or the default
# catalog beside the trace), which stay as they were.
mkdir -p "$T/in/rad"
cp data/trace-t1.csv "$T/in/t1.csv"
cp data/workloads.csv "$T/in/workloads.csv"
ln -s t1.csv "$T/in/t1-link.html"
expect_bad "--report $T/in/t1.csv: is the trace it reads" --trace "$T/in/t1.csv" \
    --policy auto --report "$T/in/t1.csv"
expect_bad "--report $T/in/t1-link.html: is the trace it reads" --trace "$T/in/t1.csv" \
    --policy auto --report "$T/in/t1-link.html"
expect_bad "--report $T/in/workloads.csv: is the workload catalog it reads" \
    --trace "$T/in/t1.csv" --policy auto --report "$T/in/workloads.csv"
cmp -s "$T/in/t1.csv" data/trace-t1.csv && cmp -s "$T/in/workloads.csv" data/workloads.csv ||
    fail "--report replaced an input"
printf '# a task\nconda activate tf\npython /x/vgg16.py\nvgg16.model\n/raid/imagenet\n32\nexclusive\n1\n6684\n' \
    >"$T/in/rad/vgg.rad"
printf 'python /h/rad/src/submit.py --task /h/rad/workloads/vgg.rad\n' >"$T/in/t.sh"
expect_bad "--report $T/in/rad/vgg.rad: is a task file of the trace it reads" \
    --trace "$T/in/t.sh" --workloads data/workloads.csv --rad-dir "$T/in/rad" \
    --policy auto --report "$T/in/rad/vgg.rad"
grep -q "^# a task" "$T/in/rad/vgg.rad" || fail "--report replaced a .rad file"
if [ -w /dev/full ]; then
    rc=0
    "$CARMA" sim --trace data/trace-t1.csv --policy auto --report /dev/full >"$T/out" \
        2>"$T/err" || rc=$?
    [ "$rc" = 1 ] && grep -q "^auto " "$T/out" && grep -q -- "--report /dev/full" "$T/err" ||
        fail "a report write error: exit $rc, $(cat "$T/out" "$T/err")"
fi

# A report whose write fails half way (here a file size limit, as a full disk would)
# leaves the old report as it was, and no temporary file beside it; the message says why.
mkdir "$T/rep"
printf '<p>old report</p>\n' >"$T/rep/old.html"
rc=0
(
    ulimit -f 8
    trap '' XFSZ
    exec "$CARMA" sim --trace data/trace-t1.csv --policy auto --report "$T/rep/old.html"
) >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" = 1 ] && grep -q "^auto " "$T/out" &&
    grep -q -- "--report $T/rep/old.html: write failed: File too large" "$T/err" ||
    fail "a report cut short: exit $rc, $(cat "$T/out" "$T/err")"
[ "$(cat "$T/rep/old.html")" = "<p>old report</p>" ] ||
    fail "a failed --report write replaced the old report: $(head -c 200 "$T/rep/old.html")"
[ "$(ls -A "$T/rep")" = "old.html" ] || fail "files left beside the report: $(ls -A "$T/rep")"
# A write that fails once (EIO, a disk's passing fault) while later ones succeed and
# change errno (tests/fake/writefail): the message names the failed write's errno.
rc=0
LD_PRELOAD="$CARMA_FAKE/writefail/libwritefail.so" CARMA_FAKE_WRITE_ERRNO=5 \
    ASAN_OPTIONS="$PRELOAD_ASAN_OPTIONS" \
    "$CARMA" sim --trace data/trace-t1.csv --policy auto --report "$T/rep/old.html" \
    >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" = 1 ] && grep -q -- "--report $T/rep/old.html: write failed: Input/output error" "$T/err" ||
    fail "a write's passing fault: exit $rc, $(cat "$T/out" "$T/err")"
[ "$(cat "$T/rep/old.html")" = "<p>old report</p>" ] ||
    fail "a --report write that failed once replaced the old report"
[ "$(ls -A "$T/rep")" = "old.html" ] || fail "files left beside the report: $(ls -A "$T/rep")"
# Ctrl-C just as the new file is made (SIGINT raised as its open() returns, before carma
# knows the file: tests/fake/raiseat): held off until the file is registered, carma dies
# of it (status 130), the file removed, the old report as it was.
rc=0
LD_PRELOAD="$CARMA_FAKE/raiseat/libraiseat.so" CARMA_FAKE_RAISE_SIG=2 CARMA_FAKE_RAISE_AT=open-tmp \
    ASAN_OPTIONS="$PRELOAD_ASAN_OPTIONS" \
    "$CARMA" sim --trace data/trace-t1.csv --policy auto --report "$T/rep/old.html" \
    >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" = 130 ] || fail "carma sim not ended by SIGINT at the new file's open: exit $rc, $(cat "$T/err")"
[ "$(cat "$T/rep/old.html")" = "<p>old report</p>" ] ||
    fail "SIGINT at the new file's open replaced the old report"
[ "$(ls -A "$T/rep")" = "old.html" ] ||
    fail "SIGINT at the new file's open: files left beside the report: $(ls -A "$T/rep")"
# A name of 250 bytes and more (NAME_MAX 255): the new file beside it takes a cut of it,
# and the report replaces the old one, nothing left beside it.
mkdir "$T/long"
LONG_NAME="$T/long/$(python3 -c 'print("r\u00e9" * 82 + ".html")')"
printf '<p>old report</p>\n' >"$LONG_NAME"
ino=$(stat -c %i "$LONG_NAME")
"$CARMA" sim --trace data/trace-t1.csv --policy auto --report "$LONG_NAME" >/dev/null \
    2>"$T/err" || fail "a report of a long name: $(cat "$T/err")"
grep -q "<svg" "$LONG_NAME" || fail "a report of a long name not written"
# replaced by the new file, not written in place (as where no new file can be made)
[ "$(stat -c %i "$LONG_NAME")" != "$ino" ] || fail "a report of a long name written in place"
[ "$(ls -A "$T/long" | wc -l)" = 1 ] || fail "files left beside the report: $(ls -A "$T/long")"
# Written whole, it replaces the file a link leads to (not the link), keeping its mode.
printf 'x\n' >"$T/rep/target.html"
chmod 640 "$T/rep/target.html"
ln -s target.html "$T/rep/link.html"
"$CARMA" sim --trace data/trace-t1.csv --policy auto --report "$T/rep/link.html" >/dev/null ||
    fail "a report through a link"
[ -L "$T/rep/link.html" ] && grep -q "</html>" "$T/rep/target.html" &&
    [ "$(stat -c %a "$T/rep/target.html")" = 640 ] ||
    fail "a report through a link: $(ls -l "$T/rep")"
[ "$(ls -A "$T/rep" | tr '\n' ' ')" = "link.html old.html target.html " ] ||
    fail "files left beside the report: $(ls -A "$T/rep")"
# The new file is no more open to others than the old one from its start: a reader
# who opened it before its mode was set would read on (SIGSTOP raised at that fchmod,
# tests/fake/raiseat: the new file looked at while carma is stopped there).
mkdir "$T/priv"
printf 'old\n' >"$T/priv/p.html"
chmod 600 "$T/priv/p.html"
(
    umask 022
    exec env LD_PRELOAD="$CARMA_FAKE/raiseat/libraiseat.so" CARMA_FAKE_RAISE_SIG=19 \
        ASAN_OPTIONS="$PRELOAD_ASAN_OPTIONS" \
        "$CARMA" sim --trace data/trace-t1.csv --policy auto --report "$T/priv/p.html"
) >/dev/null 2>"$T/err" &
pid=$!
i=0
while [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != T ] && [ $i -lt 200 ]; do
    sleep 0.05
    i=$((i + 1))
done
newmode=$(stat -c %a "$T"/priv/.p.html.*.tmp 2>&1) || true
kill -CONT "$pid" 2>/dev/null || true # (ended: no stop, the check below says)
wait "$pid" || fail "a report of a private file: $(cat "$T/err")"
[ "$newmode" = 600 ] || fail "a private page's new file was made open to others: $newmode"
[ "$(stat -c %a "$T/priv/p.html")" = 600 ] && grep -q "</html>" "$T/priv/p.html" ||
    fail "a report of a private file: $(ls -lA "$T/priv")"
# What a new file in its place would lose is kept: a file of several hard links is
# written in place (every name sees the new page), as is one with ACLs or other extended
# attributes; root writing a user's file gives the new one that user and group.
mkdir "$T/keep"
printf 'old\n' >"$T/keep/a.html"
ln "$T/keep/a.html" "$T/keep/b.html"
ino=$(stat -c %i "$T/keep/a.html")
"$CARMA" sim --trace data/trace-t1.csv --policy auto --report "$T/keep/a.html" >/dev/null ||
    fail "a report of two hard links"
[ "$(stat -c %i:%h "$T/keep/a.html")" = "$ino:2" ] && grep -q "</html>" "$T/keep/b.html" ||
    fail "a report split its hard links: $(ls -li "$T/keep")"
printf 'old\n' >"$T/keep/acl.html"
if python3 - "$T/keep/acl.html" <<'PY' 2>/dev/null; then
import os, struct, sys
# an access ACL granting uid 65534 rw (setfacl -m u:65534:rw), and a user attribute
acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, p, i) for t, p, i in
    [(1, 6, 0xFFFFFFFF), (2, 6, 65534), (4, 4, 0xFFFFFFFF), (0x10, 6, 0xFFFFFFFF), (0x20, 4, 0xFFFFFFFF)])
os.setxattr(sys.argv[1], "system.posix_acl_access", acl)
os.setxattr(sys.argv[1], "user.carma-test", b"1")
PY
    "$CARMA" sim --trace data/trace-t1.csv --policy auto --report "$T/keep/acl.html" >/dev/null ||
        fail "a report of a file with ACLs"
    python3 - "$T/keep/acl.html" <<'PY' || fail "a report dropped a file's ACL or attributes"
import os, sys
names = os.listxattr(sys.argv[1])
assert "system.posix_acl_access" in names and "user.carma-test" in names, names
assert b"</html>" in open(sys.argv[1], "rb").read()
PY
    # A folder's default ACL gives the new file the ACL the old one has: nothing is lost,
    # the file is replaced whole (as NFSv4 gives every file an ACL from its mode).
    mkdir "$T/dacl"
    python3 - "$T/dacl" <<'PY' || fail "setting a default ACL"
import os, struct, sys
acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, p, i) for t, p, i in
    [(1, 6, 0xFFFFFFFF), (2, 6, 65534), (4, 4, 0xFFFFFFFF), (0x10, 6, 0xFFFFFFFF), (0x20, 4, 0xFFFFFFFF)])
os.setxattr(sys.argv[1], "system.posix_acl_default", acl)
PY
    printf 'old\n' >"$T/dacl/r.html"
    ino=$(stat -c %i "$T/dacl/r.html")
    "$CARMA" sim --trace data/trace-t1.csv --policy auto --report "$T/dacl/r.html" >/dev/null ||
        fail "a report in a folder with a default ACL"
    [ "$(stat -c %i "$T/dacl/r.html")" != "$ino" ] ||
        fail "a file whose ACL its folder gives was written in place, not replaced"
    python3 - "$T/dacl/r.html" <<'PY' || fail "a report in a folder with a default ACL lost it"
import os, sys
assert "system.posix_acl_access" in os.listxattr(sys.argv[1])
assert b"</html>" in open(sys.argv[1], "rb").read()
PY
else
    echo "SKIP ACLs: this file system takes none"
fi
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    printf 'old\n' >"$T/keep/user.html"
    chown nobody:"$(id -gn nobody)" "$T/keep/user.html"
    chmod 604 "$T/keep/user.html"
    "$CARMA" sim --trace data/trace-t1.csv --policy auto --report "$T/keep/user.html" \
        >/dev/null || fail "root's report into a user's file"
    [ "$(stat -c %U:%G:%a "$T/keep/user.html")" = "nobody:$(id -gn nobody):604" ] &&
        grep -q "</html>" "$T/keep/user.html" ||
        fail "root's report took a user's file: $(ls -l "$T/keep/user.html")"
    # a user who may write another's file (not give a new one its owner): in place
    if command -v setpriv >/dev/null; then
        # (nobody's copies of carma and the trace: the checkout may be private; $T
        # opened to them for the while)
        chmod 711 "$T" && chmod 777 "$T/keep" && cp "$CARMA" data/trace-t1.csv data/workloads.csv "$T/keep/" &&
            chmod 755 "$T/keep/carma" && chmod 644 "$T/keep/trace-t1.csv" "$T/keep/workloads.csv" ||
            fail "nobody's copies"
        printf 'old\n' >"$T/keep/root.html"
        chmod 666 "$T/keep/root.html"
        (cd /tmp && setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
            "$T/keep/carma" sim --trace "$T/keep/trace-t1.csv" --workloads "$T/keep/workloads.csv" --policy auto \
            --report "$T/keep/root.html" >/dev/null 2>"$T/err") ||
            fail "nobody's report into root's file: $(cat "$T/err")"
        chmod 700 "$T"
        [ "$(stat -c %U "$T/keep/root.html")" = root ] && grep -q "</html>" "$T/keep/root.html" ||
            fail "nobody's report took root's file: $(ls -l "$T/keep/root.html")"
    fi
fi
[ "$(ls -A "$T/keep" | wc -l)" = "$(ls "$T/keep" | wc -l)" ] ||
    fail "files left beside the reports: $(ls -A "$T/keep")"

# JSON stays valid UTF-8 whatever bytes the path holds, and states the run's settings.
bad=$(printf "$T/a\377b.csv")
cp data/trace-t1.csv "$bad"
"$CARMA" sim --trace "$bad" --workloads data/workloads.csv --policy auto --jitter 0.1 \
    --seed 7 --json >"$T/out" || fail "json with a non-UTF-8 path"
python3 - "$T/out" <<'PY' || fail "json settings"
import json, sys
r = json.load(open(sys.argv[1], encoding="utf-8"))
assert r["trace"].endswith("a\ufffdb.csv"), r["trace"]
assert (r["seed"], r["jitter"], r["max_attempts"], r["estimator"]) == (7, 0.1, 3, "gpumemnet"), r
assert r["trace_format"] == "carma-csv" and r["jobs"] == 60, r
assert r["left_out"] == {"pods_without_gpu": 0, "pods_never_scheduled": 0}, r
PY
# A write error is an error.
if [ -w /dev/full ]; then
    rc=0
    "$CARMA" sim --trace data/trace-t1.csv --policy auto >/dev/full 2>"$T/err" || rc=$?
    [ "$rc" -eq 1 ] || fail "write error: exit $rc"
    grep -q "writing standard output" "$T/err" || fail "write error not said"
fi
# carma help sim is carma sim --help; getopt's messages name the command.
"$CARMA" help sim | grep -q "^usage: carma sim" || fail "carma help sim"
rc=0
"$CARMA" sim --bogus >/dev/null 2>"$T/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "^carma sim: unrecognized option" "$T/err" || fail "--bogus: $rc"

# Progress: on a terminal, runs that take over 0.5 s show a bar on stderr (policy, jobs),
# erased before anything else is printed, with --json too (issue 2: long runs show a bar on a
# terminal); a quick run and a pipe show none.
LONG="--trace data/trace-mix90.csv --gpus 65535xa100-40gb --policy all"
if command -v script >/dev/null 2>&1; then
    script -qec "'$CARMA' sim $LONG >'$T/tty.out'" /dev/null </dev/null >"$T/tty.err" ||
        fail "long run on a terminal failed: $(cat "$T/tty.err")"
    grep -q "^auto " "$T/tty.out" || fail "long run on a terminal: no table"
    python3 - "$T/tty.err" <<'PY' || fail "progress bar on a terminal: $(cat -v "$T/tty.err")"
import re, sys
err = open(sys.argv[1], "rb").read().decode()
bars = re.findall(r"\r\[([#.]{20})\] +(\d+)%  policy (\d+)/11 (\S+)  ([\d,]+)/90 jobs\x1b\[K", err)
assert bars, "no bar"
assert all(b[0] == "#" * b[0].count("#") + "." * b[0].count(".") for b in bars), bars
# erased (carriage return, erase line) before the speed line that ends the run
last = err.rfind("jobs\x1b[K")
assert err[last:].startswith("jobs\x1b[K\r\x1b[Kcarma sim: 11 policies x 90 jobs"), repr(err[last:])
PY
    script -qec "'$CARMA' sim --trace data/trace-mix90.csv --policy auto >/dev/null" /dev/null \
        </dev/null >"$T/tty2.err" || fail "quick run on a terminal failed"
    ! grep -q "policy 1/1" "$T/tty2.err" || fail "a quick run showed a progress bar"
    script -qec "'$CARMA' sim $LONG --json >'$T/tty.json'" /dev/null </dev/null >"$T/tty3.err" ||
        fail "long --json run on a terminal failed"
    grep -q "policy [0-9]*/11 .*/90 jobs" "$T/tty3.err" || fail "--json on a terminal: no progress bar"
    python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$T/tty.json" ||
        fail "--json on a terminal: invalid JSON"
    # a terminal 40 columns wide: the bar is cut to 39, so that it never wraps
    script -qec "stty cols 40; '$CARMA' sim $LONG >/dev/null" /dev/null </dev/null >"$T/tty4.err" ||
        fail "long run on a narrow terminal failed"
    python3 - "$T/tty4.err" <<'PY' || fail "progress bar on a narrow terminal: $(cat -v "$T/tty4.err")"
import re, sys
err = open(sys.argv[1], "rb").read().decode()
bars = re.findall(r"\r(\[[^\r\x1b]*)\x1b\[K", err)
assert bars, "no bar"
assert all(len(b) == 39 for b in bars), [b for b in bars if len(b) != 39][:3]
PY
else
    echo "SKIP progress bar: script(1) is not installed"
fi
# Ctrl-C while the bar is drawn erases it (the terminal left clean) and the process dies
# of SIGINT, as a shell loop expects; an older --report stays as it was, nothing beside it.
mkdir "$T/int"
printf '<p>old report</p>\n' >"$T/int/r.html"
python3 - "$CARMA" "$T/int/r.html" $LONG <<'PY' || fail "SIGINT during a run"
import os, pty, select, signal, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "sim"] + sys.argv[3:] + ["--report", sys.argv[2]])
out, sent, end = b"", False, time.monotonic() + 120
while time.monotonic() < end:
    if not sent and b"jobs\x1b[K" in out:
        os.kill(pid, signal.SIGINT)
        sent = True
    if select.select([fd], [], [], 0.05)[0]:
        try:
            d = os.read(fd, 65536)
        except OSError:
            d = b""
        if not d:
            break
        out += d
_, st = os.waitpid(pid, 0)
assert sent, "no progress bar before the run ended: %r" % out[-300:]
assert os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGINT, (st, out[-300:])
assert out.endswith(b"jobs\x1b[K\r\x1b[K"), "the bar was not erased: %r" % out[-300:]
PY
[ "$(cat "$T/int/r.html")" = "<p>old report</p>" ] || fail "SIGINT: the old report changed"
[ "$(ls -A "$T/int")" = "r.html" ] || fail "SIGINT: files left: $(ls -A "$T/int")"
"$CARMA" sim $LONG >/dev/null 2>"$T/pipe.err" || fail "long run into a pipe failed"
[ ! -s "$T/pipe.err" ] || fail "stderr not a terminal, yet: $(cat -v "$T/pipe.err")"
echo "sim_cli: ok"
