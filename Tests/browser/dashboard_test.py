#!/usr/bin/env python3
"""The dashboard of trialwatch-http in a real browser (`make browser-test`): Debian's chromium,
headless, driven by Selenium through Debian's chromedriver, against a trialwatchd holding 1,000
trials of three plans started over the last 12 weeks (trials.py), behind the gateway with a read
token and a change token.

    dashboard_test.py --daemon .build/debug/trialwatchd --scratch DIR [--artifacts DIR]
        [--docs-image FILE] [--seed N] [--trials N]

It checks that the login refuses a wrong token (401, the error shown, no cookie) and takes the
read token back to the page asked for; that every page (login, overview, plans, cohorts, search,
a trial) loads with no console error and no request failing, under a Content-Security-Policy
that allows no script; that the overview's counts are the daemon's (what falls due, the trials
as drawn, and GetOutlook's when daemon-status has them), the cohort chart's bars,
table and CSV those of `trialwatchctl stats --json` for the same plan, weeks and range, the trial
page's events those of `trialwatchctl plan --json`; that a search by label finds the trial; and
that the trial's change forms are enabled for the change token only, and that its extend form,
posted by the browser, moves the trial's end. A screenshot of each page
goes to ARTIFACTS (`--docs-image` also writes the cohorts page's there, for the docs).

One line per check, `PASS name: detail` or `FAIL name: detail`, then `N passed, N failed`; the
status is 1 when a check failed, 2 when the test itself could not run.
"""
import argparse
import http.client
import os
import random
import secrets
import shutil
import sys
import time
import urllib.error
import urllib.parse

from selenium.common.exceptions import WebDriverException
from selenium.webdriver.support.ui import Select

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from services import ROOT, START_TIMEOUT, Daemon, note, start_gateway  # noqa: E402  (puts bench/peers on the path)
from common import BenchError, Report, run_main  # noqa: E402
import browser  # noqa: E402
import cohorts  # noqa: E402
import trials  # noqa: E402

STATES = ("active", "paused", "grace", "expired", "converted", "cancelled")  # as the overview shows them
WINDOWS = {"24h": trials.DAY, "7d": 7 * trials.DAY}  # the overview's spans of what falls due


def step(report, name, action, *args):
    """Runs the checks of one step; a page without an element the step needs fails it."""
    try:
        action(report, *args)
    except (WebDriverException, urllib.error.URLError, KeyError, IndexError, StopIteration) as error:
        report.check(name, False, f"stopped: {type(error).__name__}: {getattr(error, 'msg', None) or error}")


def scripts_forbidden(policy):
    """Whether a Content-Security-Policy allows no script: script-src 'none', or no script-src
    and default-src 'none'."""
    directives = {}
    for directive in policy.split(";"):
        words = directive.split()
        if words:
            directives.setdefault(words[0].lower(), words[1:])
    return directives.get("script-src", directives.get("default-src")) == ["'none'"]


def clean(report, web, load, allowed=()):
    """The page just loaded: no console error, no request failed, a policy without scripts, the
    empty icon."""
    problems = load.problems(allowed)
    policy = load.document_headers.get("content-security-policy")
    if policy is None or not scripts_forbidden(policy):
        problems.append(f"Content-Security-Policy {policy!r} allows scripts")
    icons = [link.get_dom_attribute("href") for link in web.all("link[rel=icon]")]
    if icons != ["data:,"]:
        problems.append(f"icon links {icons}, not one data:,")
    report.check(f"{load.name} loads clean", not problems,
                 f"{web.path}: {len(load.statuses)} responses, no console error" if not problems
                 else f"{web.path}: " + "; ".join(problems[:5]))


def count_of(web, selector):
    cells = web.all(selector)
    return cells[0].text.strip().replace(",", "") if len(cells) == 1 else f"{len(cells)} cells"


