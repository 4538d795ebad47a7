"""tests/support/fault_proxy.py: a small fault-injecting TCP proxy between a client and a server.

    with FaultProxy(upstream_port) as proxy:
        proxy.schedule(["cut:3000000", "reset:0", "503", "stall:100000", "norange"])
        ... connect to proxy.url ...

Each new client connection takes the next fault from the schedule (then "pass" when it runs
out) and keeps it for its life:
  pass        forward both ways
  cut:N       forward N response bytes, then close the connection (FIN)
  reset:N     forward N response bytes, then reset it (RST)
  stall:N     forward N response bytes, then send nothing more (the client must time out)
  503         answer the first request with "503 Service Unavailable" and close
  norange     drop Range headers from requests (the server then answers 200 with everything)
  slow:N      forward responses at N bytes a second (a slow link; nginx's limit_rate lets the
              first second's worth of each request through at once)
Runs an asyncio loop on a daemon thread; counts connections in `connections`.
"""
import asyncio
import collections
import re
import socket
import struct
import threading

RANGE_HEADER = re.compile(rb"(?i)\r\nrange:[^\r]*")


class FaultProxy:
    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.faults = collections.deque()
        self.connections = 0
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.server = None
        self.port = None

    def schedule(self, faults):
        self.faults = collections.deque(faults)
        self.connections = 0

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        self.thread.start()
        started = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self.handle, "127.0.0.1", 0), self.loop)
        self.server = started.result(timeout=10)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc):
        async def shutdown():
            self.server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)

    async def handle(self, reader, writer):
        self.connections += 1
        fault = self.faults.popleft() if self.faults else "pass"
        kind, _, limit = fault.partition(":")
        limit = int(limit) if limit else 0
        try:
            if kind == "503":
                await reader.readuntil(b"\r\n\r\n")
                writer.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nRetry-After: 0\r\n"
                             b"Connection: close\r\n\r\n")
                await writer.drain()
                writer.close()
                return
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except (OSError, asyncio.IncompleteReadError):
            writer.close()
            return

        async def requests():
            while data := await reader.read(65536):
                if kind == "norange":
                    data = RANGE_HEADER.sub(b"", data)
                up_writer.write(data)
                await up_writer.drain()

        async def responses():
            sent = 0
            while data := await up_reader.read(65536):
                if kind in ("cut", "reset", "stall") and sent + len(data) >= limit:
                    writer.write(data[:limit - sent])
                    await writer.drain()
                    if kind == "cut":
                        writer.close()
                    elif kind == "reset":
                        sock = writer.get_extra_info("socket")
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        writer.transport.abort()
                    else:
                        await asyncio.sleep(3600)
                    return
                writer.write(data)
                await writer.drain()
                sent += len(data)
                if kind == "slow":
                    await asyncio.sleep(len(data) / limit)

        async def quietly(pump):
            try:
                await pump()
            except (OSError, asyncio.IncompleteReadError):
                pass  # the other side went away: that is what a fault test does

        tasks = [asyncio.ensure_future(quietly(requests)), asyncio.ensure_future(quietly(responses))]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        except Exception:
            pass
        for task in tasks:
            task.cancel()
        for w in (writer, up_writer):
            try:
                w.close()
            except Exception:
                pass
