# The cohorts page against `trialwatchctl stats --json` for the same plan, period and range: the
# chart's bars (`g.period` with a `rect` per part, their `data-count`s), the table's rows and
# total row, and the CSV its link gives. The page's parts are the reply's counts put together:
# pending = active + paused, abandoned = cancelled + expired.
import csv
import io
import re
import urllib.request

CSV_HEADER = ["start", "end", "started", "converted", "pending", "abandoned", "conversion_rate", "median_hours"]
NONE = ("—", "-", "")
UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1, "min": 60, "h": 3600, "d": 86400, "w": 604800}


def parts(figures):
    """The page's four counts of a period (or the total) of the reply."""
    return {"started": figures["started"], "converted": figures["converted"],
            "pending": figures["active"] + figures["paused"],
            "abandoned": figures["cancelled"] + figures["expired"]}


def span_seconds(text):
    """Seconds of a span as trialwatch writes them (`1w 3d 10h`, `0`, `<1h` as 0), or None."""
    text = text.strip()
    if text in NONE:
        return None
    if text == "0" or text.startswith("<"):
        return 0.0
    found = re.findall(r"(\d+(?:\.\d+)?)\s*(us|ms|min|s|h|d|w)\b", text)
    if not found or re.sub(r"[\d.\s]*(us|ms|min|s|h|d|w)\b", "", text).strip():
        raise ValueError(f"not a span: {text!r}")
    return sum(float(number) * UNITS[unit] for number, unit in found)


def rate_matches(text, rate):
    """The page's rate (`41.2%`, or `—` when none ended) against the reply's (a fraction)."""
    text = text.strip()
    if rate is None:
        return text in NONE
    found = re.fullmatch(r"(\d+(?:\.\d)?)\s*%", text)
    return bool(found) and abs(float(found.group(1)) - rate * 100) <= 0.05 + 1e-9


def median_matches(text, median):
    """The page's median against the reply's: the same to the hour (the page may round)."""
    try:
        shown = span_seconds(text)
    except ValueError:
        return False
    if median is None or shown is None:
        return median is None and shown is None
    return abs(shown - span_seconds(median)) < 3600


def compare_row(cells, figures):
    """Differences between a table row's cells ({class: text}) and a period of the reply."""
    wrong = []
    for name, count in parts(figures).items():
        if cells.get(name, "").strip().replace(",", "") != str(count):
            wrong.append(f"{name} {cells.get(name)!r}, not {count}")
    if not rate_matches(cells.get("rate", ""), figures.get("conversionRate")):
        wrong.append(f"rate {cells.get('rate')!r}, not {figures.get('conversionRate')}")
    if not median_matches(cells.get("median", ""), figures.get("medianTimeToConversion")):
        wrong.append(f"median {cells.get('median')!r}, not {figures.get('medianTimeToConversion')}")
    return wrong


def check_chart(report, page, stats):
    """One `g.period` per period of the reply, in order, each bar's parts its counts."""
    periods = page.all("svg#cohort-chart g.period")
    starts = [group.get_attribute("data-start") for group in periods]
    expected = [period["start"] for period in stats["periods"]]
    report.check("cohorts chart periods", starts == expected,
                 f"{len(starts)} periods from {starts[:1]}" if starts == expected
                 else f"the chart's {starts} against stats' {expected}")
    wrong = []
    for group, period in zip(periods, stats["periods"]):
        for name, count in parts(period).items():
            if name == "started":
                continue
            rects = page.all(f"rect.{name}", within=group)
            shown = [rect.get_attribute("data-count") for rect in rects]
            if shown != [str(count)]:
                wrong.append(f"{period['start']} {name}: {shown}, not {count}")
    bars = sum(parts(period)["started"] for period in stats["periods"])
    report.check("cohorts chart bars", not wrong and bool(periods),
                 f"every bar as stats says ({bars} trials)" if not wrong else "; ".join(wrong[:5]))


def table_cells(page, row):
    return {name: cell.text for name in ("started", "converted", "pending", "abandoned", "rate", "median")
            for cell in page.all(f"td.{name}", within=row)}


def check_table(report, page, stats):
    """One row per period of the reply, in order, and the total row."""
    rows = page.all("table#cohort-table tr[data-start]")
    starts = [row.get_attribute("data-start") for row in rows]
    expected = [period["start"] for period in stats["periods"]]
    wrong = [] if starts == expected else [f"rows {starts}, not {expected}"]
    for row, period in zip(rows, stats["periods"]):
        wrong += [f"{period['start']}: {problem}" for problem in compare_row(table_cells(page, row), period)]
    totals = page.all("table#cohort-table tr.total")
    if len(totals) != 1:
        wrong.append(f"{len(totals)} total rows")
    else:
        wrong += [f"total: {problem}" for problem in compare_row(table_cells(page, totals[0]), stats["total"])]
    report.check("cohorts table", not wrong,
                 f"{len(rows)} rows and the total as stats says" if not wrong else "; ".join(wrong[:5]))


def check_csv(report, page, base, token, stats):
    """The CSV of the page's link: its header, and a row per period with the reply's figures."""
    links = page.all("a#csv")
    if len(links) != 1:
        report.check("cohorts csv", False, f"{len(links)} a#csv links")
        return
    href = links[0].get_dom_attribute("href")
    request = urllib.request.Request(base + href, headers={"Cookie": f"trialwatch_token={token}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        kind, text = response.headers.get("Content-Type", ""), response.read().decode()
    rows = list(csv.reader(io.StringIO(text)))
    wrong = [] if rows[:1] == [CSV_HEADER] else [f"header {rows[:1]}"]
    by_start = {row[0]: dict(zip(CSV_HEADER, row)) for row in rows[1:] if row}
    for period in stats["periods"]:
        row = by_start.get(period["start"])
        if row is None:
            wrong.append(f"no row for {period['start']}")
            continue
        for name, count in parts(period).items():
            if row[name] != str(count):
                wrong.append(f"{period['start']} {name} {row[name]!r}, not {count}")
        if row["end"] != period["end"]:
            wrong.append(f"{period['start']} end {row['end']!r}, not {period['end']}")
        wrong += [f"{period['start']}: {problem}" for problem in csv_figures(row, period)]
    report.check("cohorts csv", not wrong and kind.startswith("text/csv"),
                 f"{href}: {len(by_start)} rows as stats says ({kind})" if not wrong else "; ".join(wrong[:5]))


def csv_figures(row, period):
    """The rate and the median of a CSV row: a fraction or a percentage, hours."""
    wrong, rate, median = [], period.get("conversionRate"), period.get("medianTimeToConversion")
    try:
        shown = float(row["conversion_rate"].rstrip("%")) if row["conversion_rate"] else None
        if (shown is None) != (rate is None) or (
                rate is not None and min(abs(shown - rate), abs(shown - rate * 100) / 100) > 0.0005):
            wrong.append(f"conversion_rate {row['conversion_rate']!r}, not {rate}")
        hours = float(row["median_hours"]) if row["median_hours"] else None
        if (hours is None) != (median is None) or (
                median is not None and abs(hours * 3600 - span_seconds(median)) >= 3600):
            wrong.append(f"median_hours {row['median_hours']!r}, not {median}")
    except ValueError as error:
        wrong.append(str(error))
    return wrong
