"""Misbehaving carmad clients for tests/e2e/daemon_abuse.sh. Usage:
  conn_abuse.py noread SOCK PID SECS   pipeline requests, never read; report carmad's RSS
  conn_abuse.py ping SOCK              seconds one ping takes on a new connection
  conn_abuse.py hold SOCK N SECS       open N idle connections; count those refused with busy
  conn_abuse.py idle SOCK SECS         seconds until carmad closes an idle connection
  conn_abuse.py submit SOCK N          N queued jobs with long names, pipelined on one connection
  conn_abuse.py raw SOCK JSON|@FILE    one request, prints the answer line
  conn_abuse.py halfclose SOCK N TAIL  N pings and TAIL in one write, then shutdown(SHUT_WR);
                                       prints every answer line carmad sends before it closes
  conn_abuse.py mute PATH              a server that accepts and never answers
  conn_abuse.py cpu PID SECS           CPU seconds PID uses over SECS
  conn_abuse.py history SOCK N         one history request of the last 8 days alone, then
                                       N pipelined on each of 2 connections and a ping
                                       beside them: prints its time, the ping's, the answers
  conn_abuse.py flood SOCK N K JSON MARK  JSON once alone, then K of it pipelined on each of
                                       N connections (MARK made once they are sent): prints
                                       the time of one and the answers' error codes"""
import json, os, select, socket, sys, threading, time


