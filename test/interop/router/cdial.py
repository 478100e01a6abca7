"""
A C SDK peer for the router traffic suite (traffic.suite.ts), run with the Python interop suite's virtualenv
(test/interop/.venv, made by test/interop/python/setup.sh), whose `openziti` package carries the OpenZiti C SDK.

    cdial.py enroll <identity.jwt> <identity.json>   the C SDK's own enrollment from the JWT; prints "enrolled"
    cdial.py dial <identity.json> <service> <n>      dials the service through an edge router, sends n lines,
                                                     checks each answer is the line prefixed "echo:", closes;
                                                     prints "ok <n>"

Any failure is one line on stderr (with the C SDK's error code and text) and exit status 1.
"""
from __future__ import annotations

import os
import socket
import sys
import time

import openziti
from openziti import zitilib


def fail(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
    # The C SDK's loop thread can keep the interpreter from ending: leave at once.
    os._exit(1)


def enroll(jwt_file: str, out_file: str) -> None:
    with open(jwt_file, encoding="utf-8") as f:
        jwt = f.read().strip()
    try:
        identity = openziti.enroll(jwt)
    except RuntimeError as err:
        fail(f"enroll: {err}")
    with open(out_file, "w", encoding="utf-8") as f:
        f.write(identity)
    print("enrolled", flush=True)
    os._exit(0)


def dial(identity_file: str, service: str, count: int) -> None:
    context = openziti.load(identity_file)
    fd = zitilib.ziti_socket(socket.SOCK_STREAM)
    # ZitiContext.connect() of openziti 0.6.0 raises TypeError when no terminator is named (it encodes None), so
    # the zitilib call is made directly, as test/interop/python does.
    rc = zitilib._ziti_connect(fd, context._ctx, service.encode(), None)
    if rc != 0:
        err = zitilib._ziti_lasterr()
        fail(f"connect: rc {rc}, error {err}: {zitilib.errorstr(err)}")
    sock = socket.socket(fileno=fd)
    sock.settimeout(15)
    stream = sock.makefile("rwb")
    for i in range(count):
        msg = f"message {i} {time.time()}\n".encode()
        try:
            stream.write(msg)
            stream.flush()
            answer = stream.readline()
        except OSError as err:
            fail(f"exchange {i}: {err!r}")
        if answer != b"echo:" + msg:
            fail(f"answer {i}: got {answer!r}, want {b'echo:' + msg!r}")
    stream.close()
    sock.close()
    print(f"ok {count}", flush=True)
    # Give the C SDK a moment to send the close to the router before the process ends.
    time.sleep(0.5)
    os._exit(0)


def main() -> None:
    args = sys.argv[1:]
    if len(args) == 3 and args[0] == "enroll":
        enroll(args[1], args[2])
    elif len(args) == 4 and args[0] == "dial":
        dial(args[1], args[2], int(args[3]))
    else:
        fail("usage: cdial.py enroll <identity.jwt> <identity.json> | dial <identity.json> <service> <n>")


if __name__ == "__main__":
    main()
