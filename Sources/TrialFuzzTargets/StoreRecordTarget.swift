@_spi(Fuzzing) import TrialStore

/// One record of the store as a damaged file or one from elsewhere presents it: the first byte
/// picks the database (trials, subjects, ledger, outbox, events, consumers, uses, cohorts, meta,
/// webhooks), the second the key's length, then the key, then the value; decoded as the store
/// decodes it (`StoreRecordCoding`). What must hold:
///
/// - a record that does not decode fails with the store's `RecordProblem` (which a store reading
///   it reports as a damaged record, named), never anything else;
/// - a record that decodes is written again by the store's encoder; that key and value decode
///   to the same record, and for a record of the version this store writes they are the same
///   bytes as read (but for a lateness, a grace, a webhook attempt's duration and a Retry-After
///   wait, which are read to the microsecond, and kept so only up to 68 years: beyond, a record
///   need only decode again).
///
/// LMDB holds no empty key and none over 511 bytes: such keys are not tried.
enum StoreRecordTarget {
  static func run(_ input: UnsafeRawBufferPointer) throws(FuzzFailure) {
    guard input.count >= 2 else { return }
    let database = StoreRecordCoding.databases[Int(input[0]) % StoreRecordCoding.databases.count]
    let keyLength = Int(input[1])
    guard keyLength > 0, input.count >= 2 + keyLength else { return }
    let key = UnsafeRawBufferPointer(rebasing: input[2..<(2 + keyLength)])
    let value = UnsafeRawBufferPointer(rebasing: input[(2 + keyLength)...])
    try check(database, key: key, value: value)
  }

  static func check(_ database: String, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)
    throws(FuzzFailure)
  {
    let name = StoreRecordCoding.describe(key, in: database)
    try require(name.hasPrefix(database + "/"), "the record of \(database) is named \(name)")
    let decoded: DecodedStoreRecord
    do {
      decoded = try StoreRecordCoding.decode(database, key: key, value: value)
    } catch {
      try require(!error.message.isEmpty, "\(name): a problem without words")
      return
    }
    if decoded.current {
      try require(
        decoded.key.elementsEqual(key),
        "\(name): the key is written again as \(hex(decoded.key)), not \(hex(Array(key)))")
      try require(
        decoded.value.elementsEqual(value),
        "\(name): the value \(hex(Array(value))) is written again as \(hex(decoded.value))")
    }
    let again: DecodedStoreRecord
    do {
      again = try decoded.key.withUnsafeBytes { key in
        try decoded.value.withUnsafeBytes { try StoreRecordCoding.decode(database, key: key, value: $0) }
      }
    } catch {
      throw FuzzFailure(
        "\(name): the record written again as \(hex(decoded.value)) does not decode: \(error)")
    }
    guard decoded.stable else { return }
    try require(
      again.record == decoded.record,
      "\(name): the record written again reads as \(again.record), not \(decoded.record)")
    try require(again.value == decoded.value, "\(name): the record is written otherwise the second time")
  }

  static func hex(_ bytes: [UInt8]) -> String {
    bytes.prefix(64).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
      + (bytes.count > 64 ? "..." : "")
  }
}
