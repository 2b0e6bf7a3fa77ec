#!/bin/sh
# Monitoring on the simulated backend, end to end: carmad with --http, real jobs
# (one alone long enough for its solo SMACT to be learned, two co-running), then
#  - GET /metrics with curl, parsed back strictly (tests/e2e/helpers/prom_check.py)
#    and its values checked against the simulated backend's documented rules;
#  - GET /v1/gpus and /v1/jobs as JSON; 404 and 405 answers;
#  - carma ls --json / show / usage carry the accounting;
#  - carma report renders the recorded history (PNG through headless Chromium when
#    present, kept under $CARMA_BUILD/artifacts/);
#  - carma top in tmux shows the GPUs and jobs and quits on q (skipped without tmux).
. "$(dirname "$0")/helpers/daemon_lib.sh"
command -v curl >/dev/null || { echo "monitor_http: skipped (no curl)"; exit 0; }
command -v python3 >/dev/null || { echo "monitor_http: skipped (no python3)"; exit 0; }
PORT=$(free_port) || fail "no free TCP port"
printf '[monitor]\nrecord_interval = 1\n[sched]\ngrace = 0.4\n' >> "$T/carmad.ini"
start_daemon --gpus sim:2xa100-40gb --http "127.0.0.1:$PORT"
URL="http://127.0.0.1:$PORT"
ART="${CARMA_BUILD:-build}/artifacts"
mkdir -p "$ART"

step "a job alone: its solo SMACT is learned (0.3 per process on sim)"
# running through the next steps, however loaded the host: it ends when $T/a.go appears
# (at the report step below), or after 300 s
a=$(submit --name alone --mem 4G -- sh -c "i=0; while [ ! -e $T/a.go ] && [ \$i -lt 3000 ]; do sleep 0.1; i=\$((i + 1)); done")
wait_until 20 sh -c "\"$CARMA\" show --json $a | grep -q '\"solo_smact\": 0.3'" ||
    fail "solo SMACT not learned: $("$CARMA" show --json "$a" | grep solo)"

step "/metrics parses back; values follow the simulated backend's rules"
curl -sf "$URL/metrics" > "$T/m1" || fail "GET /metrics"
python3 "$HELP/prom_check.py" < "$T/m1" > "$T/p1" || fail "bad /metrics: $(python3 "$HELP/prom_check.py" < "$T/m1" 2>&1 | tail -1)"
val() { awk -v k="$1" 'index($1, k) == 1 {print $2; exit}' "$T/p1"; }
g0='gpu=0,modelName=NVIDIA A100-SXM4-40GB'
# One process on a GPU: smact 0.3, smocc 0.15, drama 0.09, util 0.6, 4 GiB used.
on=$(awk '/^carma_gpu_jobs/ && $NF == 1 {print; exit}' "$T/p1" | sed 's/.*gpu=\([0-9]\).*/\1/')
[ -n "$on" ] || fail "no GPU holds the job: $(grep carma_gpu_jobs "$T/p1")"
line() { grep "^$1{.*gpu=$on," "$T/p1" | awk '{print $NF}'; }
[ "$(line carma_gpu_sm_active_ratio)" = 0.3 ] || fail "SMACT $(line carma_gpu_sm_active_ratio)"
[ "$(line carma_gpu_sm_occupancy_ratio)" = 0.15 ] || fail "SMOCC"
[ "$(line carma_gpu_dram_active_ratio)" = 0.09 ] || fail "DRAMA"
[ "$(line carma_gpu_utilization_ratio)" = 0.6 ] || fail "util"
[ "$(line carma_gpu_memory_used_bytes)" = 4294967296 ] || fail "memory used"
[ "$(line carma_gpu_memory_total_bytes)" = 42949672960 ] || fail "memory total"
grep -q "^carma_jobs{state=running} 1$" "$T/p1" || fail "jobs running"
grep -q '^carma_job_memory_used_bytes{.*job=1,.*} 4294967296$' "$T/p1" || fail "job memory"
grep -q '^carma_decision_latency_seconds_count{} [1-9]' "$T/p1" || fail "decision histogram"
grep -q '^carma_placements_total{} 1$' "$T/p1" || fail "placements"
e=$(grep '^carma_job_energy_joules_total{.*job=1,' "$T/p1" | awk '{print $NF}')
awk -v e="$e" 'BEGIN {exit !(e > 0)}' || fail "job energy $e"
head -c 300 "$T/m1"; echo

