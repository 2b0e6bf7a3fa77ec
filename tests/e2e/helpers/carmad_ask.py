"""One request to carmad on its UNIX socket, as a client that does not check what it
sends (the protocol of docs/daemon.md): for tests that carmad itself refuses it."""
import json
import socket


def submit(path, job):
    """carmad's answer (a dict) to a submit of `job`."""
    return ask(path, {"v": 1, "op": "submit", "job": job})


def ask(path, req):
    """carmad's answer (a dict) to request `req` (a dict), sent as it is."""
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall(json.dumps(req).encode() + b"\n")
    buf = b""
    while not buf.endswith(b"\n"):
        b = s.recv(65536)
        if not b:
            break
        buf += b
    s.close()
    return json.loads(buf)
