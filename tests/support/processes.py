"""tests/support/processes.py: what the test servers (nginx, redis-server, moto) share.

    port = free_port()          # a free TCP port on 127.0.0.1
    stop_process(popen)         # SIGTERM, then SIGKILL after 10 s; reaped either way
"""
import socket
import subprocess


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(process):
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
