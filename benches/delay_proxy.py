#!/usr/bin/env python3
"""A TCP proxy that delivers every chunk a fixed time after it arrived, in each direction:
network latency between machines, simulated on loopback for the cluster benchmark. Chunks
in flight overlap (latency, not a slower link): a burst of packets arrives one delay later,
not one delay per packet.

Usage: delay_proxy.py LISTEN_PORT TARGET_PORT DELAY_MS   (127.0.0.1 only; stop with SIGTERM)"""
import asyncio
import sys

listen, target, delay = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) / 1000.0


async def pipe(reader, writer):
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def deliver():
        while (item := await queue.get()) is not None:
            due, data = item
            await asyncio.sleep(max(0.0, due - loop.time()))
            writer.write(data)
            await writer.drain()
        writer.close()

    sender = asyncio.create_task(deliver())
    try:
        while data := await reader.read(65536):
            queue.put_nowait((loop.time() + delay, data))
    except ConnectionError:
        pass
    finally:
        queue.put_nowait(None)
        try:
            await sender
        except ConnectionError:
            pass


async def handle(client_reader, client_writer):
    try:
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target)
    except OSError:
        client_writer.close()
        return
    await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer))


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


asyncio.run(main())
