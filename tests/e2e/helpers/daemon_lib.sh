# Shared by the tests/e2e/daemon_*.sh tests (sourced, not run; POSIX sh).
# Needs $CARMA_BIN (folder of carma and carmad); makes $T, a private folder.
set -u
: "${CARMA_BIN:?CARMA_BIN must name the folder holding carma and carmad}"
CARMA_BIN=$(cd "$CARMA_BIN" && pwd)
CARMA="$CARMA_BIN/carma"
CARMAD="$CARMA_BIN/carmad"
HELP=$(cd "$(dirname "$0")" && pwd)/helpers
. "$HELP/preload.sh" # PRELOAD_ASAN_OPTIONS
T=$(mktemp -d /tmp/carma-e2e.XXXXXX)
chmod 755 "$T"
export CARMA_SOCKET="$T/carmad.sock"
DPID=
STEP=start
if [ "$(id -u)" = 0 ]; then ROOT=1; else ROOT=0; fi
printf '[daemon]\nallow_root_jobs = true\nkill_grace = 1\nmonitor_interval = 0.2\n' > "$T/carmad.ini"

ON_EXIT=  # more to undo at exit, set by a test (its tmux servers)
# kill_jobs: ends what the jobs of this test's state folder left: each shepherd leads a
# session of its own, its job's processes in it (a failed test, or a state folder
# removed, would leave them running for ever).
kill_jobs() {
    for f in "$T"/state/jobs/*/*/shepherd; do
        [ -f "$f" ] || continue
        _sid=$(cut -d' ' -f1 "$f")
        pkill -KILL -s "$_sid" 2>/dev/null
        kill -KILL "$_sid" 2>/dev/null
    done
}
cleanup() {
    [ -n "$ON_EXIT" ] && eval "$ON_EXIT"
    [ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
    kill_jobs
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
    echo "FAIL [$STEP]: $*" >&2
    [ -f "$T/carmad.log" ] && { echo "--- carmad log (tail)" >&2; tail -n 40 "$T/carmad.log" >&2; }
    exit 1
}
step() { STEP=$1; echo "== $1"; }

# wait_until SECONDS COMMAND...: polls every 50 ms.
wait_until() {
    _t=$1; shift
    _n=$((_t * 20))
    while ! "$@" >/dev/null 2>&1; do
        _n=$((_n - 1))
        [ "$_n" -le 0 ] && return 1
        sleep 0.05
    done
    return 0
}

# free_port: a TCP port of 127.0.0.1 that nothing holds now, for carmad's --http: at
# random, outside the kernel's ephemeral range (the ports clients' connections take).
# (Ports made of $$ and an offset per test collided whenever two tests running at once
# had pids as far apart as their offsets.)
free_port() {
    python3 -c '
import random, socket
lo, hi = map(int, open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
for _ in range(1000):
    p = random.randint(10000, 65535)
    if lo <= p <= hi:
        continue
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break
else:
    raise SystemExit("no free TCP port")'
}

# fake_nvml [state]: sets LIB to the fake libnvidia-ml.so.1 under $CARMA_FAKE and EX to
# the first example state file of tests/fake/nvidia-ml ("" when there is none); true when
# LIB is there (with "state": and EX too). A test that needs them skips when false.
fake_nvml() {
    LIB="${CARMA_FAKE:-}/nvidia-ml/libnvidia-ml.so.1"
    EX=$(ls "$(dirname "$0")"/../fake/nvidia-ml/*.state 2>/dev/null | head -n 1)
    [ -n "${CARMA_FAKE:-}" ] && [ -f "$LIB" ] && { [ "${1:-}" != state ] || [ -n "$EX" ]; }
}

# carmad_fails RC WHAT OPTIONS...: carmad (this test's config, one simulated GPU) must
# refuse to start with exit RC, saying WHAT; what it said is left in $T/err.
carmad_fails() {
    _rc=$1 _what=$2; shift 2
    _got=0
    timeout 20 "$CARMAD" --foreground --config "$T/carmad.ini" --gpus sim:1xa100-40gb "$@" \
        2>"$T/err" || _got=$?
    [ "$_got" = "$_rc" ] || fail "carmad $* exited $_got, not $_rc: $(cat "$T/err")"
    grep -q -- "$_what" "$T/err" || fail "carmad $*: no '$_what' in: $(cat "$T/err")"
}

start_daemon() { # extra carmad options
    # (stdin closed: what carmad opens may take descriptor 0, and its shepherds must not
    # hand the job a log there)
    "$CARMAD" --foreground --state "$T/state" --socket "$CARMA_SOCKET" --config "$T/carmad.ini" \
        "$@" 2>>"$T/carmad.log" 0<&- &
    DPID=$!
    wait_until 20 "$CARMA" gpus || fail "carmad did not start"
}

# shepherd_of JOB: the pid of the shepherd of JOB's first attempt, once it has written
# its pid file (a job is "running" from its placement, before its shepherd starts); fails
# when none comes within 10 s.
shepherd_of() {
    wait_until 10 test -s "$T/state/jobs/$1/1/shepherd" || return 1
    cut -d' ' -f1 "$T/state/jobs/$1/1/shepherd"
}

stop_daemon() { # signal
    kill "-${1:-TERM}" "$DPID"
    wait "$DPID" 2>/dev/null
    _rc=$?
    DPID=
    return $_rc
}

# nobody_client: NB, a folder nobody may read holding a copy of carma (the checkout may
# sit under a private folder), in $T so that it goes with it. as_nobody CMD...: CMD as
# nobody, from /tmp, with $CARMA_SOCKET. For root, with setpriv and the user nobody: the
# caller checks that they are there.
nobody_client() {
    NB="$T/nobody"
    mkdir -p "$NB" && chmod 755 "$NB" && cp "$CARMA" "$NB/carma" || fail "nobody's carma"
}
as_nobody() {
    (cd /tmp && setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
        env CARMA_SOCKET="$CARMA_SOCKET" "$@")
}

state_of() { "$CARMA" show "$1" | awk '$1 == "state" {print $2}'; }
attempts_of() { "$CARMA" show "$1" | awk '$1 == "attempts" {print $2}'; }
is_state() { [ "$(state_of "$1")" = "$2" ]; }
# reason JOB [N]: the reason of JOB's attempt N (default 1)
reason() { "$CARMA" show --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["attempt_list"][int(sys.argv[1]) - 1]["reason"])' "${2:-1}"; }
# outcomes JOB: its attempts' outcomes, space-separated
outcomes() { "$CARMA" show --json "$1" | python3 -c 'import json,sys; print(" ".join(str(a["outcome"]) for a in json.load(sys.stdin)["attempt_list"]))'; }
submit() { _id=$("$CARMA" submit "$@") || fail "submit $* refused"; echo "$_id"; }
pid_gone() { ! kill -0 "$1" 2>/dev/null || [ "$(awk '{print $3}' /proc/"$1"/stat 2>/dev/null)" = Z ]; }
