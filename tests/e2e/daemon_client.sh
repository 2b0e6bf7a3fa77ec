#!/bin/sh
# The carma client against a real carmad and against carmads that answer wrongly
# (audit 6): `logs -f` on a queued job prints its output once, and follows a log that
# the job truncates, and prints every attempt, also those that ran between two polls;
# `wait` says each job as it ends, and `wait --timeout` keeps its deadline while carmad
# is stuck; numbers and ids are parsed strictly; show escapes what users typed, ls shows
# controls as '?'; ls --json stays JSON; answers of the wrong shape are errors;
# submit-rad and usage --user take any bytes; top shows why carmad refused, and quits on
# q while it is stuck; ls and top count wide characters as two columns; report numbers
# GPUs as carmad does.
. "$(dirname "$0")/helpers/daemon_lib.sh"
start_daemon --gpus sim:4xa100-40gb

step "numbers and ids are parsed strictly, and refusals say what is expected"
refused() { # EXPECTED-MESSAGE ARGS...: carma ARGS exits 2 saying EXPECTED-MESSAGE
    _m=$1; shift
    _rc=0; "$CARMA" "$@" >/dev/null 2>"$T/p.err" || _rc=$?
    [ "$_rc" = 2 ] && grep -q -- "$_m" "$T/p.err" || fail "carma $*: exit $_rc, $(cat "$T/p.err")"
}
for v in "" nan inf 0x1 1e0 " 1" "1 " -1 +1 1. .5 20000000; do
    refused "--timeout '$v': seconds expected" wait 1 --timeout "$v"
done
for v in 0 -0 0x10 1e3 " 5" nan 0.0000001 5X 2000000G ""; do
    refused "--mem '$v': a size of 1 MiB to 1 PiB expected" submit --mem "$v" -- true
done
for v in 18446744073709551615 9223372036854775808 " 7" +7 0 1x ""; do
    refused "'$v' is not a job id (a whole number from 1 to 9223372036854775807)" show "$v"
    refused "is not a job id" wait "$v"
done
refused "at most 1024 job ids at once" wait $(seq 1 1025)
refused "--json is not supported: the report is an HTML page" report --json --html "$T/r.html"
refused "--json is not supported: top is a live view" top --json
refused "$T: Is a directory" submit --summary "$T" --batch 4 -- true
id=$(submit --mem 1.5G -- true)
"$CARMA" show --json "$id" | grep -q '"mem_mib": 1536' || fail "--mem 1.5G"
"$CARMA" wait "$id" --timeout 9223372 >/dev/null || fail "wait --timeout 9223372"
"$CARMA" show 9223372036854775807 2>&1 | grep -q "no job" || fail "show INT64_MAX"

step "show prints argv and cwd as shell words, control characters escaped"
mkdir -p "$T/a dir"
id=$(cd "$T/a dir" && submit --name 'a"b\c' -- printf '%s\n' "$(printf 'x\033[31mRED\033[0m')" 'two words' '' "it's" "$(printf 'z\342\200\256y')" plain-é)
"$CARMA" show "$id" > "$T/show.out"
grep -qF " printf '%s\n' \$'x\x1B[31mRED\x1B[0m' 'two words' '' 'it'\\''s' \$'z\xE2\x80\xAEy' plain-é" "$T/show.out" ||
    fail "command: $(grep command "$T/show.out" | cat -A)"
# and reads back as it ran, in any locale
"$CARMA" wait "$id" >/dev/null || fail "the printf job"
LC_ALL=C bash -c "$(sed -n 's/^  command   //p' "$T/show.out")" > "$T/readback.out" ||
    fail "the command shown does not run: $(grep command "$T/show.out")"
"$CARMA" logs "$id" 2>/dev/null | cmp -s - "$T/readback.out" ||
    fail "the command shown runs otherwise than the job: $(cat -A "$T/readback.out")"
grep -qF "  cwd       '$T/a dir'" "$T/show.out" || fail "cwd: $(grep cwd "$T/show.out")"
! grep -q "$(printf '\033')" "$T/show.out" || fail "an escape sequence reached the output"
"$CARMA" wait "$id" >/dev/null || fail "the printf job"

