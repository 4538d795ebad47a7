"""tests/support/redis_server.py: a real redis-server on 127.0.0.1 for the network tests.

    with RedisServer() as server:                 # or RedisServer(password="s3cret")
        uri = server.uri + "/prefix"              # "redis://127.0.0.1:PORT/prefix"
        server.client().keys("prefix:*")          # redis-py, when the caller has it

Runs unprivileged on a free port with nothing persisted (--save '' --appendonly no, its
working directory a temporary one), and is stopped (killed if it must be) on exit. Raises
RuntimeError with the reason when redis-server is not installed, so that callers can exit 77
(skipped).
"""
import os
import shutil
import socket
import subprocess
import tempfile
import time

from processes import free_port, stop_process


class RedisServer:
    def __init__(self, password=None):
        self.binary = shutil.which("redis-server") or (
            "/usr/bin/redis-server" if os.path.exists("/usr/bin/redis-server") else None)
        if self.binary is None:
            raise RuntimeError("redis-server is not installed (scripts/setup.sh installs it)")
        self.password = password
        self.port = free_port()
        self.uri = f"redis://127.0.0.1:{self.port}"
        self.dir = tempfile.mkdtemp(prefix="ringload-redis-")
        self.process = None

    def __enter__(self):
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--dir", self.dir, "--logfile", os.path.join(self.dir, "redis.log"), "--daemonize", "no"]
        if self.password is not None:
            args += ["--requirepass", self.password]
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(64):  # +PONG, or -NOAUTH with a password: either way it serves
                        return self
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                log = os.path.join(self.dir, "redis.log")
                self.__exit__(None, None, None)
                raise RuntimeError("redis-server did not start: " + (open(log).read() if os.path.exists(log) else ""))
            time.sleep(0.05)

    def client(self):
        import redis
        return redis.Redis(host="127.0.0.1", port=self.port, password=self.password)

    def __exit__(self, *exc):
        stop_process(self.process)
        shutil.rmtree(self.dir, ignore_errors=True)
