#!/bin/sh
# carma sim --report on a long run: what the recorder keeps is bounded (README, --report;
# CARMA_REPORT_KEEP_POINTS and _BARS in src/report/report.h), so the memory a report adds
# does not grow with the jobs, the page stays a few MB and says which runs its Gantt chart
# leaves out and how wide the buckets its series were compacted to are; a short run's page
# has no such note (its recording keeps everything).
set -eu
CARMA="$CARMA_BIN/carma"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 160,000 one- and two-GPU jobs of 40 to 90 s, one every 20 s (Muri's CSV, microseconds):
# about 57,000 runs per GPU over 37 days, on 4 GPUs that are all drawn.
awk -v n=160000 'BEGIN {
    print "job_id,num_gpu,submit_time,iterations,model_name,batch_size,duration,interval," \
          "iteration_time,resource_time_0,resource_time_1,resource_time_2,priority"
    for (i = 0; i < n; i++)
        printf "%d,%d,%d,1000,%s,128,%d,0,490,446,8,0,0\n", i, (i % 7 == 0 ? 2 : 1),
            i * 20000000, (i % 3 == 0 ? "dqn" : "resnet18"), (40 + (i * 13) % 50) * 1000000
}' >"$T/long.csv"

# Peak resident memory (KiB) of one carma sim run, in a process of its own.
peak() { # out args...
    python3 - "$@" <<'PY'
import resource, subprocess, sys
out = open(sys.argv[1], "w")
subprocess.run(sys.argv[2:], stdout=out, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
}
SIM="$CARMA sim --trace $T/long.csv --trace-format muri --gpus 4xa100-40gb --policy auto"
plain=$(peak "$T/t0" $SIM) || fail "run without --report"
report=$(peak "$T/t1" $SIM --report "$T/long.html") || fail "run with --report"
cmp -s "$T/t0" "$T/t1" || fail "--report changed the figures"
# Keeping every point and bar took 29 MB more here (160,000 jobs; 14 MB for 80,000);
# the bounded recorder takes about 5 MB, whatever the number of jobs. (Not under
# AddressSanitizer, whose quarantine keeps freed memory resident.)
extra=$((report - plain))
if ldd "$CARMA" 2>/dev/null | grep -q libasan; then
    echo "sim_report_long: memory not compared under AddressSanitizer"
else
    [ "$extra" -lt 12288 ] ||
        fail "--report took $extra KiB more than the run alone (peak $report KiB, $plain KiB)"
fi

python3 - "$T/long.html" <<'PY' || fail "long run's page"
import re, sys
html = open(sys.argv[1], encoding="utf-8").read()
size = len(html.encode())
assert size < 4 << 20, "page of %d bytes" % size
assert html.rstrip().endswith("</html>"), "truncated"
# every run counted, the ones left out said, from when, and greyed in the chart
assert "4 GPUs, 160000 job runs over" in html, "runs counted"
m = re.search(r'<p class="note">(\d+) runs that started from (\w+) on are not drawn \(grey\): '
              r"a long run's recording keeps the bars of its first (\d+) runs or so", html)
assert m, "no note on the runs left out"
late, kept = int(m.group(1)), int(m.group(3))
assert late + kept == 160000 and 30000 < kept < 70000, (late, kept)
assert '<g><rect fill="#8c959f" fill-opacity=".18"' in html, "no grey span"
# the series compacted to time buckets' extremes (README, --report): said beside the
# charts, once per section, with the buckets' width (a power of two seconds)
said = re.findall(r'<p class="note">a long run: in the charts below each point is the lowest '
                  r'or the highest value within ([\d,]+) s \((\w+)\), to bound', html)
assert len(said) == 1, "the compacted series said %d times" % len(said)
w = int(said[0][0].replace(",", ""))
assert w >= 64 and w & (w - 1) == 0, "buckets of %s s" % said[0][0]
assert "<title>%d runs that started here or later are not drawn</title>" % late in html
# the series cover the whole run: the memory chart's path reaches its right end (x 1156)
path = re.search(r'<path class="mem" d="([^"]*)"', html).group(1)
end = re.search(r"(\d+(?:\.\d+)?) [\d.]+V[\d.]+Z$", path)
assert end and float(end.group(1)) > 1150, "memory series ends at " + path[-40:]
print("long run: page %d bytes, %d runs drawn of 160000" % (size, kept))
PY

# Short runs keep every point and bar: no runs left out, on both bundled traces.
for trace in trace-mix90 trace-t1; do
    "$CARMA" sim --trace "data/$trace.csv" --gpus 4xa100-40gb --policy all \
        --report "$T/$trace.html" >/dev/null || fail "$trace run"
    ! grep -q "not drawn (grey)\|runs not recorded" "$T/$trace.html" ||
        fail "$trace: a short run's page leaves runs out"
    ! grep -q "a long run: in the charts" "$T/$trace.html" ||
        fail "$trace: a short run's page says its series were compacted"
done
echo "sim_report_long: extra memory $extra KiB with --report"
