#!/usr/bin/env python3
"""A fast Varlink client of trialwatch's control socket, for the end-to-end test's burst.

  start SOCKET PREFIX COUNT ENDS_AT   starts COUNT trials, subjects PREFIX-0 to PREFIX-<COUNT-1>,
                                      all ending at ENDS_AT (RFC 3339), without reminders; the
                                      calls are pipelined on one connection (Varlink messages
                                      are NUL-terminated JSON). Prints how many started and how
                                      long it took; exit status 1 when a call failed
  expired SOCKET                      prints the number of expired trials (GetStatus)
"""

import json
import socket
import sys
import threading
import time

START = "io.trialwatch.Trials.StartTrial"


def connect(path):
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(120)
    client.connect(path)
    return client


def replies(client):
    """Yields each reply (a dict) as it arrives."""
    buffer = b""
    while True:
        chunk = client.recv(1 << 20)
        if not chunk:
            return
        buffer += chunk
        *messages, buffer = buffer.split(b"\0")
        for message in messages:
            yield json.loads(message)


def call(path, method, parameters=None):
    with connect(path) as client:
        message = {"method": method}
        if parameters is not None:
            message["parameters"] = parameters
        client.sendall(json.dumps(message).encode() + b"\0")
        reply = next(replies(client))
    if "error" in reply:
        raise SystemExit(f"{method}: {reply['error']} {reply.get('parameters')}")
    return reply.get("parameters", {})


def start(path, prefix, count, ends_at):
    began = time.monotonic()
    with connect(path) as client:
        def send():
            batch = []
            for index in range(count):
                parameters = {"subject": f"{prefix}-{index}", "endsAt": ends_at, "reminders": []}
                batch.append(json.dumps({"method": START, "parameters": parameters}).encode() + b"\0")
                if len(batch) == 256 or index == count - 1:
                    client.sendall(b"".join(batch))
                    batch = []

        writer = threading.Thread(target=send, daemon=True)
        writer.start()
        started, errors = 0, {}
        for reply in replies(client):
            if "error" in reply:
                errors[reply["error"]] = errors.get(reply["error"], 0) + 1
            else:
                started += 1
            if started + sum(errors.values()) == count:
                break
        writer.join()
    took = time.monotonic() - began
    print(f"{started} started in {took:.1f} s ({started / max(took, 1e-6):.0f}/s)")
    for error, n in sorted(errors.items()):
        print(f"{n} failed: {error}")
    return 0 if started == count else 1


def main(argv):
    if len(argv) == 6 and argv[1] == "start":
        return start(argv[2], argv[3], int(argv[4]), argv[5])
    if len(argv) == 3 and argv[1] == "expired":
        print(call(argv[2], "io.trialwatch.Trials.GetStatus")["trials"]["expired"])
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