step "one name for one thing: a job's memory now is mem_now_mib, an attempt's GPUs gpu_uuids"
mj=$(submit --mem 1000 -- sleep 30)
wait_until 10 is_state "$mj" running || fail "the job did not start"
"$CARMA" gpus --json | python3 -c '
import json, sys
jl = [j for g in json.load(sys.stdin)["gpus"] for j in g["job_list"] if j["id"] == int(sys.argv[1])]
assert len(jl) == 1 and "mem_now_mib" in jl[0] and jl[0]["mem_now_mib"] == jl[0]["mem_mib"], jl' "$mj" ||
    fail "gpus --json: no job_list[].mem_now_mib"
"$CARMA" show --json "$mj" | python3 -c '
import json, sys
j = json.load(sys.stdin)
a = j["attempt_list"][0]
assert j["gpus"] == 1 and a["gpu_uuids"] == a["gpus"] == j["gpu_uuids"] and len(a["gpu_uuids"]) == 1, j' ||
    fail "show --json: attempt_list[].gpu_uuids"
"$CARMA" show "$mj" | grep -q "^  #1 .* gpus GPU-" || fail "show: the attempt's GPUs: $("$CARMA" show "$mj")"
"$CARMA" cancel "$mj" >/dev/null || fail "cancel"

step "submit-rad names the job after any file name; usage refuses a --user that is not UTF-8"
printf '# t\nconda activate x\necho rad\nm\nd\n32\nexclusive\n1\n100\n0\n0\n0\n' > "$T/task.rad"
tab=$(printf 'tab\tname')
latin=$(printf 'lat\351')
long="x$(python3 -c "print('\u00e9' * 70, end='')")"
for f in "$tab" "$latin" "$long"; do
    cp "$T/task.rad" "$T/$f.rad"
    rid=$("$CARMA" submit-rad --no-conda "$T/$f.rad" 2>"$T/rad.err") || fail "submit-rad $f: $(cat "$T/rad.err")"
    "$CARMA" show --json "$rid" > "$T/rad.json"
    python3 - "$T/rad.json" "$f" <<'PYEOF' || fail "the job of $f.rad is named: $(grep name "$T/rad.json")"
import json, os, sys
name = json.load(open(sys.argv[1]))["name"]
f = os.fsencode(sys.argv[2])
want = {b"tab\tname": "tab?name", b"lat\xe9": "lat?"}.get(f)
n = len(name.encode())
assert name == want if want else (name.startswith("x\u00e9") and 127 <= n <= 128), name
PYEOF
done
rc=0; "$CARMA" usage --user "$(printf 'ro\377ot')" >/dev/null 2>"$T/u.err" || rc=$?
[ "$rc" = 2 ] && grep -q "not a user name" "$T/u.err" || fail "usage --user not UTF-8: exit $rc, $(cat "$T/u.err")"

step "ls counts a wide character as two columns"
w1=$(submit --name 'résumé-名前-long-name-here' -- sleep 30)
w2=$(submit --name 'plain' -- sleep 30)
for loc in C.UTF-8 C; do
    LC_ALL=$loc "$CARMA" ls > "$T/ls.txt" || fail "ls"
    python3 - "$T/ls.txt" <<'PYEOF' || fail "ls columns under LC_ALL=$loc: $(cat "$T/ls.txt")"
import sys, unicodedata
def cols(s):
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
               for c in s)
rows = [l for l in open(sys.argv[1], encoding="utf-8").read().splitlines()[1:] if l.strip()]
at = {cols(l[: l.index(" running") if " running" in l else l.index(" queued")]) for l in rows}
assert len(rows) >= 2 and len(at) == 1, at
PYEOF
done
"$CARMA" cancel "$w1" "$w2" >/dev/null || fail "cancel"

