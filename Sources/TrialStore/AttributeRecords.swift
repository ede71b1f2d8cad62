import TrialCore

// The attribute section of trial and event records (since record version 2, schema 4): every
// attribute of a trial but its subject, as named text (`TrialAttributes.storedFields`), so that
// an attribute added later needs no new record format. Layout:
//   u16 field count n, n × (u8 name length, name bytes, u16 value length, value bytes),
// names and values UTF-8, fields in name order, each name once.

extension ByteWriter {
  mutating func u16(_ value: UInt16) {
    withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
  }

  /// The attribute section of `attributes`. Every event a trial fires writes one: a trial
  /// with labels alone (the common case) has them written in their order, each name made as
  /// it is written, without gathering and sorting the fields first.
  mutating func attributeSection(_ attributes: TrialAttributes) throws {
    if attributes.hasOnlyLabels {
      u16(UInt16(attributes.labels.count))
      for (key, value) in attributes.labels {
        let nameBytes = TrialAttributes.labelPrefix.utf8.count + key.utf8.count
        u8(UInt8(nameBytes))
        bytes.append(contentsOf: TrialAttributes.labelPrefix.utf8)
        bytes.append(contentsOf: key.utf8)
        try field(value, of: key)
      }
      return
    }
    let fields = attributes.storedFields
    guard fields.count <= Int(UInt16.max) else { throw RecordProblem("too many attributes") }
    u16(UInt16(fields.count))
    for (name, value) in fields {
      let nameBytes = name.utf8
      guard nameBytes.count <= Int(UInt8.max) else {
        throw RecordProblem("the attribute name \(name) is too long")
      }
      u8(UInt8(nameBytes.count))
      bytes.append(contentsOf: nameBytes)
      try field(value, of: name)
    }
  }

  /// A field's value: its length, then its bytes.
  private mutating func field(_ value: String, of name: String) throws {
    let valueBytes = value.utf8
    guard valueBytes.count <= Int(UInt16.max) else {
      throw RecordProblem("the attribute \(name) is too long")
    }
    u16(UInt16(valueBytes.count))
    bytes.append(contentsOf: valueBytes)
  }
}

extension ByteReader {
  mutating func u16() throws -> UInt16 {
    let low = UInt16(try u8())
    return low | UInt16(try u8()) << 8
  }

  /// The attributes of `subject` from an attribute section.
  mutating func attributeSection(subject: String) throws -> TrialAttributes {
    let count = Int(try u16())
    if count == 0 { return TrialAttributes(subject: subject) }
    var fields: [(name: String, value: String)] = []
    fields.reserveCapacity(count)
    for _ in 0..<count {
      let nameBytes = try bytes(Int(try u8()))
      let valueBytes = try bytes(Int(try u16()))
      guard let name = String(validating: nameBytes, as: UTF8.self), !name.isEmpty else {
        throw RecordProblem("an attribute name is empty or not valid UTF-8")
      }
      guard let value = String(validating: valueBytes, as: UTF8.self) else {
        throw RecordProblem("the attribute \(name) is not valid UTF-8")
      }
      if let last = fields.last, last.name >= name {
        throw RecordProblem("the attribute \(name) is out of order or repeated")
      }
      fields.append((name, value))
    }
    do {
      // Labels alone (the common case): in their order already, checked as they are.
      let keys = fields.map { TrialAttributes.labelKey(storedName: $0.name) }
      if keys.allSatisfy({ $0 != nil }) {
        let labels = zip(keys, fields).map { (key: $0!, value: $1.value) }
        return TrialAttributes(subject: subject, labels: try TrialLabels(ascending: labels))
      }
      return try TrialAttributes(subject: subject, storedFields: fields)
    } catch {
      throw RecordProblem("invalid attributes: \(error)")
    }
  }
}
