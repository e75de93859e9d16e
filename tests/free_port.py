# tests/free_port.py DIR: prints a TCP port of 127.0.0.1 for a test's task
# to listen on, and reserves it for the test whose directory DIR is.
#
# The port is below the kernel's ephemeral range
# (/proc/sys/net/ipv4/ip_local_port_range), so that no outgoing
# connection of another test running at the same time can take it as its
# own end before the task listens (a port bound to 0 is an ephemeral one,
# and CI once saw "address in use" that way).  A port is reserved by
# creating /tmp/tfg-ports/PORT, which makes the pick exclusive among
# tests running at once; the test removes its reservations when it ends
# (common.inc's EXIT trap), and one older than 15 minutes is stale.
import os
import random
import socket
import sys
import time

RESERVED = "/tmp/tfg-ports"


def ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def reserve(port):
    path = os.path.join(RESERVED, str(port))
    try:
        os.mkdir(path)
        return True
    except FileExistsError:
        try:
            if time.time() - os.stat(path).st_mtime > 900:
                os.rmdir(path)
        except OSError:
            pass
        return False


def bindable(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def main():
    mine = os.path.join(sys.argv[1], ".ports")
    os.makedirs(RESERVED, mode=0o1777, exist_ok=True)
    low = ephemeral_low()
    first = max(1024, low - 12000)
    for _ in range(1000):
        if low - first < 100:
            break
        port = random.randrange(first, low)
        if not reserve(port):
            continue
        if bindable(port):
            with open(mine, "a") as f:
                f.write("%d\n" % port)
            print(port)
            return
        os.rmdir(os.path.join(RESERVED, str(port)))
    # No room below the ephemeral range: one the kernel hands out.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1])


main()
