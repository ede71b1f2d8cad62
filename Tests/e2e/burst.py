#!/usr/bin/env python3
"""A fast Varlink client of trialwatch's control socket, for the end-to-end test's burst.

  start SOCKET PREFIX COUNT ENDS_AT   starts COUNT trials, subjects PREFIX-0 to PREFIX-<COUNT-1>,
                                      all ending at ENDS_AT (RFC 3339), without reminders; the
                                      calls are pipelined on one connection (Varlink messages
                                      are NUL-terminated JSON). Prints how many started and how
                                      long it took; exit status 1 when a call failed
  start SOCKET PREFIX COUNT auto      the same, ending at a moment this machine leaves time for:
                                      it first starts and cancels PROBE trials (PREFIX-probe-N) to
                                      measure its rate, then picks a common end that leaves three
                                      times the time the COUNT starts should take, plus 10 s. The
                                      first line printed is `ends <epoch seconds> <RFC 3339>`
  expired SOCKET                      prints the number of expired trials (GetStatus)
"""

import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "peers"))
from common import frames  # noqa: E402

START = "io.trialwatch.Trials.StartTrial"
END = "io.trialwatch.Trials.EndTrial"
PROBE = 1000


def connect(path):
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(120)
    client.connect(path)
    return client


def replies(client):
    """Yields each reply (a dict) as it arrives."""
    for messages in frames(client, 1 << 20):
        yield from messages


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


def pipeline(path, messages):
    """Sends every message on one connection, pipelined; returns the replies, in order."""
    with connect(path) as client:
        def send():
            for first in range(0, len(messages), 256):
                client.sendall(b"".join(json.dumps(m).encode() + b"\0" for m in messages[first:first + 256]))

        writer = threading.Thread(target=send, daemon=True)
        writer.start()
        answers = []
        for reply in replies(client):
            answers.append(reply)
            if len(answers) == len(messages):
                break
        writer.join()
    return answers


def rfc3339(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def pick_end(path, prefix, count):
    """A common end this machine leaves time for: PROBE starts (then cancelled) give the rate."""
    began = time.monotonic()
    probes = [{"method": START, "parameters": {"subject": f"{prefix}-probe-{n}", "endsAt": rfc3339(time.time() + 86400),
                                                "reminders": []}} for n in range(PROBE)]
    answers = pipeline(path, probes)
    took = max(time.monotonic() - began, 1e-3)
    ids = [a["parameters"]["trial"]["id"] for a in answers if "error" not in a]
    if len(ids) != PROBE:
        raise SystemExit(f"probe: {PROBE - len(ids)} of {PROBE} starts failed: {answers[0]}")
    pipeline(path, [{"method": END, "parameters": {"id": i, "outcome": "cancelled"}} for i in ids])
    return int(time.time() + 10 + 3 * count * took / PROBE) + 1


def start(path, prefix, count, ends_at):
    if ends_at == "auto":
        end = pick_end(path, prefix, count)
        ends_at = rfc3339(end)
        print(f"ends {end} {ends_at}", flush=True)
    began = time.monotonic()
    messages = [{"method": START, "parameters": {"subject": f"{prefix}-{index}", "endsAt": ends_at, "reminders": []}}
                for index in range(count)]
    started, errors = 0, {}
    for reply in pipeline(path, messages):
        if "error" in reply:
            errors[reply["error"]] = errors.get(reply["error"], 0) + 1
        else:
            started += 1
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