def conn(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def rss_kb(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS"):
            return int(line.split()[1])
    return 0


def readline(s, timeout):
    s.settimeout(timeout)
    buf = b""
    try:
        while b"\n" not in buf:
            d = s.recv(65536)
            if not d:
                break
            buf += d
    except (socket.timeout, OSError):
        pass
    return buf


def noread(path, pid, secs):
    s = conn(path)
    s.setblocking(False)
    chunk = b'{"v":1,"op":"gpus"}\n' * 512
    base = peak = rss_kb(pid)
    t0 = time.time()
    closed = None
    while time.time() - t0 < secs:
        try:
            s.send(chunk)
        except BlockingIOError:
            r, _, _ = select.select([s], [], [], 0.05)
            if r:  # readable without our reading anything: carmad closed it
                try:
                    if s.recv(1, socket.MSG_PEEK) == b"":
                        closed = time.time() - t0
                except OSError:
                    closed = time.time() - t0
        except OSError:
            closed = time.time() - t0
        peak = max(peak, rss_kb(pid))
        if closed is not None:
            break
    print(json.dumps({"closed_after": closed, "rss_base_kb": base, "rss_peak_kb": peak}))


def ping(path):
    t0 = time.time()
    s = conn(path)
    s.sendall(b'{"v":1,"op":"ping"}\n')
    a = readline(s, 30)
    print("%.3f" % (time.time() - t0) if b'"ok":true' in a else "fail %r" % a[:200])


def hold(path, n, secs):
    held, busy, other = [], 0, 0
    for _ in range(n):
        try:
            held.append(conn(path))
        except OSError:
            other += 1
    # A refused connection gets one "busy" line, then EOF: collect those for 3 s (a
    # slow carmad, ASan on a loaded host, may take a while to get to them all).
    p = select.poll()
    for s in held:
        p.register(s, select.POLLIN)
    left = {s.fileno(): s for s in held}
    t0 = time.time()
    while left and time.time() - t0 < 3:
        for fd, _ in p.poll(100):
            s = left.pop(fd)
            p.unregister(fd)
            a = readline(s, 1)
            if b'"error":"busy"' in a:
                busy += 1
            else:
                other += 1
    print(json.dumps({"open": len(left), "busy": busy, "other": other}), flush=True)
    time.sleep(secs)


def idle(path, secs):
    s = conn(path)
    t0 = time.time()
    a = readline(s, secs)
    print("%.1f" % (time.time() - t0) if a == b"" and time.time() - t0 < secs else "open")


def submit(path, n):
    s = conn(path)
    f = s.makefile("rb")
    got = []

    def reader():
        for _ in range(n):
            got.append(json.loads(f.readline()))
    t = threading.Thread(target=reader)
    t.start()
    req = json.dumps({"v": 1, "op": "submit", "job": {"argv": ["/bin/true"], "cwd": "/tmp",
                                                      "name": '"' * 128}}).encode() + b"\n"
    for _ in range(n // 100):
        s.sendall(req * 100)
    s.sendall(req * (n % 100))
    t.join()
    print(sum(1 for a in got if a.get("ok")))


def raw(path, line):
    if line.startswith("@"):  # a request too long for an argument: from a file
        line = open(line[1:]).read().strip()
    s = conn(path)
    s.sendall(line.encode() + b"\n")
    print(readline(s, 30).decode(errors="replace").strip())


def mute(path):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(8)
    held = []
    while True:
        held.append(srv.accept()[0])


def halfclose(path, n, tail):
    s = conn(path)
    s.sendall(b'{"v":1,"op":"ping"}\n' * n + tail.encode())
    s.shutdown(socket.SHUT_WR)
    s.settimeout(10)
    buf = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        buf += d
    sys.stdout.write(buf.decode())


def history(path, n):
    req = json.dumps({"v": 1, "op": "history", "since": time.time() - 8 * 86400}).encode()
    t0 = time.time()
    s = conn(path)
    s.sendall(req + b"\n")
    alone = readline(s, 60)
    single = time.time() - t0
    assert b'"ok":true' in alone, alone[:200]
    time.sleep(5 * single + 0.2)  # past what carmad leaves other requests after it
    errors = []

    def hog():
        h = conn(path)
        h.sendall((req + b"\n") * n)
        h.settimeout(120)
        buf = b""
        while buf.count(b"\n") < n:
            d = h.recv(1 << 20)
            if not d:
                break
            buf += d
        errors.extend(json.loads(x).get("error", "ok") for x in buf.split(b"\n") if x)

    hogs = [threading.Thread(target=hog) for _ in range(2)]
    for h in hogs:
        h.start()
    time.sleep(0.2)
    t0 = time.time()
    p = conn(path)
    p.sendall(b'{"v":1,"op":"ping"}\n')
    pong = readline(p, 120)
    ping_s = time.time() - t0 if b'"ok":true' in pong else None
    for h in hogs:
        h.join()
    print(json.dumps({"single": single, "ping": ping_s,
                      "answers": {e: errors.count(e) for e in set(errors)}}))


def flood(path, n, k, req, mark):
    req = req.encode() + b"\n"
    t0 = time.time()
    s = conn(path)
    s.sendall(req)
    assert b'"ok":true' in readline(s, 60)
    single = time.time() - t0
    s.close()
    errors = []

    def one(h):
        h.settimeout(300)
        buf = b""
        while buf.count(b"\n") < k:
            d = h.recv(1 << 20)
            if not d:
                break
            buf += d
        errors.extend(json.loads(x).get("error", "ok") for x in buf.split(b"\n") if x)

    hs = [conn(path) for _ in range(n)]
    for h in hs:
        h.sendall(req * k)
    open(mark, "w").close()
    ts = [threading.Thread(target=one, args=(h,)) for h in hs]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(json.dumps({"single": single, "answers": {e: errors.count(e) for e in set(errors)}}))


def cpu(pid, secs):
    def ticks():
        f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
        return int(f[11]) + int(f[12])
    a = ticks()
    time.sleep(secs)
    print("%.2f" % ((ticks() - a) / os.sysconf("SC_CLK_TCK")))


if __name__ == "__main__":
    cmd, a = sys.argv[1], sys.argv[2:]
    if cmd == "noread":
        noread(a[0], int(a[1]), float(a[2]))
    elif cmd == "ping":
        ping(a[0])
    elif cmd == "hold":
        hold(a[0], int(a[1]), float(a[2]))
    elif cmd == "idle":
        idle(a[0], float(a[1]))
    elif cmd == "submit":
        submit(a[0], int(a[1]))
    elif cmd == "raw":
        raw(a[0], a[1])
    elif cmd == "mute":
        mute(a[0])
    elif cmd == "halfclose":
        halfclose(a[0], int(a[1]), a[2] if len(a) > 2 else "")
    elif cmd == "cpu":
        cpu(int(a[0]), float(a[1]))
    elif cmd == "history":
        history(a[0], int(a[1]))
    elif cmd == "flood":
        flood(a[0], int(a[1]), int(a[2]), a[3], a[4])