step "logs -f on a queued job prints its output once"
hog=$(submit --gpus 4 -- sleep 2)
id=$(submit -- sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do echo line$i; sleep 0.1; done')
timeout 30 "$CARMA" logs -f "$id" > "$T/f.out" 2> "$T/f.err" || fail "logs -f: $(cat "$T/f.err")"
[ "$(cat "$T/f.out")" = "$(seq 1 10 | sed 's/^/line/')" ] ||
    fail "logs -f of a queued job printed: $(cat "$T/f.out") / $(cat "$T/f.err")"
! grep -q "attempt" "$T/f.err" || fail "logs -f announced an attempt: $(cat "$T/f.err")"
"$CARMA" wait "$hog" >/dev/null || fail "the hog did not succeed"

step "logs -f goes on after the job truncates its log"
# (each part once the test saw logs -f print the one before: gates $T/t.1 and $T/t.2)
id=$(submit -- sh -c 'echo first-line-long-enough; while [ ! -e "$0.1" ]; do sleep 0.05; done
truncate -s0 /proc/$$/fd/1; echo after; while [ ! -e "$0.2" ]; do sleep 0.05; done; echo end' "$T/t")
timeout 60 "$CARMA" logs -f "$id" > "$T/t.out" 2> "$T/t.err" &
lf=$!
wait_until 30 grep -q first-line "$T/t.out" || fail "logs -f printed: $(cat "$T/t.out" "$T/t.err")"
touch "$T/t.1"
wait_until 30 grep -qx after "$T/t.out" || fail "logs -f printed: $(cat "$T/t.out" "$T/t.err")"
touch "$T/t.2"
wait "$lf" || fail "logs -f: $(cat "$T/t.err")"
[ "$(cat "$T/t.out")" = "$(printf 'first-line-long-enough\nafter\nend')" ] ||
    fail "logs -f across a truncation printed: $(cat "$T/t.out") / $(cat "$T/t.err")"
grep -qx "carma logs: stdout truncated" "$T/t.err" || fail "no word of the truncation: $(cat "$T/t.err")"

step "logs -f prints every attempt, also those that ran between two of its polls"
# attempt 1 waits at the gate $T/r.go until logs -f printed it; attempts 2 and 3 run out
# of memory at once (well within a poll of logs -f), attempt 4 succeeds
id=$(submit --max-attempts 4 -- sh -c 'echo "out-$CARMA_JOB_ATTEMPT"
[ "$CARMA_JOB_ATTEMPT" = 1 ] && while [ ! -e "$0.go" ]; do sleep 0.05; done
[ "$CARMA_JOB_ATTEMPT" = 4 ] && exit 0
echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB." >&2; exit 1' "$T/r")
timeout 60 "$CARMA" logs -f "$id" > "$T/r.out" 2> "$T/r.err" &
lf=$!
wait_until 30 grep -q out-1 "$T/r.out" || fail "logs -f printed: $(cat "$T/r.out" "$T/r.err")"
touch "$T/r.go"
wait "$lf" || fail "logs -f: $(cat "$T/r.err")"
is_state "$id" succeeded || fail "the job of 4 attempts: $(state_of "$id")"
[ "$(cat "$T/r.out")" = "$(printf 'out-1\nout-2\nout-3\nout-4')" ] ||
    fail "logs -f across attempts printed: $(cat "$T/r.out") / $(cat "$T/r.err")"
[ "$(grep -c "CUDA out of memory" "$T/r.err")" = 3 ] && grep -qx -- "--- carma: attempt 2 ---" "$T/r.err" &&
    grep -qx -- "--- carma: attempt 3 ---" "$T/r.err" || fail "logs -f's stderr: $(cat "$T/r.err")"

step "wait says each job as it ends, not only at its own exit"
# (to a file, as a script's redirection: a kill of the wait keeps what it said)
wd=$(submit -- true)
"$CARMA" wait "$wd" >/dev/null || fail "job $wd"
wl=$(submit -- sleep 30)
"$CARMA" wait "$wd" "$wl" > "$T/w.out" 2> "$T/w.err" &
wp=$!
wait_until 10 grep -qx "$wd succeeded" "$T/w.out" ||
    fail "wait did not say job $wd ended: $(cat "$T/w.out" "$T/w.err")"
kill "$wp"; wait "$wp" 2>/dev/null
"$CARMA" cancel "$wl" >/dev/null || fail "cancel $wl"

step "wait --timeout is a deadline while carmad is stuck"
id=$(submit -- sleep 30)
wait_until 10 is_state "$id" running || fail "the job did not start"
kill -STOP "$DPID"
t0=$(date +%s)
rc=0; "$CARMA" wait "$id" --timeout 2 2>"$T/w.err" || rc=$?
rc2=0; "$CARMA" wait "$id" --timeout 1 --json >"$T/w.json" 2>>"$T/w.err" || rc2=$?
t1=$(date +%s)
kill -CONT "$DPID"
[ "$rc" = 1 ] && [ "$rc2" = 1 ] || fail "wait --timeout on a stuck carmad: exit $rc, $rc2: $(cat "$T/w.err")"
[ $((t1 - t0)) -le 8 ] || fail "wait --timeout 2, then 1, took $((t1 - t0)) s on a stuck carmad"
grep -q "carmad did not answer in time" "$T/w.err" || fail "message: $(cat "$T/w.err")"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1])) == []' "$T/w.json" ||
    fail "wait --json on a stuck carmad: $(cat "$T/w.json")"
