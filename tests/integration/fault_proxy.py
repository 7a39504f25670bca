"""FaultProxy: a TCP proxy on loopback that injects network faults between real processes.

This machine's kernel has no netem qdisc, so faults are made here, in user space, on the byte
stream of each proxied connection, in both directions:
  delay       every chunk is forwarded `delay` seconds after it was read (order is kept);
  loss        each chunk, with probability `loss`, waits an extra 200-600 ms: what a lost segment
              costs a TCP stream (the retransmission timeout), as the application sees it;
  partition   while on, nothing is forwarded either way (connections stay open, bytes wait), and
              new connections are accepted but carry nothing: a network that went silent;
  rate        forwarding is paced to `rate` bytes per second per direction (a token bucket with
              no burst beyond one chunk).
The proxy runs an asyncio loop on its own thread; its methods may be called from the test thread.
"""
import asyncio
import random
import threading
import time


class FaultProxy:
    def __init__(self, target_port, delay=0.0, loss=0.0, rate=None, seed=1):
        self.target_port = target_port
        self.delay, self.loss, self.rate = delay, loss, rate
        self._random = random.Random(seed)
        self._partitioned = False
        self._resumed = None  # an asyncio.Event, set while not partitioned
        self._loop = asyncio.new_event_loop()
        self._server = None
        self._tasks = set()
        self.port = None
        self.bytes_forwarded = 0
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.port = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)

    async def _start(self):
        self._resumed = asyncio.Event()
        self._resumed.set()
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return self._server.sockets[0].getsockname()[1]

    def partition(self, on):
        def flip():
            self._partitioned = on
            if on:
                self._resumed.clear()
            else:
                self._resumed.set()
        self._loop.call_soon_threadsafe(flip)

    def stop(self):
        async def close():
            self._server.close()
            for t in list(self._tasks):
                t.cancel()
        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _accept(self, client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1",
                                                                         self.target_port)
        except OSError:
            client_writer.close()
            return
        for reader, writer in ((client_reader, server_writer), (server_reader, client_writer)):
            task = asyncio.ensure_future(self._pipe(reader, writer))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pipe(self, reader, writer):
        queue = asyncio.Queue()
        sender = asyncio.ensure_future(self._send(queue, writer))
        try:
            while True:
                chunk = await reader.read(16384)
                if not chunk:
                    break
                extra = 0.0
                if self.loss and self._random.random() < self.loss:
                    extra = self._random.uniform(0.2, 0.6)
                await queue.put((time.monotonic() + self.delay + extra, chunk))
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            await queue.put(None)
            try:
                await sender
            except asyncio.CancelledError:
                pass

    async def _send(self, queue, writer):
        last = 0.0
        try:
            while True:
                item = await queue.get()
                if item is None:
                    break
                due, chunk = item
                due = max(due, last)  # in order, whatever each chunk's own delay
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                await self._resumed.wait()
                if self.rate:
                    await asyncio.sleep(len(chunk) / self.rate)
                writer.write(chunk)
                await writer.drain()
                self.bytes_forwarded += len(chunk)
                last = time.monotonic()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
