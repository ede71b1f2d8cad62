import TrialConfiguration

/// trialwatch.conf(5): every section and key of the configuration with its value, meaning
/// and default, read off `ConfigurationDocumentation` (the schema the daemon applies).
struct ConfigurationPage {
  var documentation: ConfigurationDocumentation
  var date: String
  var source: String
  var seeAlso: [PageReference]

  func render() -> String {
    let main = ConfigurationDocumentation.mainFile
    let dropIns = ConfigurationDocumentation.dropInDirectory
    var page = ManualWriter()
    page.comment("trialwatch.conf(5), generated from the configuration schema of trialwatchd.")
    page.title("trialwatch.conf", section: 5, date: date, source: source, manual: "File Formats Manual")

    page.section("NAME")
    page.paragraph(
      words: ["trialwatch.conf,", "trialwatch.conf.d", "\\-"] + Roff.words("configuration of trialwatchd"))

    page.section("SYNOPSIS")
    page.paragraph(words: [Roff.italic(main)])
    page.paragraph(words: [Roff.italic(dropIns + "/*.conf")])

    page.section("DESCRIPTION")
    page.paragraph(
      "trialwatchd(8) reads \(main) and then every file ending in .conf in \(dropIns)/, in the order of "
        + "their names. No file is needed: without one, every default applies. The sample installed as "
        + "\(main) lists every key, commented out, with its default; prefer a drop-in with only the lines "
        + "you change over editing it.")
    page.paragraph(
      "The syntax is systemd's (see systemd.syntax(7)): `[Section]` headers, `Key=value` lines, comments "
        + "starting with `#` or `;`, and a trailing backslash continuing a line. A later assignment "
        + "overrides an earlier one; an empty one (`Key=`) restores the built-in default. A drop-in linked "
        + "to /dev/null is masked.", keys: true)
    page.paragraph(
      "Time spans use systemd's syntax (see systemd.time(7)): `5d`, `36h`, `90s`, `1d 12h`, `500ms`, "
        + "exact to the microsecond; reminder offsets are rounded to whole milliseconds.")
    page.paragraph(
      "Unknown sections and keys are warnings, and the rest still applies. Invalid values, syntax errors "
        + "and unreadable files are errors; an invalid assignment never replaces a valid value set before "
        + "it. `trialwatchd --check-config` reads the files as the daemon would and prints each problem "
        + "with its file and line; `systemctl reload trialwatch` applies them to the running daemon.")
    page.paragraph(
      "On trialwatchd's command line, --config FILE reads FILE and FILE.d/*.conf instead, and "
        + "--state-dir and --socket replace StateDirectory= and Socket=.", keys: true)

    for section in documentation.sections {
      page.section("[\(section.name)] SECTION OPTIONS")
      page.paragraph(section.summary, keys: true)
      for key in section.keys {
        page.item(Roff.bold(key.name + "=") + Roff.italic(key.valueName))
        page.paragraph(key.meaning, keys: true)
        if let description = key.defaultDescription {
          page.paragraph("Default: \(description).")
        } else {
          page.paragraph(words: ["Default:"] + Self.defaultWords(key.defaultText))
        }
      }
      page.endItems()
    }

    page.section("PLAN FILES")
    let plans = ConfigurationDocumentation.planDirectory
    page.paragraph(
      "Each file \(plans)/NAME.conf describes the plan NAME, in the same syntax, with one section:")
    page.item(Roff.bold("[\(documentation.plan.name)]"))
    page.paragraph(documentation.plan.summary, keys: true)
    page.endItems()
    for key in documentation.plan.keys {
      page.item(Roff.bold(key.name + "=") + Roff.italic(key.valueName))
      page.paragraph(key.meaning, keys: true)
      page.paragraph("Default: \(key.defaultDescription ?? key.defaultText).", keys: true)
    }
    page.endItems()
    page.paragraph("and, for each variant of the plan, a section:")
    page.item(Roff.bold("[\(documentation.variant.name)]"))
    page.paragraph(documentation.variant.summary, keys: true)
    page.endItems()
    for key in documentation.variant.keys {
      page.item(Roff.bold(key.name + "=") + Roff.italic(key.valueName))
      page.paragraph(key.meaning, keys: true)
      page.paragraph("Default: \(key.defaultDescription ?? key.defaultText).", keys: true)
    }
    page.endItems()

    page.section("WEBHOOK ENDPOINT FILES")
    let webhooks = ConfigurationDocumentation.webhookDirectory
    page.paragraph(
      "Each file \(webhooks)/NAME.conf describes the webhook endpoint NAME, in the same syntax, with one "
        + "section:")
    page.item(Roff.bold("[\(documentation.webhook.name)]"))
    page.paragraph(documentation.webhook.summary, keys: true)
    page.endItems()
    for key in documentation.webhook.keys {
      page.item(Roff.bold(key.name + "=") + Roff.italic(key.valueName))
      page.paragraph(key.meaning, keys: true)
      page.paragraph("Default: \(key.defaultDescription ?? key.defaultText).", keys: true)
    }
    page.endItems()

    page.section("EXAMPLES")
    page.paragraph("A drop-in that fires every late reminder, not only the latest of each trial:")
    page.literal(["# \(dropIns)/50-late.conf", "[CatchUp]", "LateReminders=all"], attached: true)
    page.paragraph("Check it and apply it:")
    page.literal(["trialwatchd --check-config && systemctl reload trialwatch"], attached: true)
    page.paragraph(
      "A fleet node: trials in a PostgreSQL database shared with the other nodes, the password in the "
        + ".pgpass file that trialwatch-fleet.conf passes to the service "
        + "(/usr/share/doc/trialwatch/docs/fleet.md):")
    page.literal(
      [
        "# \(dropIns)/50-fleet.conf", "[Store]", "Backend=postgresql", "[PostgreSQL]",
        "Connection=host=db.example dbname=trialwatch user=trialwatch",
      ], attached: true)
    page.paragraph("Backend= and the [PostgreSQL] keys take effect at a restart, not a reload:", keys: true)
    page.literal(["trialwatchd --check-config && systemctl restart trialwatch"], attached: true)
    page.paragraph("A plan of two weeks with a reminder a week before its end, and a label for its trials:")
    page.literal(
      [
        "# \(plans)/pro.conf", "[Plan]", "Description=Pro, two weeks", "Length=14d", "Reminders=7d, 1d",
        "Labels=tier=pro",
      ], attached: true)
    page.literal(["trialwatchd --check-config && systemctl reload trialwatch"], attached: true)
    page.paragraph(
      "A webhook endpoint that wants the reminders and expiries of the pro plan's trials, its secret in a "
        + "file of its own:")
    page.literal(
      [
        "# \(webhooks)/billing.conf", "[Webhook]", "URL=https://app.example.com/hooks/trialwatch",
        "SecretFile=\(webhooks)/billing.secret", "Events=reminder expiry", "Plans=pro",
      ], attached: true)
    page.literal(["trialwatchd --check-config && systemctl reload trialwatch"], attached: true)

    page.section("FILES")
    page.item(Roff.italic(main))
    page.paragraph("The main configuration file.")
    page.item(Roff.italic(dropIns + "/*.conf"))
    page.paragraph("Drop-ins, read after the main file in the order of their names.")
    page.item(Roff.italic(plans + "/*.conf"))
    page.paragraph(
      "Plan files, one a plan, named after it; samples in /usr/share/doc/trialwatch/examples/plans/.")
    page.item(Roff.italic(webhooks + "/*.conf"))
    page.paragraph(
      "Webhook endpoints' files, one an endpoint, named after it; a sample in "
        + "/usr/share/doc/trialwatch/examples/webhooks/.")
    page.item(Roff.italic("/usr/share/doc/trialwatch/docs/configuration.md"))
    page.paragraph("The same keys, with how to check a configuration; fleet.md for fleet mode.")
    page.endItems()

    page.section("SEE ALSO")
    page.paragraph(words: CommandPage.references(seeAlso))
    return page.page
  }

  /// A default in bold, with its final period.
  static func defaultWords(_ text: String) -> [String] {
    let words = text.split(separator: " ").map { Roff.bold($0) }
    guard let last = words.last else { return ["none."] }
    return words.dropLast() + [last + "."]
  }
}