def check_login(report, web, tokens, next_path):
    """From a page asked for without a token to the login, a wrong token refused, the read token
    taken; back on `next_path`."""
    load = web.get("unauthenticated", next_path)
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(web.driver.current_url).query)
    report.check("no token: to the login", web.path.startswith("/login?") and query.get("next") == [next_path]
                 and load.statuses.get(web.base + next_path) == 303,
                 f"{next_path} answered {load.statuses.get(web.base + next_path)}, now on {web.path}")
    clean(report, web, load)
    form = web.one("form#login")
    fields = {(field.get_attribute("name"), field.get_attribute("type")) for field in web.all("input", within=form)}
    report.check("login form", form.get_attribute("method") == "post"
                 and form.get_dom_attribute("action") == "/login" and ("token", "password") in fields
                 and ("next", "hidden") in fields and bool(web.all("button, input[type=submit]", within=form)),
                 f"method {form.get_attribute('method')}, action {form.get_dom_attribute('action')}, "
                 f"fields {sorted(fields)}")
    web.screenshot("login")

    web.one("input[name=token]").send_keys("twh_" + secrets.token_urlsafe(32))
    load = web.submit("wrong token", web.one("form#login"))
    errors = web.all("p.error#login-error")
    report.check("wrong token refused", load.statuses.get(web.base + "/login") == 401 and len(errors) == 1
                 and errors[0].is_displayed() and web.cookie("trialwatch_token") is None,
                 f"status {load.statuses.get(web.base + '/login')}, error {[e.text for e in errors]}, "
                 f"cookie {web.cookie('trialwatch_token')}")
    clean(report, web, load, allowed=[("/login", 401)])
    web.screenshot("login-refused")

    field = web.one("form#login input[name=token]")
    field.clear()
    field.send_keys(tokens["read"])
    load = web.submit("read token", web.one("form#login"))
    cookie = web.cookie("trialwatch_token") or {}
    report.check("read token taken", web.path == next_path and cookie.get("httpOnly") is True
                 and cookie.get("sameSite") == "Strict" and cookie.get("path") == "/",
                 f"now on {web.path}, cookie {({k: v for k, v in cookie.items() if k != 'value'})}")
    clean(report, web, load)


def check_plans(report, web):
    """The plans page (shown): a row per plan, each with a link to its cohorts."""
    rows = {row.get_attribute("data-plan"): row for row in web.all("table#plans tr[data-plan]")}
    links = {name: [a.get_dom_attribute("href") for a in web.all("a", within=row)] for name, row in rows.items()}
    expected = sorted(plan.name for plan in trials.PLANS)
    report.check("plans", sorted(rows) == expected
                 and all(f"/cohorts?plan={name}" in links[name] for name in rows),
                 f"rows {sorted(rows)}, links {links}")
    web.screenshot("plans")
    load = web.click("plans to cohorts", web.one('table#plans tr[data-plan="pro"] a[href="/cohorts?plan=pro"]'))
    report.check("plans link to cohorts", web.path == "/cohorts?plan=pro", f"now on {web.path}")
    clean(report, web, load)


def check_overview(report, web, daemon):
    load = web.get("overview", "/")
    clean(report, web, load)
    daemon_status = daemon.ctl_json("daemon-status")[0]
    status = daemon_status["trials"]
    generated = {state: sum(1 for trial in daemon.trials if trial.state == state) for state in STATES}
    shown = {state: count_of(web, f'table#states tr[data-state="{state}"] td.count') for state in STATES}
    report.check("overview states", shown == {k: str(v) for k, v in status.items() if k in STATES}
                 and status == generated, f"page {shown}, daemon-status {status}")
    # Open trials whose next event falls due within 24 h and 7 d: as drawn (none near either
    # bound), and as GetOutlook counts them when daemon-status has it.
    now = time.time_ns() // 1000
    due = {within: str(sum(1 for trial in daemon.trials if trial.next_due is not None
                           and trial.next_due <= now + span)) for within, span in WINDOWS.items()}
    windows = daemon_status.get("outlook") or []
    windows = windows.get("windows", []) if isinstance(windows, dict) else windows
    outlook = {window["within"]: str(window["trials"]) for window in windows}
    shown = {within: count_of(web, f'table#due tr[data-within="{within}"] td.count') for within in due}
    report.check("overview due", shown == due and outlook in ({}, due),
                 f"page {shown}, drawn {due}, daemon-status {outlook or 'without an outlook'}")
    absent = [section for section in ("held", "consumers", "webhooks") if web.all(f"#{section}")]
    report.check("overview sections", len(web.all("svg#lateness")) == 1 and not absent,
                 f"svg#lateness {len(web.all('svg#lateness'))}, sections with nothing to show {absent or 'none'}")
    web.screenshot("overview")


