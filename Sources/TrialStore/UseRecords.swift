import FoundationEssentials
import TrialCore

// The records that subjects had a trial granted once (database `uses`, since schema 5).
// Key: the scope as text (`all`, `plan:NAME`), a 0 byte, the subject's key.
// Value, version 1: u8 version, u64 first trial, date first started,
//   u16 subject length, subject bytes, u8 plan length, plan bytes (UTF-8).
// Version 2 (schema 9, a cooldown let the subject start again: `OnceFor=`): version 1's fields,
//   then u64 last trial, date last started. A use of one trial is written as version 1, and
//   a version-1 record reads with its first trial as its last.

enum UseRecords {
  static let version: UInt8 = 1
  static let versionWithLast: UInt8 = 2

  /// The key of a use, for `body`.
  static func withKey<R>(
    _ scope: SubjectUse.Scope, _ key: String, _ body: (UnsafeRawBufferPointer) throws -> R
  )
    rethrows -> R
  {
    var bytes = Array(scope.description.utf8)
    bytes.append(0)
    bytes += key.utf8
    return try bytes.withUnsafeBytes(body)
  }

  static func encode(_ use: SubjectUse, into writer: inout ByteWriter) throws {
    let subject = Array(use.subject.utf8)
    let plan = Array(use.plan.utf8)
    guard subject.count <= Int(UInt16.max), plan.count <= Int(UInt8.max) else {
      throw RecordProblem("the subject or plan is too long")
    }
    writer.u8(use.hasLaterStart ? versionWithLast : version)
    writer.u64(use.trial.rawValue)
    writer.date(use.firstStartedAt)
    writer.u16(UInt16(subject.count))
    writer.bytes += subject
    writer.u8(UInt8(plan.count))
    writer.bytes += plan
    if use.hasLaterStart {
      writer.u64(use.lastTrial.rawValue)
      writer.date(use.lastStartedAt)
    }
  }

  static func decode(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws -> SubjectUse {
    guard let zero = key.firstIndex(of: 0),
      let scopeText = String(validating: key[..<zero], as: UTF8.self),
      let scope = SubjectUse.Scope(scopeText),
      let subjectKey = String(validating: key[(zero + 1)...], as: UTF8.self)
    else { throw RecordProblem("the key is not a scope and a subject key") }
    var reader = ByteReader(value)
    let found = try reader.u8()
    guard found == version || found == versionWithLast else {
      throw RecordProblem("unknown record version \(found)")
    }
    let trial = TrialID(try reader.u64())
    let firstStartedAt = try reader.date()
    let subject = try text(&reader, count: Int(try reader.u16()))
    let plan = try text(&reader, count: Int(try reader.u8()))
    var last: (trial: TrialID, startedAt: Date)?
    if found == versionWithLast {
      last = (TrialID(try reader.u64()), try reader.date())
      guard let last, last.startedAt >= firstStartedAt else {
        throw RecordProblem("the last start lies before the first")
      }
    }
    try reader.expectEnd()
    return SubjectUse(
      scope: scope, key: subjectKey, subject: subject, plan: plan, firstStartedAt: firstStartedAt,
      trial: trial, lastStartedAt: last?.startedAt, lastTrial: last?.trial)
  }

  private static func text(_ reader: inout ByteReader, count: Int) throws -> String {
    guard let text = String(validating: try reader.bytes(count), as: UTF8.self) else {
      throw RecordProblem("a text field is not UTF-8")
    }
    return text
  }
}

extension StoreReadTransaction {
  func subjectUse(scope: SubjectUse.Scope, key: String) throws -> SubjectUse? {
    guard let uses = databases.uses else { return nil }
    return try UseRecords.withKey(scope, key) { recordKey in
      guard let value = try txn.get(uses, recordKey) else { return nil }
      return try decoding(recordKey, in: "uses", path: path) {
        try UseRecords.decode(key: recordKey, value: value)
      }
    }
  }

  func scanSubjectUses(after: SubjectUse.Position?, _ body: (SubjectUse) throws -> Bool) throws {
    guard let uses = databases.uses else { return }
    try txn.withCursor(uses) { cursor in
      var item: LMDBCursor.Item?
      if let after {
        let start = after.bytes
        item = try start.withUnsafeBytes { try cursor.seek($0) }
        if let (key, _) = item, key.elementsEqual(start) { item = try cursor.next() }
      } else {
        item = try cursor.first()
      }
      while let (key, value) = item {
        let use = try decoding(key, in: "uses", path: path) { try UseRecords.decode(key: key, value: value) }
        guard try body(use) else { return }
        item = try cursor.next()
      }
    }
  }
}

extension StoreWriteTransaction {
  func putSubjectUse(_ use: SubjectUse) throws {
    guard let uses = databases.uses else {
      throw StoreError(.damaged, path: path, problem: "the store has no \"uses\" database")
    }
    writer.reset()
    do {
      try UseRecords.encode(use, into: &writer)
    } catch let problem as RecordProblem {
      throw TrialError.invalid(.subject, problem.message)
    }
    try UseRecords.withKey(use.scope, use.key) { key in
      try writer.bytes.withUnsafeBytes { try txn.put(uses, key, $0) }
    }
  }

  func removeSubjectUse(scope: SubjectUse.Scope, key: String) throws -> Bool {
    guard let uses = databases.uses else { return false }
    return try UseRecords.withKey(scope, key) { try txn.delete(uses, $0) }
  }
}
