#!/usr/bin/env python3
"""Drives a trialwatch control socket with the reference Python Varlink implementation.

Usage: varlink_interop.py SOCKET

Prints one JSON object per step on stdout. After the line whose step is "watching", it waits
for one event on its Watch stream: the test driving it fires one, and the script prints it
and exits. Any unexpected failure ends the script with a non-zero status.
"""
import json
import signal
import sys

import varlink

signal.alarm(30)


def say(step, **fields):
    fields["step"] = step
    print(json.dumps(fields, sort_keys=True), flush=True)


def expect_error(call, **kwargs):
    try:
        call(**kwargs)
    except varlink.VarlinkError as error:
        return {"error": error.error(), "parameters": error.parameters()}
    raise SystemExit("expected an error reply from %s(%r)" % (call.__name__, kwargs))


with varlink.Client("unix:" + sys.argv[1]) as client:
    with client.open("org.varlink.service") as service:
        say("info", info=service.GetInfo())

    # Opening the interface fetches its description and parses it with the reference parser.
    with client.open("io.trialwatch.Trials") as trials:
        started = trials.StartTrial(subject="interop-1", duration="2d", reminders=["1d"])
        say("start", trial=started["trial"])
        fetched = trials.GetTrial(id=started["trial"]["id"])
        say("get", trial=fetched["trial"])
        say("not-found", **expect_error(trials.GetTrial, id="00000000deadbeef"))
        say("already-active", **expect_error(trials.StartTrial, subject="interop-1"))
        say("invalid", **expect_error(trials.ListTrials, limit=0))
        say("list", reply=trials.ListTrials(limit=10))
        say("no-interface", **expect_error(client.open, interface_name="com.example.Missing"))

    # systemd's metrics interface: List and Describe stream with "more"; a name that is no
    # family is NoSuchMetric.
    with client.open("io.systemd.Metrics") as metrics:
        say("metrics", listed=list(metrics.List(_more=True)))
        say("families", described=list(metrics.Describe(_more=True)))
        say("no-metric", **expect_error(
            lambda **kwargs: list(metrics.List(_more=True, **kwargs)), names=["io.trialwatch.nothing"]))

    with client.open("io.trialwatch.Trials") as watcher:
        stream = watcher.Watch(_more=True)
        say("watching", first=next(stream))
        say("event", reply=next(stream))
