#!/usr/bin/env python3
"""A webhook receiver made for speed, for the benchmarks: HTTP/1.1 with keep-alive on asyncio,
answering every POST with 204 and checking nothing (the tests' receiver, Tests/webhooks/
receiver.py, verifies signatures; this one measures the sender). Listens on 127.0.0.1 at a port
of its choosing and prints {"listening": PORT}, then one line per request:
"<arrival ns> <webhook-id> <webhook-timestamp>", flushed at least every 50 ms.

    receiver.py
"""
import asyncio
import json
import sys
import time


def main():
    out = sys.stdout
    pending = []

    async def flush_often():
        while True:
            await asyncio.sleep(0.05)
            if pending:
                out.write("".join(pending))
                out.flush()
                pending.clear()

    async def serve(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length, message_id, timestamp = 0, "-", "-"
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    name = name.strip().lower()
                    if name == b"content-length":
                        length = int(value)
                    elif name == b"webhook-id":
                        message_id = value.strip().decode()
                    elif name == b"webhook-timestamp":
                        timestamp = value.strip().decode()
                if length:
                    await reader.readexactly(length)
                pending.append(f"{time.time_ns()} {message_id} {timestamp}\n")
                writer.write(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def run():
        server = await asyncio.start_server(serve, "127.0.0.1", 0, backlog=512)
        out.write(json.dumps({"listening": server.sockets[0].getsockname()[1]}) + "\n")
        out.flush()
        asyncio.ensure_future(flush_often())
        async with server:
            await server.serve_forever()

    asyncio.run(run())


if __name__ == "__main__":
    main()