step "/v1/gpus, /v1/jobs as JSON; other paths and methods refused"
curl -sf "$URL/v1/gpus" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["gpus"])==2 and d["backend"]=="sim", d' || fail "/v1/gpus"
# /v1/gpus is carma gpus --json: the same keys
"$CARMA" gpus --json > "$T/gpus.json" || fail "gpus --json"
curl -sf "$URL/v1/gpus" | python3 -c 'import json,sys; h=json.load(sys.stdin); c=json.load(open(sys.argv[1])); \
c.pop("ok", None); assert sorted(h) == sorted(c), (sorted(h), sorted(c))' "$T/gpus.json" ||
    fail "/v1/gpus and gpus --json differ: $(curl -sf "$URL/v1/gpus" | head -c 200)"
curl -sf "$URL/v1/jobs" | python3 -c 'import json,sys; d=json.load(sys.stdin); j=d["jobs"]; assert len(j)==1 and j[0]["state"]=="running" and j[0]["energy_j"]>0, j' || fail "/v1/jobs"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/nope")" = 404 ] || fail "404"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$URL/metrics")" = 405 ] || fail "405"
curl -s -D - -o /dev/null -X POST "$URL/metrics" | grep -qi '^Allow: GET, HEAD' || fail "405 without Allow"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/metrics?x=1")" = 200 ] || fail "query"
# the path is routed as sent: a %00 does not cut it to /metrics
[ "$(curl -s --path-as-is -o /dev/null -w '%{http_code}' "$URL/metrics%00.txt")" = 404 ] || fail "/metrics%00.txt"
[ "$(curl -s --path-as-is -o /dev/null -w '%{http_code}' "$URL/v1%2Fgpus")" = 404 ] || fail "/v1%2Fgpus"
[ "$(curl -s --path-as-is -o /dev/null -w '%{http_code}' "$URL/%6detrics")" = 404 ] || fail "/%6detrics"
# RFC 9112: a '#' is never in a request target (400); the absolute form is routed by its path
code() { curl -s -o /dev/null -w '%{http_code}' --request-target "$1" "$URL/"; }
[ "$(code '/metrics#frag')" = 400 ] || fail "/metrics#frag: $(code '/metrics#frag')"
[ "$(code '/v1/jobs?#')" = 400 ] || fail "/v1/jobs?#"
[ "$(code "http://127.0.0.1:$PORT/metrics")" = 200 ] || fail "absolute form: $(code "http://127.0.0.1:$PORT/metrics")"
[ "$(code "http://127.0.0.1:$PORT/nope")" = 404 ] || fail "absolute form, no route"
# the 256-byte limit counts the query string; a body is refused
q=$(head -c 300 /dev/zero | tr '\0' x)
[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/metrics?$q")" = 414 ] || fail "a long query string"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X GET --data-binary hello "$URL/metrics")" = 413 ] ||
    fail "GET with a body"

step "two co-runners and a finished job: accounting"
b=$(submit --name pair1 --mem 30G -- sh "$HELP/run_for.sh" 2)
c=$(submit --name pair2 --mem 4G -- sh "$HELP/run_for.sh" 2)
"$CARMA" wait --timeout 30 "$b" "$c" >/dev/null || fail "pair"
"$CARMA" ls --all --json > "$T/ls.json"
python3 - "$T/ls.json" "$b" <<'PY' || fail "ls --json accounting"
import json, sys
jobs = {j["id"]: j for j in json.load(open(sys.argv[1]))}
j = jobs[int(sys.argv[2])]
for k in ("run_s", "gpu_seconds", "energy_j", "wait_s"):
    assert isinstance(j[k], (int, float)), (k, j)
assert 1.5 < j["run_s"] < 10 and abs(j["gpu_seconds"] - j["run_s"]) < 1e-6 and j["energy_j"] > 0, j
PY
"$CARMA" show "$b" | grep -q "usage .*GPU-hours" || fail "show usage"
"$CARMA" usage --since 1h --json > "$T/u.json" || fail "usage"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); t=d["total"]; assert t["jobs"]==3 and t["attempts"]==3 and t["gpu_seconds"]>0 and t["energy_j"]>0, d' "$T/u.json" || fail "usage totals: $(cat "$T/u.json")"
rc=0; "$CARMA" usage --user no-such-user-here 2>"$T/err" >/dev/null || rc=$?
[ "$rc" = 2 ] && grep -q "no such user here" "$T/err" || fail "usage of an unknown user: exit $rc"
"$CARMA" usage --since 1h || fail "usage table"
"$CARMA" usage --since yesterday-ish >/dev/null 2>&1; [ $? = 2 ] || fail "bad --since accepted"