"$CARMA" cancel "$id" >/dev/null || fail "cancel"

stop_daemon

# fake carmads from here on
FAKE_PID=
ON_EXIT='[ -n "$FAKE_PID" ] && kill "$FAKE_PID"'
fake() { # ANSWER...: a fake carmad answering them in turn on $T/fake.sock
    [ -n "$FAKE_PID" ] && kill "$FAKE_PID" && wait "$FAKE_PID" 2>/dev/null
    rm -f "$T/fake.sock"
    python3 "$HELP/fake_carmad.py" "$T/fake.sock" "$@" &
    FAKE_PID=$!
    wait_until 10 test -S "$T/fake.sock" || fail "fake carmad"
}
FC() { CARMA_SOCKET="$T/fake.sock" CARMA_TIMEOUT=3 timeout 20 "$CARMA" "$@"; }

step "ls --json stays JSON when a later page fails"
fake '{"ok":true,"jobs":[{"id":1,"name":"a","user":"u","state":"running","attempts":1,"gpus":1}],"next":1}' \
    '{"ok":false,"error":"store","message":"disk I/O error"}'
rc=0; FC ls --json > "$T/ls.out" 2>"$T/ls.err" || rc=$?
[ "$rc" = 1 ] && grep -q "disk I/O error" "$T/ls.err" || fail "ls --json, page 2 failing: exit $rc, $(cat "$T/ls.err")"
python3 -c 'import json,sys; assert [j["id"] for j in json.load(open(sys.argv[1]))] == [1]' "$T/ls.out" ||
    fail "ls --json, page 2 failing: $(cat "$T/ls.out")"
fake '{"ok":false,"error":"store","message":"disk I/O error"}'
rc=0; FC ls --json > "$T/ls.out" 2>/dev/null || rc=$?
[ "$rc" = 1 ] && python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["error"] == "store"' "$T/ls.out" ||
    fail "ls --json, page 1 failing: exit $rc, $(cat "$T/ls.out")"

step "ls shows no control character of a name or user to the terminal"
# carmad refuses such names at submit; a name stored before that check, or a user name
# from the password database, still reaches ls: shown as '?', as ls shows a stray byte
fake '{"ok":true,"jobs":[{"id":1,"name":"a\u001b[31mb\u009bc\u202ed","user":"u\u0007v","state":"running","attempts":1,"gpus":1}]}'
rc=0; LC_ALL=C.UTF-8 FC ls > "$T/ls.out" 2>"$T/ls.err" || rc=$?
[ "$rc" = 0 ] || fail "ls on a name with controls: exit $rc, $(cat "$T/ls.err")"
! LC_ALL=C grep -q "$(printf '[\001-\037\177]\\|\302[\200-\237]')" "$T/ls.out" ||
    fail "ls printed a control character: $(cat -A "$T/ls.out")"
grep -q '^1 *a?\[31mb?c?d  *u?v  *running' "$T/ls.out" || fail "ls: $(cat -A "$T/ls.out")"

step "times that are no time are shown as -, not read from memory never set"
# localtime_r refuses year 3e9: its struct tm was printed as it lay on the stack
fake '{"ok":true,"jobs":[{"id":1,"name":"a","user":"u","state":"running","attempts":1,"gpus":1,"submit_time":1e17,"start_time":1,"run_s":1e300}],"job":{"id":1,"name":"a","user":"u","state":"running","argv":["a"],"cwd":"/","submit_time":1e17,"start_time":-5,"end_time":1e300,"attempt_list":[{"n":1,"start_time":1e17,"end_time":1e300}]}}'
rc=0; FC ls > "$T/ls.out" 2>"$T/ls.err" || rc=$?
[ "$rc" = 0 ] && grep -q '^1 .* running  *1  *1 -  *-$' "$T/ls.out" ||
    fail "ls on times out of range: exit $rc, $(cat -A "$T/ls.out" "$T/ls.err")"
