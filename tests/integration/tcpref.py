#!/usr/bin/env python3
"""tests/integration/tcpref.py: raw TCP between two network namespaces,
the reference of bench/hosts.sh (the machine's own limit on those links).

    tcpref.py serve HOST:PORT          answers until killed
    tcpref.py rtt HOST:PORT N          N round trips of 64 bytes: the median
    tcpref.py copy HOST:PORT BYTES N   N copies of BYTES, each answered
                                       with one byte: the median

TCP_NODELAY on both ends, as tfg's transport sets it.  Prints seconds.
"""
import socket
import sys
import time


def conn(addr):
    host, port = addr.rsplit(":", 1)
    return host, int(port)


def nodelay(s):
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def serve(addr):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(conn(addr))
    ls.listen(8)
    print("ready", flush=True)
    while True:
        s, _ = ls.accept()
        nodelay(s)
        f = s.makefile("rb")
        while True:
            head = f.read(9)
            if len(head) < 9:
                break
            kind, n = head[:1], int.from_bytes(head[1:], "little")
            got = 0
            while got < n:
                b = f.read1(min(n - got, 1 << 20))
                if not b:
                    break
                got += len(b)
            s.sendall(b"x" * (64 if kind == b"r" else 1))
        s.close()


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


def main():
    mode, addr = sys.argv[1], sys.argv[2]
    if mode == "serve":
        return serve(addr)
    s = socket.create_connection(conn(addr))
    nodelay(s)
    times = []
    if mode == "rtt":
        msg = b"r" + (55).to_bytes(8, "little") + b"x" * 55
        want = 64
        n = int(sys.argv[3])
    else:
        size = int(sys.argv[3])
        msg = b"c" + size.to_bytes(8, "little") + b"\0" * size
        want = 1
        n = int(sys.argv[4])
    for _ in range(n + 1):
        t = time.perf_counter()
        s.sendall(msg)
        got = 0
        while got < want:
            got += len(s.recv(want - got))
        times.append(time.perf_counter() - t)
    print("%.6f" % median(times[1:]))


main()