step "top in tmux (q quits)"
if command -v tmux >/dev/null; then
    S="carma-top-$$"
    ON_EXIT="tmux -L $S kill-server 2>/dev/null; tmux -L $S-narrow kill-server 2>/dev/null"
    # a job of its own, running all through this step (job 1 may be done on a loaded host)
    tj=$(submit --name on-top --mem 4G -- sh "$HELP/run_for.sh" 120)
    wait_until 20 is_state "$tj" running || fail "top's job: $(state_of "$tj")"
    tmux -L "$S" new-session -d -x 120 -y 40 "CARMA_SOCKET=$CARMA_SOCKET $CARMA top --interval 0.3; echo TOP-EXIT-\$?; sleep 5" ||
        fail "tmux"
    wait_until 10 sh -c "tmux -L $S capture-pane -p | grep -q 'job $tj .*on-top' &&
        tmux -L $S capture-pane -p | grep -q 'SMACT 0.30'" ||
        fail "top shows no job: $(tmux -L "$S" capture-pane -p)"
    tmux -L "$S" capture-pane -p > "$ART/top.txt"
    grep -q "GPU 0 NVIDIA A100" "$ART/top.txt" || fail "top: no GPU line"
    grep -q "SMACT 0.30" "$ART/top.txt" || fail "top: no SMACT"
    grep -q "MEM" "$ART/top.txt" || fail "top: no memory bar"
    tmux -L "$S" send-keys q
    wait_until 5 sh -c "tmux -L $S capture-pane -p | grep -q TOP-EXIT-0" || fail "top did not quit on q"
    tmux -L "$S" kill-server 2>/dev/null
    # A narrow terminal: each row is cut at the edge, never wrapped onto the next one.
    tmux -L "$S-narrow" new-session -d -x 40 -y 10 "CARMA_SOCKET=$CARMA_SOCKET $CARMA top --interval 0.3" ||
        fail "tmux 40x10"
    wait_until 10 sh -c "tmux -L $S-narrow capture-pane -p | grep -q '^  PWR'" || fail "top 40x10: no PWR row: $(tmux -L "$S-narrow" capture-pane -p)"
    tmux -L "$S-narrow" capture-pane -p > "$ART/top-40x10.txt"
    tmux -L "$S-narrow" kill-server 2>/dev/null
    grep -q '^  SM  \[' "$ART/top-40x10.txt" || fail "top 40x10: SM row"
    grep -q '^  PWR \[' "$ART/top-40x10.txt" || fail "top 40x10: PWR row overwritten: $(cat "$ART/top-40x10.txt")"
    grep -q '^  MEM \[' "$ART/top-40x10.txt" || fail "top 40x10: MEM row"
    grep -Eq '^(job|[a-z]*-|[A-Z]*SM|DRAMA)' "$ART/top-40x10.txt" && fail "top 40x10: a wrapped row: $(cat "$ART/top-40x10.txt")"
    "$CARMA" cancel "$tj" >/dev/null && wait_until 20 is_state "$tj" cancelled || fail "cancel top's job"
    cat "$ART/top.txt" | head -12
else
    echo "(tmux absent: top not exercised)"
fi

step "report of the recorded run"
touch "$T/a.go"
wait_until 30 is_state "$a" succeeded || fail "alone job"
sleep 1.2
"$CARMA" report --since 5m --html "$ART/server-report.html" || fail "report"
# the default day's range over a server up for a minute still draws its records point by point
python3 - "$CARMA_SOCKET" <<'PY' || fail "history over the default range"
import json, socket, sys, time
for _ in range(100):  # "busy" just after the report's history request: asked again
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
    s.sendall(b'{"v":1,"op":"history"}\n')
    buf = b""
    while not buf.endswith(b"\n"):
        b = s.recv(1 << 20)
        if not b: break
        buf += b
    r = json.loads(buf)
    if r.get("error") != "busy":
        break
    time.sleep(0.1)
