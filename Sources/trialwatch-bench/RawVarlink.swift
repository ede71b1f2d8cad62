import Foundation
import TrialControl
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

/// A Varlink connection spoken raw, as any client could: calls go out as bytes encoded
/// beforehand (JSON and a NUL), replies are read up to their NUL. A reply that names an
/// error is a failure. Used by one thread at a time.
final class RawVarlinkConnection: @unchecked Sendable {
  // @unchecked: each connection is used by one thread at a time, handed over at its start.
  private let fd: Int32
  private var buffer = [UInt8](repeating: 0, count: 65_536)
  /// Replies not yet taken lie in `buffer[start..<end]`; `scanned` bytes of them have no NUL.
  private var start = 0
  private var end = 0
  private var scanned = 0

  /// Connects to the socket at `path`; a reply that takes more than `timeout` seconds fails.
  init(path: String, timeout: Double = 30) throws {
    do {
      fd = try UnixSocket.connect(to: path)
    } catch {
      throw BenchError("cannot connect to \(path): \(error)")
    }
    UnixSocket.setReceiveTimeout(fd, seconds: timeout)
  }

  deinit {
    UnixSocket.closeSocket(fd)
  }

  /// Sends one or more encoded calls.
  func send(_ bytes: [UInt8]) throws {
    try bytes.withUnsafeBytes { try UnixSocket.writeAll(fd, $0) }
  }

  /// Takes the next reply and fails if it is an error.
  func receiveReply() throws {
    let reply = try nextReply()
    if Self.isError(buffer[reply]) {
      throw BenchError("the daemon answered with an error: \(String(decoding: buffer[reply], as: UTF8.self))")
    }
  }

  /// Sends `call` and returns its reply (without the NUL); fails if the reply is an error.
  func call(_ call: [UInt8]) throws -> [UInt8] {
    try send(call)
    let reply = Array(buffer[try nextReply()])
    if Self.isError(reply[...]) {
      throw BenchError("the daemon answered with an error: \(String(decoding: reply, as: UTF8.self))")
    }
    return reply
  }

  /// Sends `call` (with `more`) and returns its replies, up to the first without
  /// `"continues":true` (trialwatchd writes it first); fails on an error reply.
  func callForReplies(_ call: [UInt8]) throws -> [[UInt8]] {
    try send(call)
    var replies: [[UInt8]] = []
    while true {
      let reply = Array(buffer[try nextReply()])
      if Self.isError(reply[...]) {
        throw BenchError("the daemon answered with an error: \(String(decoding: reply, as: UTF8.self))")
      }
      replies.append(reply)
      if !reply.starts(with: Self.continuing) { return replies }
    }
  }

  private static let continuing = Array(#"{"continues":true"#.utf8)

  /// Where the next reply lies in `buffer`, valid until the next read.
  private func nextReply() throws -> Range<Int> {
    while true {
      if let nul = buffer[(start + scanned)..<end].firstIndex(of: 0) {
        let reply = start..<nul
        start = nul + 1
        scanned = 0
        return reply
      }
      scanned = end - start
      if end == buffer.count {
        if start > 0 {
          buffer.replaceSubrange(0..<(end - start), with: buffer[start..<end])
          end -= start
          start = 0
        } else {
          buffer.append(contentsOf: repeatElement(0, count: buffer.count))
        }
      }
      let count: Int
      do {
        count = try buffer.withUnsafeMutableBytes { raw in
          try UnixSocket.read(fd, into: UnsafeMutableRawBufferPointer(rebasing: raw[end...]))
        }
      } catch {
        throw BenchError("waiting for a reply: \(error)")
      }
      guard count > 0 else { throw BenchError("the daemon closed the connection before replying") }
      end += count
    }
  }

  private static let errorKey = Array(#""error""#.utf8)

  /// Whether a reply carries an `"error"` member.
  private static func isError(_ reply: ArraySlice<UInt8>) -> Bool {
    guard reply.count >= errorKey.count else { return false }
    var index = reply.startIndex
    let last = reply.endIndex - errorKey.count
    while index <= last {
      if reply[index] == UInt8(ascii: "\""), reply[index..<(index + errorKey.count)].elementsEqual(errorKey) {
        return true
      }
      index += 1
    }
    return false
  }
}

/// Calls of io.trialwatch.Trials as the bytes a client sends (through the methods'
/// declarations and the wire coding), and what the bench reads from their replies.
enum TrialsCalls {
  private static let encoder = WireCoding.makeEncoder()

  /// `GetTrial` of the trial `id`.
  static func getTrial(id: TrialID) -> [UInt8] {
    encoder.message(
      OutgoingCall(method: Trials.getTrial.qualifiedName, parameters: GetTrialParameters(id: id)))
  }

  /// `StartTrial` of a 30-day trial for `subject`, with `labels` if any.
  static func startTrial(subject: String, labels: [String: String]? = nil) -> [UInt8] {
    encoder.message(
      OutgoingCall(
        method: Trials.startTrial.qualifiedName,
        parameters: StartTrialParameters(subject: subject, duration: .days(30), labels: labels)))
  }

  /// The id of the trial in a reply of `StartTrial` or `GetTrial`.
  static func trialID(inReply reply: [UInt8]) throws -> TrialID {
    guard let trial = try? VarlinkReply(reply).parameters(as: TrialReply.self).trial else {
      throw BenchError("no trial in the reply \(String(decoding: reply, as: UTF8.self))")
    }
    return trial.id
  }
}
