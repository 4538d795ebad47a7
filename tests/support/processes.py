"""tests/support/processes.py: what the test servers (nginx, redis-server, moto) share.

    port = free_port()          # a free TCP port on 127.0.0.1
    stop_process(popen)         # SIGTERM, then SIGKILL after 10 s; reaped either way
"""
import random
import socket
import subprocess


def free_port():
    """A port nothing on 127.0.0.1 holds now, drawn at random from BELOW the kernel's ephemeral
    range. A port the kernel hands out for bind(0) comes from that range, and so does the local
    port of every outgoing connection: with the tests' clients running beside it, such a port
    could be taken before the server bound it (CI saw nginx fail to start so, 760d3d5)."""
    low = _ephemeral_range()[0]
    draw = random.SystemRandom()  # not the seeded module state: tests started together differ
    for _ in range(100):
        port = draw.randrange(10000, max(low, 10001))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # the range below is crowded: the kernel's choice, as before
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(x) for x in f.read().split())
            return low, high
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def stop_process(process):
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
