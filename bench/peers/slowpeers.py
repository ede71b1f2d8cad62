# The two peers whose timers are processes started by a system service: at jobs (a private
# atd) and systemd transient timers (PID 1 of the end-to-end test's container). Their
# actions are /bin/bash started for each event, appending `ID $EPOCHREALTIME` to the action
# file (act.sh). Timers are made by one bash loop, one `at` or `systemd-run` after the other.
import datetime
import grp
import os
import pwd
import subprocess
import time

from common import BenchError, disk_bytes, done, note, on_cleanup, run, stop_process
from servers import HERE, Peer, wait_for

ACT = """#!/bin/bash
# One action of the at and systemd peers: the event's id and the wall clock, appended.
echo "$1 $EPOCHREALTIME" >> {actions}
"""


def write_act(path, actions):
    with open(path, "w") as file:
        file.write(ACT.format(actions=actions))
    os.chmod(path, 0o755)


class At(Peer):
    """Debian's atd run as `atd -f` in a mount namespace of its own, where its spool
    (/var/spool/cron/atjobs, atspool) and /run (its pid file) are private folders: the
    system's atd, if any, is untouched. at has minute resolution: a job is submitted for
    the minute at or after its due time, never before."""

    def __init__(self, name, directory):
        super().__init__(name, directory)
        self.jobs = os.path.join(directory, "atjobs")
        self.spool = os.path.join(directory, "atspool")
        self.act = os.path.join(directory, "act.sh")
        self.process = None

    @staticmethod
    def align(due_ns):
        minute = 60 * 10**9
        return -(-due_ns // minute) * minute

    def start(self):
        if not os.path.exists("/usr/sbin/atd") or not os.path.exists("/usr/bin/at"):
            raise BenchError("at is not installed (make deps installs it)")
        uid, gid = pwd.getpwnam("daemon").pw_uid, grp.getgrnam("daemon").gr_gid
        for folder in (self.jobs, self.spool):
            os.makedirs(folder, exist_ok=True)
            os.chown(folder, uid, gid)
            os.chmod(folder, 0o1770)
        sequence = os.path.join(self.jobs, ".SEQ")  # at's job counter, made by the package
        if not os.path.exists(sequence):
            open(sequence, "w").close()
            os.chown(sequence, uid, gid)
            os.chmod(sequence, 0o600)
        write_act(self.act, self.actions)
        script = (
            f"mount --bind {self.jobs} /var/spool/cron/atjobs && mount --bind {self.spool} /var/spool/cron/atspool"
            " && mount -t tmpfs tmpfs /run && exec /usr/sbin/atd -f"
        )
        log = open(os.path.join(self.directory, "atd.log"), "a")
        self.process = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "bash", "-c", script],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        self.cleanup = on_cleanup(lambda: stop_process(self.process))
        wait_for(self.running, 30, "atd did not start")

    def running(self):
        if self.process.poll() is not None:
            raise BenchError(f"atd exited with {self.process.returncode} (see atd.log)")
        try:
            with open(f"/proc/{self.process.pid}/comm") as comm:
                if comm.read().strip() != "atd":
                    return False
            return os.path.exists(f"/proc/{self.process.pid}/root/run/atd.pid") and self.inside(["test", "-s", "/run/atd.pid"])
        except OSError:
            return False

    def inside(self, args, what=None):
        command = ["nsenter", "--target", str(self.process.pid), "--mount", "--",
                   "env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "TZ=UTC", "HOME=/root", "LANG=C.UTF-8",
                   "SHELL=/bin/sh", *args]
        if what is None:
            return subprocess.run(command, capture_output=True).returncode == 0
        return run(command, what, timeout=7200)

    def stop(self):
        done(self.cleanup)

    def pids(self):
        return [self.process.pid]

    def store_paths(self):
        return [self.jobs, self.spool]

    def schedule_each(self, events, lane=""):
        lines = os.path.join(self.directory, f"schedule{lane}")
        with open(lines, "w") as file:
            for key, due in events:
                stamp = datetime.datetime.fromtimestamp(self.align(due) / 1e9, datetime.timezone.utc)
                file.write(f"{key} {stamp.strftime('%Y%m%d%H%M')}\n")
        loop = (f'while read -r id stamp; do echo "{self.act} $id" | at -t "$stamp" 2> /dev/null'
                f' || {{ echo "at failed for $id" >&2; exit 1; }}; done < {lines}')
        self.inside(["bash", "-c", loop], "submitting at jobs")

    schedule_bulk = schedule_each

    def clear(self):
        self.stop()
        for folder in (self.jobs, self.spool):
            for name in os.listdir(folder):
                if name != ".SEQ":
                    os.remove(os.path.join(folder, name))
        self.start()


