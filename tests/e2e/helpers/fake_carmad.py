"""A carmad that answers wrongly, for the client's tests: listens on a UNIX socket and
answers each connection's request with the next line given (the last one repeated),
then closes it. Usage: fake_carmad.py SOCKET ANSWER...  (runs until killed)"""
import os
import socket
import sys

path, answers = sys.argv[1], [a.encode() + b"\n" for a in sys.argv[2:]]
try:
    os.unlink(path)
except FileNotFoundError:
    pass
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(16)
k = 0
while True:
    c, _ = s.accept()
    c.settimeout(5)
    try:
        buf = b""
        while b"\n" not in buf:
            d = c.recv(1 << 20)
            if not d:
                break
            buf += d
        c.sendall(answers[min(k, len(answers) - 1)])
    except OSError:
        pass
    c.close()
    k += 1
