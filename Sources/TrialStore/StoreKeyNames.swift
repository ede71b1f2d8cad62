import FoundationEssentials
import TrialCore

// The names the store's messages give records: the database and the key, read.

extension StoreKeys {
  /// A readable name for any key of `database`, for error messages.
  static func describe(_ key: UnsafeRawBufferPointer, in database: String) -> String {
    switch database {
    case "trials":
      if let id = try? trialID(key) { return "trials/\(id)" }
    case "ledger", "outbox":
      if let parsed = try? ledgerKey(key) { return "\(database)/\(parsed.text)" }
    case "events":
      if let cursor = try? eventCursor(key) { return "events/\(cursor)" }
    case "cohorts":
      if let cohort = try? CohortRecords.cohort(key) {
        let day = RFC3339.format(Date(timeIntervalSince1970: Double(cohort.day) * 86_400)).prefix(10)
        return "cohorts/\(day) \"\(cohort.plan)\""
      }
    case "webhooks":
      switch try? WebhookRecords.parse(key) {
      case .endpoint(let name): return "webhooks/\"\(name)\""
      case .event(let name, let sequence): return "webhooks/\"\(name)\" \(EventCursor(sequence))"
      case nil: break
      }
    case "subjects", "meta", "main", "consumers":
      return "\(database)/\"\(String(decoding: key, as: UTF8.self))\""
    default:
      break
    }
    return "\(database)/0x" + key.map { zeroPadded($0, width: 2, radix: 16) }.joined()
  }
}
