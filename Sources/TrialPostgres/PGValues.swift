// The values a connection hands out, kept apart from libpq: results copied out of libpq's
// memory, notifications, errors and the text form of array parameters.

import TrialCore

/// The outcome of one statement, copied out of libpq's result (which is freed at once).
public struct PGResult: Sendable {
  public let rows: Int
  /// The column names, in order.
  public let columns: [String]
  /// The count of rows the command touched (INSERT, UPDATE, DELETE, SELECT...); 0 when the
  /// command reports none.
  public let affectedRows: Int
  /// Row-major: row r, column c at `r * columns.count + c`.
  private let values: [String?]

  init(columns: [String], values: [String?], affectedRows: Int) {
    self.columns = columns
    self.values = values
    self.affectedRows = affectedRows
    rows = columns.isEmpty ? 0 : values.count / columns.count
  }

  /// The text of a value; nil for SQL NULL, and for a row or column the result does not
  /// have (so that `result.int64(0, 0)` reads an optional single value).
  public subscript(row: Int, column: Int) -> String? {
    guard row >= 0 && row < rows && column >= 0 && column < columns.count else { return nil }
    return values[row * columns.count + column]
  }

  /// The position of the column `name` (the first of that name, as libpq's `PQfnumber` finds
  /// an unquoted name, but matched exactly); nil when the result has none.
  public func column(named name: String) -> Int? {
    columns.firstIndex(of: name)
  }

  /// The text of a value; nil for SQL NULL.
  public func string(_ row: Int, _ column: Int) -> String? {
    self[row, column]
  }

  /// A value as a floating-point number; nil for SQL NULL or text that is not one.
  public func double(_ row: Int, _ column: Int) -> Double? {
    self[row, column].flatMap { Double($0) }
  }

  /// A value as an integer; nil for SQL NULL or text that is not one.
  public func int64(_ row: Int, _ column: Int) -> Int64? {
    self[row, column].flatMap { Int64($0) }
  }

  /// A value as an integer; nil for SQL NULL or text that is not one.
  public func int(_ row: Int, _ column: Int) -> Int? {
    self[row, column].flatMap { Int($0) }
  }

  /// A boolean as PostgreSQL prints it ("t" or "f"); nil for SQL NULL or other text.
  public func bool(_ row: Int, _ column: Int) -> Bool? {
    switch self[row, column] {
    case "t": true
    case "f": false
    default: nil
    }
  }
}

/// A notification received on a channel the connection listens on; made here only (its
/// memberwise initializer is the module's own).
public struct PGNotification: Hashable, Sendable {
  public var channel: String
  public var payload: String
  /// The server process that sent it.
  public var pid: Int32
}

/// A failure of a connection or of a statement.
public enum PGError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The connection could not be made, or was lost: libpq's message.
  case connection(String)
  /// The server refused a statement: its SQLSTATE (empty when libpq gave none), primary
  /// message and detail.
  case server(sqlState: String, message: String, detail: String?)

  /// True for a lost connection: `.connection`, a server error of class 08 (connection
  /// exception), 57P01 (admin shutdown), 57P02 (crash shutdown) or 57P03 (cannot connect now),
  /// or an error without SQLSTATE: the server gives every error one, so that one is libpq's own,
  /// "server closed the connection unexpectedly" read in the middle of a pipeline before libpq
  /// marked the connection bad (the primary stopped during a commit).
  public var isConnectionLoss: Bool {
    switch self {
    case .connection: true
    case .server(let sqlState, _, _):
      sqlState.isEmpty || sqlState.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(sqlState)
    }
  }

  /// True when a session cannot go on writing: it was lost, or its server refuses writes
  /// (25006: a standby, or a primary turned read-only to fence it in a failover). Its writer
  /// connects again: with `target_session_attrs=read-write`, libpq finds the server that takes
  /// writes among the hosts of `Connection=`.
  public var needsNewSession: Bool {
    isConnectionLoss || sqlState == "25006"
  }

  /// The SQLSTATE of a server error; nil for a connection error.
  public var sqlState: String? {
    switch self {
    case .connection: nil
    case .server(let sqlState, _, _): sqlState.isEmpty ? nil : sqlState
    }
  }

  public var description: String {
    switch self {
    case .connection(let message):
      return "could not connect: \(message)"
    case .server(let sqlState, let message, let detail):
      let state = sqlState.isEmpty ? message : "\(message) (SQLSTATE \(sqlState))"
      return detail.map { "\(state): \($0)" } ?? state
    }
  }
}

extension PGError: StoreFaultError {
  /// A lost connection is an unreachable database; 25006 (a read-only transaction: a standby,
  /// or a primary demoted in a failover) a read-only one; 53100 a full disk.
  public var storeFault: StoreFaultReason? {
    if isConnectionLoss { return .databaseUnreachable }
    switch sqlState {
    case "25006": return .databaseReadOnly
    case "53100": return .diskFull
    default: return nil
    }
  }
}

/// The text form of one-dimensional arrays, for parameters (`$1::bigint[]`) and results.
public enum PGArray {
  public static func literal(_ values: [Int64]) -> String {
    "{" + values.map(String.init).joined(separator: ",") + "}"
  }

  public static func literal(_ values: [Int]) -> String {
    "{" + values.map(String.init).joined(separator: ",") + "}"
  }

  /// Each string in double quotes, its backslashes and double quotes escaped; nil is NULL.
  public static func literal(_ values: [String?]) -> String {
    let elements = values.map { value -> String in
      guard let value else { return "NULL" }
      var quoted = "\""
      for character in value {
        if character == "\\" || character == "\"" { quoted.append("\\") }
        quoted.append(character)
      }
      return quoted + "\""
    }
    return "{" + elements.joined(separator: ",") + "}"
  }

  public static func literal(_ values: [Bool]) -> String {
    "{" + values.map { $0 ? "t" : "f" }.joined(separator: ",") + "}"
  }

  /// The integers of a one-dimensional array as PostgreSQL prints it ("{1,2}", "{}"); nil
  /// for anything else (NULL elements included).
  public static func int64s(_ text: String) -> [Int64]? {
    guard text.hasPrefix("{"), text.hasSuffix("}"), text.count >= 2 else { return nil }
    let inner = text.dropFirst().dropLast()
    if inner.isEmpty { return [] }
    var numbers: [Int64] = []
    for element in inner.split(separator: ",", omittingEmptySubsequences: false) {
      guard let number = Int64(element.trimmingSpaces) else { return nil }
      numbers.append(number)
    }
    return numbers
  }
}

extension Substring {
  fileprivate var trimmingSpaces: Substring {
    var text = self
    while text.first == " " { text.removeFirst() }
    while text.last == " " { text.removeLast() }
    return text
  }
}
