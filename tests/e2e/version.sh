#!/bin/sh
# carma's version (README, "Versions"): `carma --version` and `carmad --version` print
# VERSION's content (plus +g<hash>[-dirty] from git) and exit 0; carmad's start log names
# it, /metrics has carma_build_info{version=...} 1, and the ping and gpus answers carry
# carmad_version. tools/version.sh: VERSION alone outside a git checkout, and a VERSION
# that is not a version refused.
. "$(dirname "$0")/helpers/daemon_lib.sh"
REPO=$(cd "$(dirname "$0")/../.." && pwd)
V=$(head -n 1 "$REPO/VERSION") || fail "no VERSION"
[ -n "$V" ] || fail "VERSION empty"
# what a build says: VERSION's content, then +g and 7 or more hex digits, maybe -dirty
# (tests/run.sh may run these binaries from a source tarball: VERSION alone)
re_v=$(printf '%s' "$V" | sed 's/[.]/[.]/g')'(\+g[0-9a-f]{7,}(-dirty)?)?'

step "carma --version, carmad --version"
out=$("$CARMA" --version) || fail "carma --version exited $?"
echo "$out" | grep -Eqx "carma $re_v" || fail "carma --version: $out"
BV=${out#carma }
out=$("$CARMAD" --version) || fail "carmad --version exited $?"
[ "$out" = "carmad $BV" ] || fail "carmad --version: $out (carma says $BV)"
"$CARMA" --help | grep -q -- "--version" || fail "carma --help does not name --version"
"$CARMAD" --help | grep -q -- "--version" || fail "carmad --help does not name --version"

step "carmad's start log, /metrics, the ping and gpus answers"
PORT=$(free_port) || fail "no free TCP port"
start_daemon --gpus sim:1xa100-40gb --http "127.0.0.1:$PORT"
grep -Fq "carmad $BV listening on $CARMA_SOCKET" "$T/carmad.log" ||
    fail "the start log: $(grep listening "$T/carmad.log")"
if command -v curl >/dev/null; then
    curl -sf "http://127.0.0.1:$PORT/metrics" >"$T/m" || fail "GET /metrics"
    python3 "$HELP/prom_check.py" <"$T/m" >/dev/null || fail "bad /metrics: $(python3 "$HELP/prom_check.py" <"$T/m" 2>&1 | tail -1)"
    grep -Fqx "carma_build_info{version=\"$BV\"} 1" "$T/m" ||
        fail "/metrics: $(grep carma_build_info "$T/m")"
    grep -qx "# TYPE carma_build_info gauge" "$T/m" || fail "carma_build_info is no gauge"
    curl -sf "http://127.0.0.1:$PORT/v1/gpus" | python3 -c '
import json, sys
assert json.load(sys.stdin)["carmad_version"] == sys.argv[1]' "$BV" || fail "/v1/gpus: no carmad_version"
else
    echo "(no curl: /metrics not read)"
fi
"$CARMA" gpus --json | python3 -c '
import json, sys
assert json.load(sys.stdin)["carmad_version"] == sys.argv[1]' "$BV" || fail "carma gpus --json: no carmad_version"
PYTHONPATH="$HELP" python3 - "$CARMA_SOCKET" "$BV" <<'PY' || fail "ping: no carmad_version"
import sys
from carmad_ask import ask
r = ask(sys.argv[1], {"v": 1, "op": "ping"})
assert r["ok"] is True and r["carmad_version"] == sys.argv[2], r
PY
stop_daemon || fail "carmad did not stop cleanly"

step "tools/version.sh: VERSION alone outside a checkout; a bad VERSION refused"
mkdir "$T/src"
printf '%s\n' "$V" >"$T/src/VERSION"
[ "$(sh "$REPO/tools/version.sh" "$T/src")" = "$V" ] || fail "outside a checkout: $(sh "$REPO/tools/version.sh" "$T/src")"
printf '1.0"; int x = 1; //\n' >"$T/src/VERSION"
rc=0; sh "$REPO/tools/version.sh" "$T/src" >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" = 1 ] && [ ! -s "$T/out" ] && grep -q "$T/src/VERSION: a version of" "$T/err" ||
    fail "a bad VERSION: exit $rc, $(cat "$T/out" "$T/err")"
echo "version: ok"
