import Foundation
import Systemd
import TestSupport
import Testing
import TrialCore
import TrialEngine
import TrialStore

@testable import TrialDaemon

/// The files shipped in the repository, found from this source file.
enum RepositoryFile {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

  static func path(_ relative: String) -> String {
    root.appendingPathComponent(relative).path
  }
}

/// `systemd/trialwatch.catalog`, one entry per message id.
@Suite struct CatalogTests {
  struct Entry {
    var id: String
    var headers: [String: String]
    var text: String
  }

  static func entries() throws -> [Entry] {
    let text = try String(contentsOfFile: RepositoryFile.path("systemd/trialwatch.catalog"), encoding: .utf8)
    var entries: [Entry] = []
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
      if line.hasPrefix("-- ") {
        entries.append(Entry(id: String(line.dropFirst(3)), headers: [:], text: ""))
      } else if !entries.isEmpty {
        // Header lines (`Name: value`) until the first blank line, then the explanation.
        let index = entries.count - 1
        if let colon = line.firstIndex(of: ":"), entries[index].text.isEmpty,
          !line[..<colon].contains(" ")
        {
          entries[index].headers[String(line[..<colon])] = line[line.index(after: colon)...]
            .trimmingCharacters(in: .whitespaces)
        } else {
          entries[index].text += line + "\n"
        }
      }
    }
    return entries
  }

  /// A sample entry of each message id, with the fields trialwatchd sends.
  static func sampleFields() throws -> [String: Set<String>] {
    let end = Date(timeIntervalSince1970: 1_795_788_000)
    let trial = Trial(
      id: TrialID(42), subject: "acme-42",
      period: TrialPeriod(startDate: end.addingTimeInterval(-432_000), endDate: end))
    let reminder = trial.event(at: 0)
    let expiry = trial.event(at: trial.reminders.offsets.count)
    let samples = [
      LedgerEntry(event: reminder, outcome: .fired, takenAt: reminder.due, isLate: false),
      LedgerEntry(event: expiry, outcome: .fired, takenAt: expiry.due, isLate: false),
      LedgerEntry(event: reminder, outcome: .fired, takenAt: reminder.due + 600, isLate: true),
      LedgerEntry(event: expiry, outcome: .fired, takenAt: expiry.due + 600, isLate: true),
      LedgerEntry(event: reminder, outcome: .skipped(.supersededByExpiry), takenAt: end, isLate: true),
    ]
    var paused = trial
    paused.state = .paused
    paused.pause = TrialPause(since: reminder.due)
    var limited = paused
    limited.pause?.until = end
    let pause = TrialEvent(
      id: EventID(trialID: trial.id, revision: 1, kind: .paused(left: .days(3))), due: reminder.due)
    let resume = TrialEvent(
      id: EventID(trialID: trial.id, revision: 1, kind: .resumed(left: .days(3))), due: end)
    var resumed = trial
    resumed.reschedule(endDate: end + 259_200)
    let pauses = [
      (LedgerEntry(event: pause, outcome: .fired, takenAt: pause.due, isLate: false), paused),
      (LedgerEntry(event: pause, outcome: .fired, takenAt: pause.due, isLate: false), limited),
      (LedgerEntry(event: resume, outcome: .fired, takenAt: resume.due, isLate: false), resumed),
      (LedgerEntry(event: resume, outcome: .fired, takenAt: resume.due + 600, isLate: true), resumed),
    ]
    // A trial cancelled at its end: its expiry carries TRIAL_OUTCOME.
    var marked = trial
    marked.cancelMark = TrialCancelMark(askedAt: reminder.due)
    let cancelled = marked.expired(byExpiryTakenAt: expiry.due)
    let ends = [
      (LedgerEntry(event: expiry, outcome: .fired, takenAt: expiry.due, isLate: false), cancelled),
      (LedgerEntry(event: expiry, outcome: .fired, takenAt: expiry.due + 600, isLate: true), cancelled),
    ]
    // A trial with a grace, at its end: the start of its grace.
    var inGrace = trial
    inGrace.grace = .days(3)
    inGrace.state = .grace
    let graceStarted = inGrace.event(at: inGrace.eventCount - 2)
    let graces = [
      (LedgerEntry(event: graceStarted, outcome: .fired, takenAt: graceStarted.due, isLate: false), inGrace)
    ]
    // An expired trial's follow-up.
    var followed = trial
    followed.followUps = try FollowUpSchedule([.days(3)])
    let followUp = followed.event(at: followed.eventCount - 1)
    let followUps = [
      (LedgerEntry(event: followUp, outcome: .fired, takenAt: followUp.due, isLate: false), followed)
    ]
    // An active trial's milestone.
    var nudged = trial
    nudged.milestones = try MilestoneSchedule([.days(1)])
    let milestone = nudged.milestoneEvents[0]
    let milestones = [
      (LedgerEntry(event: milestone, outcome: .fired, takenAt: milestone.due, isLate: false), nudged)
    ]
    var fields: [String: Set<String>] = [:]
    for (sample, trial) in samples.map({ ($0, trial) }) + pauses + ends + graces + followUps + milestones {
      let names = EventJournalEntry.fields(for: sample, attributes: trial.attributes, trial: trial).map(
        \.name)
      let id = EventJournalEntry.messageID(for: sample, outcome: trial.attributes.outcome).rawValue
      // A placeholder must be present in every entry of its id: intersect.
      fields[id] = fields[id].map { $0.intersection(names) } ?? Set(names)
    }
    fields[EventJournalEntry.MessageID.clockStep.rawValue] = Set(
      EventJournalEntry.clockStep(from: end, to: end + 60).map(\.name))
    let disabled = WebhookDuty.disabledMetadata(
      endpoint: "billing", disabled: .gone(at: end), last: .answered(status: 410, retryAfter: nil))
    fields[WebhookDuty.disabledMessageID] = Set(
      ["MESSAGE", "PRIORITY"] + disabled.keys.map { JournalField.fieldName(forKey: $0) })
    let failed = StoreFailureEntry.metadata(
      StoreError(.ioError, path: "/var/lib/trialwatch/data.mdb", problem: "an I/O error while committing"))
    fields[EventJournalEntry.MessageID.storeFailed.rawValue] = Set(
      ["MESSAGE", "PRIORITY"] + failed.keys.map { JournalField.fieldName(forKey: $0) })
    return fields
  }

  @Test func storeFailedEntry_NamesItsFault() {
    let failed = StoreFailureEntry.metadata(
      StoreError(.ioError, path: "/var/lib/trialwatch/data.mdb", problem: "an I/O error while committing"))
    #expect(failed["message-id"] == "\(EventJournalEntry.MessageID.storeFailed.rawValue)")
    #expect(failed["store-fault"] == "io-error")
    #expect(failed["store-error"]?.description.hasPrefix("/var/lib/trialwatch/data.mdb: ") == true)
  }

  @Test func webhookDisabledEntry_IsTheEnginesMessageID() {
    #expect(EventJournalEntry.MessageID.webhookDisabled.rawValue == WebhookDuty.disabledMessageID)
  }

  @Test func catalog_HasOneEntryPerMessageID() throws {
    let ids = try Self.entries().map(\.id)
    #expect(ids.count == Set(ids).count)
    #expect(Set(ids) == Set(EventJournalEntry.MessageID.allCases.map(\.rawValue)))
  }

  @Test func catalogEntry_Each_HasItsHeadersAndAnExplanation() throws {
    for entry in try Self.entries() {
      #expect(entry.headers["Subject"]?.isEmpty == false, "\(entry.id)")
      #expect(entry.headers["Defined-By"] == "trialwatch", "\(entry.id)")
      #expect(entry.headers["Support"]?.isEmpty == false, "\(entry.id)")
      #expect(entry.text.split(separator: "\n").count >= 4, "\(entry.id)")
    }
  }

  @Test func placeholders_OfEachEntry_NameFieldsItsJournalEntriesCarry() throws {
    let sent = try Self.sampleFields()
    let placeholder = /@([A-Z0-9_]+)@/
    for entry in try Self.entries() {
      let body = (entry.headers["Subject"] ?? "") + entry.text
      let used = Set(body.matches(of: placeholder).map { String($0.output.1) })
      #expect(!used.isEmpty, "\(entry.id)")
      let missing = used.subtracting(sent[entry.id] ?? [])
      #expect(missing.isEmpty, "catalog entry \(entry.id) uses fields its entries lack: \(missing.sorted())")
    }
  }

  /// journalctl itself compiles the catalog into a database under a scratch root.
  @Test func catalog_CompiledByJournalctl_IsAccepted() throws {
    guard
      let journalctl = ["/usr/bin/journalctl", "/bin/journalctl"].first(where: {
        FileManager.default.isExecutableFile(atPath: $0)
      })
    else {
      try Test.cancel("journalctl is not installed")
    }
    let scratch = try TemporaryDirectory("catalog")
    let root = scratch.url
    let catalogs = root.appendingPathComponent("usr/lib/systemd/catalog")
    try FileManager.default.createDirectory(at: catalogs, withIntermediateDirectories: true)
    try FileManager.default.copyItem(
      atPath: RepositoryFile.path("systemd/trialwatch.catalog"),
      toPath: catalogs.appendingPathComponent("trialwatch.catalog").path)

    func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
      let done = try ChildProcess.run(.path(journalctl), ["--root=\(root.path)"] + arguments)
      return (done.status.code, done.output + done.errors)
    }

    let update = try run(["--update-catalog"])
    #expect(update.status == 0, "\(update.output)")
    let list = try run(["--list-catalog"])
    #expect(list.status == 0)
    for id in EventJournalEntry.MessageID.allCases {
      #expect(list.output.contains("\(id.rawValue) trialwatch: "), "\(id) missing in \(list.output)")
    }
  }
}
