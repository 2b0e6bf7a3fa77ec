#!/bin/sh
# The INI listing in docs/daemon.md ("The INI file"), as an administrator would copy it:
# carmad starts on it (its examples made this machine's: simulated GPUs, a free port, a GPU
# index for the [sharing] UUID), and it names every key src/daemon/config.c reads, so
# that a key added to the parser is documented there.
. "$(dirname "$0")/helpers/daemon_lib.sh"
REPO=$(cd "$(dirname "$0")/../.." && pwd)

step "the documented listing names every key carmad reads"
python3 - "$REPO/docs/daemon.md" "$REPO/src/daemon/config.c" "$T/doc.ini" "$(free_port)" <<'PY' ||
import re, sys
doc, src, out, port = sys.argv[1:]
try:
    import grp
    grp.getgrnam("carma")
    have_group = True
except KeyError:
    have_group = False
lines = open(doc).read().split("\n")
start = next(i for i, l in enumerate(lines) if l.startswith("The INI file (`--config`"))
i = start
while not lines[i].startswith("    ["):
    i += 1
block = []
while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
    block.append(lines[i][4:])
    i += 1
while block and not block[-1].strip():
    block.pop()
keys = set()
section = None
text = []
for l in block:
    m = re.match(r"\[(\w+)\]", l)
    if m:
        section = m.group(1)
    m = re.match(r"([^\s;=][^=]*?)\s*=\s*(.*?)(\s+;.*)?$", l)
    if m and section:
        k = m.group(1)
        if section == "sharing" and k.startswith("GPU-"):
            l = "1 = " + m.group(2)  # the example UUID: a GPU index of this server
        elif k == "http":
            l = "http = 127.0.0.1:" + port
        elif k == "gpus":
            l = "gpus = sim:2xa100-40gb"
        elif k == "socket_group" and not have_group:
            l = "socket_group = root"  # a group named there must exist: carma may not here
        keys.add(k)
    text.append(l)
open(out, "w").write("\n".join(text) + "\n")
code = open(src).read()
read = set(re.findall(r'strcmp\(name, "(\w+)"\)', code))
m = re.search(r"const char \*names\[\] = \{([^}]*)\}", code)
read |= set(re.findall(r'"(\w+)"', m.group(1)))
missing = sorted(read - keys)
if missing:
    sys.exit("keys carmad reads that the listing does not name: " + ", ".join(missing))
if len(read) < 20:
    sys.exit("only %d keys found in config.c: the pattern no longer matches" % len(read))
PY
    fail "the listing"

step "carmad starts on the documented listing"
cp "$T/doc.ini" "$T/carmad.ini"
start_daemon
"$CARMA" gpus | grep -q '^1 .* mps ' || fail "GPU 1 not on mps: $("$CARMA" gpus)"
stop_daemon || fail "carmad did not stop cleanly"
echo "config_doc: ok"
