#!/usr/bin/env python3
"""Parses a Prometheus text exposition (0.0.4) strictly and prints one line per
sample: NAME{sorted labels} VALUE. Exits 1 on any malformed line, a sample without
its # TYPE, a histogram whose buckets are not cumulative, or a duplicate series."""
import re
import sys

NAME = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
LABEL = r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"'
SAMPLE = re.compile(r'^(' + NAME + r')(\{(' + LABEL + r'(,' + LABEL + r')*)?\})? (\S+)$')
types, seen, out, buckets = {}, set(), [], {}
for n, line in enumerate(sys.stdin.read().split('\n'), 1):
    if line == '':
        continue
    if line.startswith('# HELP '):
        continue
    if line.startswith('# TYPE '):
        parts = line.split(' ')
        if len(parts) != 4 or parts[3] not in ('gauge', 'counter', 'histogram', 'summary', 'untyped'):
            sys.exit('line %d: bad TYPE: %s' % (n, line))
        if parts[2] in types:
            sys.exit('line %d: TYPE twice for %s' % (n, parts[2]))
        types[parts[2]] = parts[3]
        continue
    if line.startswith('#'):
        sys.exit('line %d: unknown comment' % n)
    m = SAMPLE.match(line)
    if not m:
        sys.exit('line %d: malformed sample: %r' % (n, line))
    name, value = m.group(1), m.group(m.lastindex)
    labels = dict(re.findall(LABEL, m.group(3) or ''))
    try:
        v = float(value)
    except ValueError:
        sys.exit('line %d: bad value %r' % (n, value))
    base = re.sub(r'_(bucket|sum|count)$', '', name)
    t = types.get(name) or types.get(base)
    if t is None:
        sys.exit('line %d: %s has no TYPE' % (n, name))
    if t == 'counter' and not name.endswith('_total'):
        sys.exit('line %d: counter %s without _total' % (n, name))
    key = name + '{' + ','.join('%s=%s' % kv for kv in sorted(labels.items())) + '}'
    if key in seen:
        sys.exit('line %d: duplicate series %s' % (n, key))
    seen.add(key)
    if name.endswith('_bucket'):
        le = float('inf') if labels['le'] == '+Inf' else float(labels['le'])
        prev = buckets.get(base)
        if prev and (le <= prev[0] or v < prev[1]):
            sys.exit('line %d: buckets not increasing' % n)
        buckets[base] = (le, v)
    out.append('%s %s' % (key, value))
print('\n'.join(out))