rc=0; FC show 1 > "$T/show.out" 2>"$T/show.err" || rc=$?
[ "$rc" = 0 ] && grep -qx '  submitted -  started -  ended -' "$T/show.out" &&
    grep -q '^  #1  -  *-  *running' "$T/show.out" ||
    fail "show on times out of range: exit $rc, $(cat -A "$T/show.out" "$T/show.err")"

step "answers of the wrong shape are errors naming the field"
GPUS_B='{"ok":true,"backend":"nvml","policy":"auto","gpus":[{"index":0,"uuid":"GPU-bbbb","name":"B100","sharing":"timeslice","mem_total_mib":1,"jobs":[]}]}'
malformed() { # FIELD ARGS...: carma ARGS exits 1 naming FIELD
    _f=$1; shift
    _rc=0; FC "$@" >"$T/m.out" 2>"$T/m.err" || _rc=$?
    [ "$_rc" = 1 ] && grep -q "malformed response from carmad: $_f" "$T/m.err" ||
        fail "carma $* on a malformed answer: exit $_rc, $(cat "$T/m.err")"
}
fake '[{"ok":true}]'
malformed "not a JSON object" show 1
fake '{"ok":true,"job":{"id":1}}'
malformed "job.state: missing, a string expected" wait 1
malformed "job.name: missing, a string expected" show 1
fake '{"ok":true,"job":{"id":1,"name":"a","user":"u","state":"running","argv":["a",1],"cwd":"/"}}'
malformed "job.argv: not an array of strings" show 1
fake '{"ok":true,"attempt":0,"state":"queued"}'
malformed "answer.stdout: missing" logs 1
malformed "answer.stdout: missing" logs -f 1
fake '{"ok":true,"jobs":[{"id":1,"state":"running"}]}'
malformed "jobs\[0\].name: missing" ls
fake '{"ok":true,"backend":"sim","policy":"auto","gpus":[{"index":0,"uuid":5}]}'
malformed "gpus\[0\].uuid: not a string" gpus
fake '{"ok":true}'
malformed "answer.id: missing, an integer expected" submit -- true
malformed "answer.users: missing" usage
fake '{"ok":true,"policy":"auto","backend":"nvml","gpus":[{"name":"A100","uuid":5,"t":[],"mem_total_mib":1}],"attempts":[{"job":1,"start":1,"gpus":[5, "GPU-1"]}]}' \
    '{"ok":true,"users":[]}' "$GPUS_B"
FC report --html "$T/r.html" 2>"$T/r.err" || fail "report on a GPU without a uuid: $(cat "$T/r.err")"

step "usage tells apart two accounts that had one name, by uid"
U1='{"user":"alice","uid":1000,"jobs":2,"attempts":2,"oom":0,"run_s":7200,"gpu_seconds":7200,"energy_j":0,"wait_s":0}'
U2='{"user":"alice","uid":1002,"jobs":1,"attempts":1,"oom":0,"run_s":3600,"gpu_seconds":3600,"energy_j":0,"wait_s":0}'
U3='{"user":"a-very-long-user-name","uid":4000000000,"jobs":1,"attempts":1,"oom":0,"run_s":60,"gpu_seconds":60,"energy_j":0,"wait_s":0}'
fake '{"ok":true,"users":['"$U1,$U2,$U3,${U3%%\"uid*}\"uid\":7,${U3#*4000000000,}"'],"total":{}}'
FC usage >"$T/u.out" 2>"$T/u.err" || fail "usage, one name twice: $(cat "$T/u.err")"
grep -q '^alice(1000) *2 ' "$T/u.out" && grep -q '^alice(1002) *1 ' "$T/u.out" &&
    grep -q '^a-ve(4000000000) *1 ' "$T/u.out" && grep -q '^a-very-long-u(7) *1 ' "$T/u.out" ||
    fail "usage, one name twice: $(cat "$T/u.out")"

step "report shows a user's and a job's whole name"
U32=abcdefghijklmnopqrstuvwxyz-long_
fake '{"ok":true,"policy":"auto","backend":"nvml","gpus":[],"attempts":[]}' \
    '{"ok":true,"users":[{"user":"'"$U32"'","jobs":1,"attempts":1,"oom":0,"gpu_seconds":3600,"energy_j":0,"wait_s":0}]}' \
    "$GPUS_B"
FC report --html "$T/r.html" 2>"$T/r.err" || fail "report with a long user name: $(cat "$T/r.err")"
grep -q "<td>$U32</td>" "$T/r.html" ||
    fail "report's user name cut: $(grep -o '<td>abc[^<]*</td>' "$T/r.html")"
