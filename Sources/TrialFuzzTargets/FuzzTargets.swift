/// The fuzz targets (docs/fuzzing.md): each feeds one input to the daemon's own
/// parsing code and checks what must hold of the outcome, beyond "no crash". libFuzzer runs
/// them from the executables of `FuzzTesting/` (a failed check is a crash there); the tests
/// replay every committed input through them (`FuzzReplayTests`).
public enum FuzzTargets {
  public struct Target: Sendable {
    /// The folder of its inputs under `FuzzTesting/Corpora/` and `FuzzTesting/Regressions/`.
    public let name: String
    public let run: @Sendable (UnsafeRawBufferPointer) throws(FuzzFailure) -> Void
  }

  /// One Varlink connection: framing, decoding and routing of its messages, the fast path beside
  /// the Codable path, with the server's checks (`ControlTarget`).
  public static let control = Target(name: "control", run: ControlTarget.run)
  /// The main configuration file, drop-ins, plan files and a consumer's file, read as
  /// `--check-config` and the consumer's unit read them (`ConfigurationTarget`).
  public static let configuration = Target(name: "configuration", run: ConfigurationTarget.run)
  /// One record of any database of the trial store or the event log, decoded and written again
  /// (`StoreRecordTarget`).
  public static let storeRecords = Target(name: "store-records", run: StoreRecordTarget.run)
  /// A small valid store with records put, changed and deleted through LMDB, then verified as
  /// `--verify-store` does and read through the repository (`StoreFileTarget`).
  public static let storeFile = Target(name: "store-file", run: StoreFileTarget.run)
  /// The text forms: RFC 3339 times, spans, cursors, ids and an export line (`TextTarget`).
  public static let text = Target(name: "text", run: TextTarget.run)

  public static let all = [control, configuration, storeRecords, storeFile, text]

  public static func named(_ name: String) -> Target? {
    all.first { $0.name == name }
  }

  /// The entry of a libFuzzer executable: runs `target` on the input, and crashes with the
  /// failure's message when a check fails.
  public static func fuzz(_ target: Target, _ data: UnsafeRawPointer?, _ count: Int) -> Int32 {
    do {
      try target.run(UnsafeRawBufferPointer(start: count > 0 ? data : nil, count: count))
    } catch {
      fatalError("\(target.name): \(error)")
    }
    return 0
  }
}

/// A property a target checks that did not hold.
public struct FuzzFailure: Error, CustomStringConvertible {
  public var message: String

  public init(_ message: String) {
    self.message = message
  }

  public var description: String { message }
}

/// Fails the target with `message` unless `condition` holds.
@inline(__always)
func require(_ condition: Bool, _ message: @autoclosure () -> String) throws(FuzzFailure) {
  if !condition { throw FuzzFailure(message()) }
}

/// The input as bytes, and as text where invalid UTF-8 is replaced (as a `String` made from
/// received bytes is).
extension UnsafeRawBufferPointer {
  var text: String { String(decoding: self, as: UTF8.self) }
}
