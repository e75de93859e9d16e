# tests/integration/progs/tls_split.py LISTEN_PORT TARGET_PORT SECONDS:
# a TCP proxy on 127.0.0.1 that passes what a TLS client sends to the
# server one TLS record at a time, 30 ms apart, so that each record comes
# in a read of its own (as it may under load); the answers go back as
# they come.  It serves connections for SECONDS, then exits.
import socket, sys, threading, time

listen, target, life = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])


def records(src, dst):
    buf = b""
    try:
        while True:
            while len(buf) >= 5 and len(buf) >= 5 + int.from_bytes(buf[3:5], "big"):
                n = 5 + int.from_bytes(buf[3:5], "big")
                dst.sendall(buf[:n])
                buf = buf[n:]
                time.sleep(0.03)
            b = src.recv(65536)
            if not b:
                break
            buf += b
        dst.sendall(buf)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def back(src, dst):
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            dst.sendall(b)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", listen))
ls.listen(16)
ls.settimeout(0.2)
end = time.monotonic() + life
while time.monotonic() < end:
    try:
        c, _ = ls.accept()
    except socket.timeout:
        continue
    s = socket.create_connection(("127.0.0.1", target))
    threading.Thread(target=records, args=(c, s), daemon=True).start()
    threading.Thread(target=back, args=(s, c), daemon=True).start()