# ... and a job's whole name (up to 128 bytes) in its bar's title
N120=$(printf 'n%.0s' $(seq 1 119))Z
fake '{"ok":true,"policy":"auto","backend":"nvml","gpus":[{"name":"B100","uuid":"GPU-bbbb","t":[],"mem_total_mib":1}],"attempts":[{"job":7,"start":1,"name":"'"$N120"'","outcome":"succeeded","gpus":["GPU-bbbb"]}]}' \
    '{"ok":true,"users":[]}' "$GPUS_B"
FC report --html "$T/r.html" 2>"$T/r.err" || fail "report with a long job name: $(cat "$T/r.err")"
grep -q "<title>job 7 · $N120" "$T/r.html" ||
    fail "report's job name cut: $(grep -o '<title>job 7[^<]*' "$T/r.html")"

step "gpus lists the islands an answer names, whatever their numbers"
G2='{"index":0,"uuid":"GPU-a","name":"A","sharing":"mps","mem_total_mib":1,"jobs":[],"island":0},{"index":1,"uuid":"GPU-b","name":"B","sharing":"mps","mem_total_mib":1,"jobs":[],"island":9223372036854775807},{"index":2,"uuid":"GPU-c","name":"C","sharing":"mps","mem_total_mib":1,"jobs":[],"island":0}'
fake '{"ok":true,"backend":"sim","policy":"auto","gpus":['"$G2"']}'
rc=0; FC gpus >"$T/g.out" 2>"$T/g.err" || rc=$?
[ "$rc" = 0 ] && grep -qx 'islands (GPUs linked by NVLink or PCIe switches): 0,2 | 1' "$T/g.out" ||
    fail "gpus on an island numbered 2^63-1: exit $rc, $(cat "$T/g.out" "$T/g.err")"

step "report numbers GPUs as carmad does now, and leaves out idle ones that are gone"
fake '{"ok":true,"policy":"auto","backend":"nvml","gpus":[{"name":"A100","uuid":"GPU-aaaa","t":[],"mem_total_mib":1},{"name":"B100","uuid":"GPU-bbbb","t":[1,2],"mem_mib":[1,1],"smact_pm":[1,1],"util_pm":[1,1],"power_dw":[1,1],"mem_total_mib":1}],"attempts":[]}' \
    '{"ok":true,"users":[]}' "$GPUS_B"
FC report --html "$T/r.html" 2>"$T/r.err" || fail "report: $(cat "$T/r.err")"
grep -q "GPU 0 B100" "$T/r.html" && ! grep -q "A100" "$T/r.html" ||
    fail "report's GPUs: $(grep -o 'GPU [-0-9]* [AB]100' "$T/r.html" | sort -u)"
fake '{"ok":true,"policy":"auto","backend":"nvml","gpus":[{"name":"A100","uuid":"GPU-aaaa","t":[],"mem_total_mib":1},{"name":"B100","uuid":"GPU-bbbb","t":[],"mem_total_mib":1}],"attempts":[{"job":1,"start":1,"gpus":["GPU-aaaa"]}]}' \
    '{"ok":true,"users":[]}' "$GPUS_B"
FC report --html "$T/r.html" 2>"$T/r.err" || fail "report: $(cat "$T/r.err")"
grep -q "GPU 0 B100" "$T/r.html" && grep -q "GPU - A100" "$T/r.html" ||
    fail "report's GPUs, one gone with an attempt: $(grep -o 'GPU [-0-9]* [AB]100' "$T/r.html" | sort -u)"
# an attempt still running (no end) is drawn until now, not to an --until to come: it
# started in 2001, the range ends in 2096 (34722 days after the start), now is before
fake '{"ok":true,"policy":"auto","backend":"nvml","gpus":[{"name":"B100","uuid":"GPU-bbbb","t":[],"mem_total_mib":1}],"attempts":[{"job":1,"start":1000000000,"name":"r","gpus":["GPU-bbbb"]}]}' \
    '{"ok":true,"users":[]}' "$GPUS_B"
FC report --since @999999000 --until @4000000000 --html "$T/r.html" 2>"$T/r.err" || fail "report: $(cat "$T/r.err")"
days=$(sed -n '/<title>job 1 /{n;s/.*→ \([0-9]*\)d.*/\1/p;}' "$T/r.html") # (START → END (LENGTH))
[ -n "$days" ] && [ "$days" -lt 20000 ] ||
    fail "a running attempt drawn past now: $(grep -A1 '<title>job 1 ' "$T/r.html")"