def check_cohorts(report, web, daemon, first, last, docs_image):
    """The cohorts of plan pro by week from `first` to `last`, against trialwatchctl stats."""
    query = urllib.parse.urlencode({"plan": "pro", "by": "week", "from": first, "to": last})
    load = web.get("cohorts", f"/cohorts?{query}")
    clean(report, web, load)
    form = web.one("form#cohort-form")
    values = {name: [field.get_property("value") for field in web.all(f'[name="{name}"]', within=form)]
              for name in ("plan", "by", "from", "to")}
    report.check("cohorts form", (form.get_attribute("method") or "get").lower() == "get"
                 and values == {"plan": ["pro"], "by": ["week"], "from": [first], "to": [last]},
                 f"fields {values}")
    stats = daemon.ctl_json("stats", "--plan", "pro", "--by", "week", "--from", first, "--to", last)[0]
    cohorts.check_chart(report, web, stats)
    cohorts.check_table(report, web, stats)
    cohorts.check_csv(report, web, web.base, web.cookie("trialwatch_token")["value"], stats)
    shot = web.screenshot("cohorts")
    if docs_image:
        os.makedirs(os.path.dirname(os.path.abspath(docs_image)), exist_ok=True)
        shutil.copyfile(shot, docs_image)
    web.phone()
    web.screenshot("cohorts-phone")
    web.desktop()


def check_search(report, web, trial):
    """A search by the trial's label customer=c-N finds it alone; its link leads to its page."""
    load = web.get("search form", "/search")
    clean(report, web, load)
    form = web.one("form#search")
    by = web.all('[name="by"]', within=form)
    if by and by[0].tag_name == "select":
        Select(by[0]).select_by_value("label")
    else:
        next(field for field in by if field.get_attribute("value") == "label").click()
    label = f"customer={trial.labels['customer']}"
    web.one('[name="q"]', within=form).send_keys(label)
    load = web.submit("search results", form)
    clean(report, web, load)
    found = [row.get_attribute("data-trial") for row in web.all("table#results tr[data-trial]")]
    report.check("search by label", found == [trial.id] and web.path.startswith("/search?"),
                 f"{web.path}: {found}")
    web.screenshot("search")
    load = web.click("trial", web.one(f'table#results tr[data-trial="{trial.id}"] a[href="/trials/{trial.id}"]'))
    report.check("search result to the trial", web.path == f"/trials/{trial.id}", f"now on {web.path}")
    clean(report, web, load)


def check_trial(report, web, daemon, trial, scope):
    """The trial's page (shown): its facts, its events as `trialwatchctl plan` has them, change
    forms enabled for a change token only."""
    facts = web.one("dl#trial").text
    wanted = [trial.subject, trial.plan, trial.state, f"customer={trial.labels['customer']}"]
    found = all(text.lower() in facts.lower() for text in wanted)
    report.check(f"trial facts ({scope})", found,
                 f"{wanted} in {facts!r}" if found else f"{wanted} not all in {facts!r}")
    events = daemon.ctl_json("plan", trial.id, "--id")[0]["events"]
    rows = {row.get_attribute("data-event"): row for row in web.all("table#events tr[data-event]")}
    wrong = [] if list(rows) == [event["id"] for event in events] else [
        f"rows {list(rows)}, not {[event['id'] for event in events]}"]
    for event in events:
        row = rows.get(event["id"])
        if row is None:
            continue
        cells = {name: (web.all(f"td.{name}", within=row) or [None])[0] for name in ("kind", "due", "state")}
        if (None in cells.values() or event["kind"] not in cells["kind"].text.lower()
                or event["state"] not in cells["state"].text.lower()):
            wrong.append(f"{event['id']}: {[c.text if c else None for c in cells.values()]}, "
                         f"not {event['kind']}, {event['state']}")
    report.check(f"trial events ({scope})", not wrong,
                 f"{len(events)} events as trialwatchctl plan lists them" if not wrong else "; ".join(wrong[:3]))
    forms = web.all("form.change")
    buttons = [button for form in forms for button in web.all("button, input[type=submit]", within=form)]
    csrf = [field.get_attribute("value") for form in forms for field in web.all('input[name="csrf"]', within=form)]
    if scope == "read":
        ok, detail = not any(button.is_enabled() for button in buttons), f"{len(buttons)} buttons, none enabled"
    else:
        ok = bool(forms) and len(csrf) == len(forms) and all(csrf) and all(b.is_enabled() for b in buttons)
        detail = f"{len(forms)} forms with a csrf field each, {len(buttons)} buttons enabled"
    report.check(f"trial change forms ({scope})", ok, detail if ok else f"forms {len(forms)}, csrf {csrf}, "
                 f"buttons enabled {[b.is_enabled() for b in buttons]}")
    web.screenshot("trial" if scope == "read" else "trial-change")


