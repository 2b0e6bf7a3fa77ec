#!/usr/bin/env python3
"""Takes a write lease (F_SETLEASE, F_WRLCK) on the file $1 as its owner may, once no
other descriptor is open on it (retried for 20 s), creates $2 to say so, and holds it
until killed. SIGIO, which the kernel sends when another process opens the file, is
ignored: a blocking open by anyone else then waits out /proc/sys/fs/lease-break-time."""
import fcntl
import os
import signal
import sys
import time

signal.signal(signal.SIGIO, signal.SIG_IGN)
path, ready = sys.argv[1], sys.argv[2]
deadline = time.monotonic() + 20
while True:
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
        break
    except OSError:
        os.close(fd)
        if time.monotonic() > deadline:
            sys.exit("lease.py: no lease on %s within 20 s" % path)
        time.sleep(0.05)
open(ready, "w").close()
while True:
    signal.pause()