step "top shows carmad's word when it refuses a refresh, keeps wide characters on their row, quits at once while carmad is stuck"
if command -v tmux >/dev/null; then
    TS="carma-client-$$"
    fake '{"ok":true,"backend":"sim","policy":"auto","queued":0,"gpus":[]}' \
        '{"ok":false,"error":"busy","message":"too many connections of uid 0"}'
    # a tmux server per session: a new session on a server being killed can fail
    ON_EXIT='[ -n "$FAKE_PID" ] && kill "$FAKE_PID"; for s in "$TS" "$TS-42" "$TS-44" "$TS-q"; do tmux -L "$s" kill-server 2>/dev/null; done'
    # tmux_new SOCKET ARGS...: a detached session, tried twice (a tmux server starting on a
    # loaded host has failed to answer once), its error kept for the message
    tmux_new() {
        _s=$1; shift
        tmux -L "$_s" new-session -d "$@" 2>"$T/tmux.err" ||
            { sleep 1; tmux -L "$_s" new-session -d "$@" 2>>"$T/tmux.err"; }
    }
    tmux_new "$TS" -x 120 -y 20 "CARMA_SOCKET=$T/fake.sock $CARMA top --interval 0.2; sleep 5" ||
        fail "tmux: $(cat "$T/tmux.err")"
    wait_until 10 sh -c "tmux -L $TS capture-pane -p | grep -q 'carmad refused: too many connections of uid 0'" ||
        fail "top on a busy answer: $(tmux -L "$TS" capture-pane -p | head -3)"
    tmux -L "$TS" kill-server 2>/dev/null
    # a wide character that would end in the last column is left out, not wrapped
    fake '{"ok":true,"backend":"sim","policy":"auto","queued":0,"gpus":[{"index":0,"uuid":"GPU-0","name":"A100","sharing":"timeslice","mem_total_mib":40960,"jobs":[1],"job_list":[{"id":1,"name":"résumé-ünïcödé-名前-long-name-here","user":"u","run_s":1,"mem_mib":0}]}]}'
    for w in 42 44; do
        tmux_new "$TS-$w" -x $w -y 12 "LC_ALL=C.UTF-8 CARMA_SOCKET=$T/fake.sock $CARMA top --interval 0.2; sleep 5" ||
            fail "tmux at width $w: $(cat "$T/tmux.err")"
        wait_until 10 sh -c "tmux -L $TS-$w capture-pane -p | grep -q 'job 1'" || fail "top at width $w: no job row"
        tmux -L "$TS-$w" capture-pane -p > "$T/top.txt"
        tmux -L "$TS-$w" kill-server 2>/dev/null
        ! grep -q '^[名前]' "$T/top.txt" || fail "top at width $w wrapped a wide character: $(cat "$T/top.txt")"
    done
    # q quits at once while a refresh waits for a carmad that does not answer (the
    # answer is waited CARMA_TIMEOUT, 60 s)
    fake '{"ok":true,"backend":"sim","policy":"auto","queued":0,"gpus":[]}'
    tmux_new "$TS-q" -x 80 -y 12 "CARMA_SOCKET=$T/fake.sock $CARMA top --interval 0.2; echo top-ended; sleep 30" ||
        fail "tmux: $(cat "$T/tmux.err")"
    wait_until 10 sh -c "tmux -L $TS-q capture-pane -p | grep -q 'backend sim'" || fail "top: no view"
    kill -STOP "$FAKE_PID"
    sleep 1 # a refresh is under way, unanswered
    tmux -L "$TS-q" send-keys q
    wait_until 3 sh -c "tmux -L $TS-q capture-pane -p | grep -q top-ended" ||
        fail "top did not quit on q while carmad was stuck: $(tmux -L "$TS-q" capture-pane -p | head -3)"
    kill -CONT "$FAKE_PID"
    tmux -L "$TS-q" kill-server 2>/dev/null
    ON_EXIT='[ -n "$FAKE_PID" ] && kill "$FAKE_PID"'
else
    echo "(skipped: no tmux)"
fi

kill "$FAKE_PID"; wait "$FAKE_PID" 2>/dev/null; FAKE_PID=
echo "daemon_client: ok"