def check_change_token(report, web, daemon, trial, tokens):
    """Logs out, then in again with the change token, asking for the trial's page."""
    logout = [form for form in web.all("form") if form.get_dom_attribute("action") == "/logout"]
    if not logout:  # POST /logout as a client would, the cookie sent
        connection = http.client.HTTPConnection("127.0.0.1", urllib.parse.urlsplit(web.base).port, timeout=60)
        connection.request("POST", "/logout", headers={
            "Cookie": f"trialwatch_token={web.cookie('trialwatch_token')['value']}", "Content-Length": "0"})
        response = connection.getresponse()
        cleared = response.getheader("Set-Cookie") or ""
        report.check("logout", cleared.startswith("trialwatch_token=;") or "Max-Age=0" in cleared,
                     f"no logout form on the trial's page; POST /logout: {response.status}, Set-Cookie {cleared!r}")
        connection.close()
        web.delete_cookies()
    else:
        load = web.submit("logout", logout[0])
        report.check("logout", web.cookie("trialwatch_token") is None, f"now on {web.path}, cookie cleared")
        clean(report, web, load)
    path = f"/trials/{trial.id}"
    web.get("trial without a token", path)
    web.one("form#login input[name=token]").send_keys(tokens["change"])
    load = web.submit("change token", web.one("form#login"))
    report.check("change token taken", web.path == path, f"now on {web.path}")
    clean(report, web, load)
    check_trial(report, web, daemon, trial, "change")


def check_extend(report, web, daemon, trial):
    """Extends the trial from its page with the change token, as a person would: the browser
    posts the form with its csrf field and its own Origin, and the trial's end moves."""
    before = daemon.ctl_json("status", trial.id, "--id")[0]["trial"]
    form = web.one("form#extend")
    field = web.one("input[name=by]", within=form)
    field.clear()
    field.send_keys("2d")
    load = web.submit("extend", form)
    report.check("extend from the page", web.path == f"/trials/{trial.id}", f"now on {web.path}")
    clean(report, web, load)
    after = daemon.ctl_json("status", trial.id, "--id")[0]["trial"]
    moved = (after["revision"] == before["revision"] + 1 and after["endsAt"] != before["endsAt"]
             and web.one("dl#trial dd.revision").text == str(after["revision"]))
    report.check("extend moved the end", moved,
                 f"revision {before['revision']} → {after['revision']}, ends {before['endsAt']} → {after['endsAt']}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--daemon", required=True, help="trialwatchd (also run as trialwatchctl, trialwatch-http)")
    parser.add_argument("--scratch", required=True, help="a folder for the state, logs and the browser's profile")
    parser.add_argument("--artifacts", default=os.path.join(ROOT, ".build", "artifacts", "browser"))
    parser.add_argument("--docs-image", help="also write the cohorts page's screenshot here")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--trials", type=int, default=1000)
    args = parser.parse_args()
    began = time.monotonic()
    scratch = os.path.abspath(args.scratch)
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    shutil.rmtree(args.artifacts, ignore_errors=True)
    os.makedirs(args.artifacts)
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    daemon = Daemon(os.path.join(scratch, "daemon"), args.daemon, seed, args.trials)
    daemon.start()
    gateway = start_gateway(scratch, args.daemon, daemon.socket)
    note(f"{args.trials} trials (seed {seed}); gateway on {gateway.base}")
    web = browser.start(scratch, gateway.base, args.artifacts, START_TIMEOUT)
    report = Report()
    # The trial looked for: a running one with events taken already.
    trial = max((t for t in daemon.trials if t.state == "active"), key=lambda t: (len(t.events), t.id), default=None)
    if trial is None:
        raise BenchError("no active trial drawn (more --trials?)")
    first, last = trials.day(daemon.now - trials.WEEKS * 7 * trials.DAY), trials.day(daemon.now)

    step(report, "login", check_login, web, gateway.secrets, "/plans")
    step(report, "plans", check_plans, web)
    step(report, "overview", check_overview, web, daemon)
    step(report, "cohorts", check_cohorts, web, daemon, first, last, args.docs_image)
    step(report, "search", check_search, web, trial)
    step(report, "trial", check_trial, web, daemon, trial, "read")
    step(report, "change token", check_change_token, web, daemon, trial, gateway.secrets)
    step(report, "extend", check_extend, web, daemon, trial)
    web.close()
    report.check("gateway stops cleanly", gateway.stop() == 0, f"exit status {gateway.process.returncode}")
    report.check("daemon stops cleanly", daemon.stop() == 0, f"exit status {daemon.server.process.returncode}")
    print(f"{report.passed} passed, {report.failed} failed ({time.monotonic() - began:.0f} s; screenshots in "
          f"{args.artifacts})", flush=True)
    return 1 if report.failed else 0


if __name__ == "__main__":
    run_main(main, "browser-test")
