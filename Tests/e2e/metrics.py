#!/usr/bin/env python3
"""The daemon's metrics for the end-to-end test's metrics step (steps/11-metrics.sh).

  varlink SOCKET          calls io.systemd.Metrics.List and Describe with "more" on the socket,
                          as systemd-report does, and checks the replies: several, each marked
                          "continues" but the last; every metric with a name (io.trialwatch.*)
                          and a value, fields as texts; every family described with a text and
                          a type (counter, gauge, string); every metric listed of a family
                          described. Prints what it found; exit status 1 with the problems
  refused SOCKET METHOD   calls METHOD (without parameters) and prints the error it is answered
                          with; exit status 1 when it is answered without one
  fetch URL               prints the body of an HTTP GET of URL (run in the container's network
                          namespace: nsenter --net)

Varlink messages are JSON, each ended by a NUL byte; a reply with "continues": true is followed
by another.
"""

import json
import socket
import sys
import urllib.request

PREFIX = "io.trialwatch."
TYPES = {"counter", "gauge", "string"}


def replies(path, method, parameters=None):
    """Every reply to one call with "more", in order, up to the one without "continues"."""
    message = {"method": method, "more": True}
    if parameters is not None:
        message["parameters"] = parameters
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(30)
        client.connect(path)
        client.sendall(json.dumps(message).encode() + b"\0")
        buffer = b""
        received = []
        while True:
            data = client.recv(1 << 16)
            if not data:
                raise SystemExit(f"{method}: the connection closed after {len(received)} replies")
            buffer += data
            *complete, buffer = buffer.split(b"\0")
            for text in complete:
                reply = json.loads(text)
                received.append(reply)
                if "error" in reply or not reply.get("continues"):
                    return received


def check_stream(method, received, problems):
    """The replies are several, every one but the last marked continues, none an error."""
    errors = [reply for reply in received if "error" in reply]
    if errors:
        problems.append(f"{method}: error {errors[0]['error']} {errors[0].get('parameters')}")
        return []
    if len(received) < 2:
        problems.append(f"{method}: {len(received)} reply, expected several")
    if not all(reply.get("continues") is True for reply in received[:-1]):
        problems.append(f"{method}: a reply before the last is not marked continues")
    if received and received[-1].get("continues"):
        problems.append(f"{method}: the last reply is marked continues")
    return [reply.get("parameters") or {} for reply in received]


def varlink(path):
    problems = []
    metrics = check_stream("List", replies(path, "io.systemd.Metrics.List"), problems)
    families = check_stream("Describe", replies(path, "io.systemd.Metrics.Describe"), problems)
    for metric in metrics:
        name, value, fields = metric.get("name"), metric.get("value"), metric.get("fields", {})
        if not isinstance(name, str) or not name.startswith(PREFIX):
            problems.append(f"List: a metric without a name {PREFIX}*: {metric}")
        if not isinstance(value, (int, float, str)) or isinstance(value, bool):
            problems.append(f"List: {name}: no value (a number or a text): {metric}")
        if not isinstance(fields, dict) or not all(isinstance(v, str) for v in fields.values()):
            problems.append(f"List: {name}: fields not texts: {metric}")
    described = {}
    for family in families:
        name = family.get("name")
        if not isinstance(name, str) or not name.startswith(PREFIX):
            problems.append(f"Describe: a family without a name {PREFIX}*: {family}")
        elif not isinstance(family.get("description"), str) or not family["description"]:
            problems.append(f"Describe: {name}: no description")
        elif family.get("type") not in TYPES:
            problems.append(f"Describe: {name}: type {family.get('type')!r}, not one of {sorted(TYPES)}")
        else:
            described[name] = family["type"]
    listed = {metric.get("name") for metric in metrics}
    undescribed = sorted(name for name in listed if isinstance(name, str) and name not in described)
    if undescribed:
        problems.append(f"List: families not described: {', '.join(undescribed)}")
    for name in (PREFIX + "build_info", PREFIX + "trials"):
        if name not in listed:
            problems.append(f"List: no {name}")
    if problems:
        print("\n".join(problems))
        return 1
    print(f"List: {len(metrics)} metrics of {len(listed)} families; Describe: {len(described)} families")
    return 0


def refused(path, method):
    received = replies(path, method)
    if "error" not in received[-1]:
        print(f"{method}: answered without an error: {received[-1]}")
        return 1
    print(received[-1]["error"])
    return 0


def fetch(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        sys.stdout.write(response.read().decode())
    return 0


def main(argv):
    try:
        if len(argv) == 3 and argv[1] == "varlink":
            return varlink(argv[2])
        if len(argv) == 4 and argv[1] == "refused":
            return refused(argv[2], argv[3])
        if len(argv) == 3 and argv[1] == "fetch":
            return fetch(argv[2])
    except (OSError, ValueError) as error:
        print(f"{argv[2]}: {error}")
        return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
