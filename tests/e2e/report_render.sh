#!/bin/sh
# The simulator's HTML report, checked as a file and looked at as a picture:
# `carma sim --report` writes the page for two policies on the bundled CARMA trace;
# the page must be self-contained, bounded and deterministic; then headless Chromium
# (when installed) renders it to $CARMA_BUILD/artifacts/report.png, which must show
# the charts (enough ink, many colours, the Gantt chart's "ok" blue).
set -eu
CARMA="$CARMA_BIN/carma"
ART="${CARMA_BUILD:-build/release}/artifacts"
fail() { echo "FAIL: $*" >&2; exit 1; }

if ! "$CARMA" sim --help >/dev/null 2>&1; then
    echo "SKIP: '$CARMA sim' is not available in this build; nothing to render"
    exit 0
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$ART"
PAGE="$ART/report.html"

run_sim() { # out.html
    "$CARMA" sim --trace data/trace-mix90.csv --gpus 4xa100-40gb --sharing mps \
        --policy auto,exclusive --report "$1" >"$T/table" 2>"$T/err" ||
        fail "carma sim --report failed: $(cat "$T/err")"
}
run_sim "$PAGE"
[ -s "$PAGE" ] || fail "no report written"

# The page as a file: structure, self-contained, bounded, the same bytes twice.
python3 - "$PAGE" <<'PY' || fail "report structure"
import re, sys
html = open(sys.argv[1], encoding="utf-8").read()
assert html.startswith("<!DOCTYPE html>"), "doctype"
assert html.rstrip().endswith("</html>"), "truncated"
assert html.count("<section") == 2, "one section per policy"
assert html.count("<svg") == 8, "Gantt, memory, SMACT and power per policy"
for p in ("auto", "exclusive"):
    assert re.search(r"<h2>%s</h2>" % p, html), "no section for " + p
for bad in ("<script", "<link", "src=", "url(", "@import"):
    assert bad not in html, "not self-contained: " + bad
bars = html.count("<title>job ")
assert bars >= 90, "expected a bar per job run, got %d" % bars
assert "<table>" in html and "makespan" in html, "summary table"
assert "jobs given up" in html and "<td>(bound)</td>" in html, "given-up column and (bound) row"
assert len(html.encode()) < 4 << 20, "page too large"
# the run's settings, the table's columns and its notes, as the text table has them
assert "trace data/trace-mix90.csv (carma-csv) on 4xa100-40gb, sharing mps, jitter 0 (seed 1), estimator gpumemnet, max attempts 3" in html, "settings"
for col in ("p99 wait h", "mean SMACT", "mean SMOCC", "mean memory", "span/ex", "kWh/ex"):
    assert "<th class=\"n\">%s</th>" % col in html, "column " + col
assert "relative to exclusive." in html, "the table's notes"
# the 15-column table fits the page (headers wrap) or scrolls in its box, never runs off
assert '<div class="tw"><table>' in html and ".tw{max-width:100%;overflow-x:auto}" in html, "table box"
# the legend lists what the simulator produces: ok, OOM crash where a run has one; never
# running, cancelled or failed
legends = re.findall(r'<div class="legend">(.*?)</div>', html)
assert len(legends) == 2 and all(">ok</span>" in l for l in legends), "legend: ok"
for word in ("running", "cancelled", "failed"):
    assert not any(word in l for l in legends), "legend lists " + word
print("report: %d bytes, %d bars" % (len(html.encode()), bars))
PY
run_sim "$T/again.html"
cmp -s "$PAGE" "$T/again.html" || fail "the same run gave different bytes"

# The page as a picture.
if ! command -v chromium >/dev/null 2>&1; then
    echo "SKIP render: chromium is not installed (apt-get install chromium); page at $PAGE"
    exit 0
fi
PNG="$ART/report.png"
rm -f "$PNG"
case "$PAGE" in /*) URL="file://$PAGE" ;; *) URL="file://$(pwd)/$PAGE" ;; esac
timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$T/chromium" --screenshot="$PNG" --window-size=1400,2400 "$URL" \
    >"$T/chromium.log" 2>&1 || true
[ -s "$PNG" ] || fail "chromium wrote no screenshot: $(tail -n 5 "$T/chromium.log")"
python3 - "$PNG" <<'PY' || fail "the rendered page looks empty"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, hdr = 8, b"", None
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        hdr = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
w, h, depth, ctype = hdr[:4]
assert depth == 8 and ctype in (2, 6), "unexpected PNG format %r" % (hdr,)
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
prev, rows, i = bytearray(stride), [], 0
for _ in range(h):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
    i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b, c = prev[x], prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(bytes(line)); prev = line
colours, ink, ok_blue = set(), 0, 0
for line in rows:
    for x in range(0, stride, bpp):
        px = line[x:x + 3]
        colours.add(px)
        if px != b"\xff\xff\xff": ink += 1
        if px == b"\x4e\x79\xa7": ok_blue += 1
total = w * h
print("render: %dx%d, %.1f%% ink, %d colours, %d px of 'ok' bars" % (w, h, 100.0 * ink / total, len(colours), ok_blue))
assert ink > total * 0.03, "almost blank"
assert len(colours) > 50, "too few colours for charts"
assert ok_blue > 2000, "no Gantt bars visible"
PY
echo "ok: report rendered to $PNG"
