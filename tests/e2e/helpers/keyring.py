#!/usr/bin/env python3
"""The session keyring through the raw system calls (no keyutils needed):
  keyring.py join NAME DATA CMD...  runs CMD in a new session keyring holding the user key
                                     NAME (DATA), as a service manager starts a service
  keyring.py add NAME DATA          adds the user key NAME to the session keyring
  keyring.py read NAME              prints the user key NAME found from the session
                                     keyring; exit 1 when there is none"""
import ctypes
import os
import platform
import sys

NR = {"x86_64": (248, 250), "aarch64": (217, 219), "ppc64le": (269, 271)}
if platform.machine() not in NR:
    sys.exit(77)
ADD_KEY, KEYCTL = NR[platform.machine()]
SESSION = ctypes.c_long(-3)  # KEY_SPEC_SESSION_KEYRING
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def add(name, data):
    k = libc.syscall(ADD_KEY, b"user", name.encode(), data.encode(), len(data), SESSION)
    if k < 0:
        sys.exit("add_key: " + os.strerror(ctypes.get_errno()))


op = sys.argv[1]
if op == "join":
    if libc.syscall(KEYCTL, 1, None) < 0:  # KEYCTL_JOIN_SESSION_KEYRING, anonymous
        sys.exit("keyctl join: " + os.strerror(ctypes.get_errno()))
    add(sys.argv[2], sys.argv[3])
    os.execvp(sys.argv[4], sys.argv[4:])
elif op == "add":
    add(sys.argv[2], sys.argv[3])
elif op == "read":
    # KEYCTL_SEARCH (10) from the session keyring, then KEYCTL_READ (11)
    k = libc.syscall(KEYCTL, 10, SESSION, b"user", sys.argv[2].encode(), 0)
    if k < 0:
        print("no key " + sys.argv[2] + ": " + os.strerror(ctypes.get_errno()))
        sys.exit(1)
    buf = ctypes.create_string_buffer(256)
    n = libc.syscall(KEYCTL, 11, ctypes.c_long(k), buf, 255)
    if n < 0:
        print("key " + sys.argv[2] + " not readable: " + os.strerror(ctypes.get_errno()))
        sys.exit(1)
    print(sys.argv[2] + "=" + buf.value.decode())