n = len(r["history"]["gpus"][0]["t"]) if "history" in r else len(r["gpus"][0]["t"])
assert n >= 10, "%d points" % n
PY
grep -q "<svg" "$ART/server-report.html" || fail "report without SVG"
grep -q "carmad on" "$ART/server-report.html" || fail "report section"
if command -v chromium >/dev/null; then
    P=$(mktemp -d)
    timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$P" --screenshot="$ART/server-report.png" --window-size=1400,2400 \
        "file://$(cd "$(dirname "$ART/server-report.html")" && pwd)/server-report.html" >/dev/null 2>&1
    rm -rf "$P"
    [ -s "$ART/server-report.png" ] || fail "no PNG from chromium"
    echo "rendered $ART/server-report.png"
else
    echo "(chromium absent: report not rendered)"
fi
step "a job cancelled while queued counts among the finished"
curl -sf "$URL/metrics" | python3 "$HELP/prom_check.py" > "$T/p2" || fail "/metrics"
before=$(awk '/^carma_jobs_finished_total\{state=cancelled\}/ {print $2}' "$T/p2")
hold=$(submit --gpus 2 -- sh "$HELP/run_for.sh" 20)
wait_until 10 is_state "$hold" running || fail "holder not running"
q=$(submit --gpus 2 -- true)
is_state "$q" queued || fail "second 2-GPU job: $(state_of "$q")"
wait_until 10 sh -c "curl -sf $URL/v1/jobs | python3 -c 'import json,sys; \
ids=[j[\"id\"] for j in json.load(sys.stdin)[\"jobs\"]]; assert len(ids) >= 2, ids; \
sys.exit(0 if ids == sorted(ids) else 3)'" || fail "/v1/jobs: $(curl -sf "$URL/v1/jobs" | head -c 300)"
# a job after another: /v1/jobs has its after and after_pending, as carma ls / show --json
w=$(submit --after "$hold" -- true)
"$CARMA" show --json "$w" >"$T/w.show" && "$CARMA" ls --json >"$T/w.ls" || fail "show/ls --json $w"
wait_until 10 sh -c "curl -sf $URL/v1/jobs >$T/w.http && grep -q '\"id\": *$w[,}]' $T/w.http" ||
    fail "/v1/jobs without job $w: $(head -c 300 "$T/w.http")"
python3 - "$T/w.http" "$T/w.show" "$T/w.ls" "$w" "$hold" <<'PY' || fail "/v1/jobs: job $w's after"
import json, sys
w, hold = int(sys.argv[4]), int(sys.argv[5])
http = next(j for j in json.load(open(sys.argv[1]))["jobs"] if j["id"] == w)
show = json.load(open(sys.argv[2]))
show = show.get("job", show)
ls = next(j for j in json.load(open(sys.argv[3])) if j["id"] == w)
for k, v in (("after", [hold]), ("after_pending", [hold]), ("waiting_code", "after")):
    assert http.get(k) == v == show.get(k) == ls.get(k), (k, http.get(k), show.get(k), ls.get(k))
PY
# a job's series are the job's: one each, no GPU label, whatever its GPUs
curl -sf "$URL/metrics" | python3 "$HELP/prom_check.py" > "$T/p3" || fail "/metrics"
for k in carma_job_gpu_seconds_total carma_job_energy_joules_total; do
    [ "$(grep -c "^$k{job=$hold,user=[^,]*} " "$T/p3")" = 1 ] ||
        fail "$k of a 2-GPU job: $(grep "^$k{job=$hold," "$T/p3")"
done
"$CARMA" cancel "$q" "$hold" "$w" >/dev/null || fail "cancel"
want=$((${before:-0} + 3))
wait_until 10 sh -c "curl -sf $URL/metrics | python3 $HELP/prom_check.py | \
    grep -q '^carma_jobs_finished_total{state=cancelled} $want\$'" ||
    fail "cancelled count: $(curl -sf "$URL/metrics" | grep finished_total), $want expected"

step "carma top without a terminal refuses, and ends"
rc=0
timeout 10 "$CARMA" top </dev/null >"$T/top.out" 2>"$T/top.err" || rc=$?
[ "$rc" = 1 ] && grep -q "^carma top: needs a terminal" "$T/top.err" ||
    fail "top without a terminal: exit $rc, $(cat "$T/top.err")"

stop_daemon TERM || fail "stop"
echo "monitor_http: all passed"