class Systemd(Peer):
    """A transient timer per event in a booted systemd (the container of `make e2e`):
    `systemd-run --on-calendar='<due, microseconds> UTC' --timer-property=AccuracySec=1us`,
    its service running act.sh. Transient units live in /run: not durable across a reboot."""

    def __init__(self, name, directory, repo):
        super().__init__(name, directory)
        self.repo = repo
        self.info = os.path.join(directory, "container")
        self.holder = None
        self.skip_reason = None

    def start(self):
        """Boots the container; sets skip_reason instead when it cannot be booted."""
        log = open(os.path.join(self.directory, "container.log"), "a")
        self.holder = subprocess.Popen(
            ["bash", os.path.join(HERE, "systemd.sh"), os.path.join(self.directory, "e2e"), self.info],
            stdout=log, stderr=log, stdin=subprocess.PIPE, cwd=self.repo)
        self.cleanup = on_cleanup(self.halt)
        deadline = time.monotonic() + 900
        while not os.path.exists(self.info):
            if self.holder.poll() is not None:
                with open(os.path.join(self.directory, "container.log")) as text:
                    lines = text.read().splitlines()
                reasons = [l for l in lines if l.startswith(("SKIP:", "FAIL:"))]
                self.skip_reason = (reasons[-1].split(": ", 2)[-1] if reasons else
                                    f"the container script exited with {self.holder.returncode}")
                done(self.cleanup)
                return
            if time.monotonic() > deadline:
                raise BenchError("the container did not boot within 900 s")
            time.sleep(0.5)
        with open(self.info) as info:
            self.cpid = int(info.read().split()[0])
        self.root = f"/proc/{self.cpid}/root"
        write_act(self.root + "/var/tmp/act.sh", "/var/tmp/actions")
        self.actions = self.root + "/var/tmp/actions"
        version = self.inside(["systemctl", "--version"], "systemctl --version").split()[1]
        note(f"systemd {version} booted in the container")

    def halt(self):
        if self.holder.poll() is None:
            try:
                self.holder.stdin.close()
                self.holder.wait(120)
            except subprocess.TimeoutExpired:
                stop_process(self.holder)

    def stop(self):
        done(self.cleanup)

    def inside(self, args, what, timeout=7200):
        return run(["nsenter", "--target", str(self.cpid), "--all", "env", "-i",
                    "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", *args], what, timeout=timeout)

    def pids(self):
        return [self.cpid]

    def store_paths(self):
        return [self.root + "/run/systemd/transient"]

    def schedule_each(self, events, lane=""):
        script_path = f"/var/tmp/schedule{lane}.sh"
        with open(self.root + script_path, "w") as script:
            script.write("set -e\n")
            for key, due in events:
                stamp = datetime.datetime.fromtimestamp(due / 1e9, datetime.timezone.utc)
                script.write(f"systemd-run --quiet --unit=tw-{key} --on-calendar='"
                             f"{stamp.strftime('%Y-%m-%d %H:%M:%S.%f')} UTC' "
                             f"--timer-property=AccuracySec=1us /var/tmp/act.sh {key}\n")
        self.inside(["bash", script_path], "systemd-run")

    schedule_bulk = schedule_each

    def clear(self):
        self.inside(["systemctl", "stop", "tw-*.timer"], "systemctl stop")
        self.inside(["systemctl", "reset-failed"], "systemctl reset-failed")
