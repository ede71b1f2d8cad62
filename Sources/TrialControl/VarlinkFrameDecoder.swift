/// Splits a byte stream into Varlink messages: each a JSON text terminated by a NUL byte.
/// Fed incrementally, in chunks of any size; keeps at most one message's worth of bytes.
public struct VarlinkFrameDecoder: Sendable {
  /// The default limit on one message: 1 MiB, without its NUL.
  public static let defaultMaximumMessageSize = 1 << 20

  public struct MessageTooLarge: Error, Hashable, Sendable, CustomStringConvertible {
    public var limit: Int
    public var description: String { "message longer than the limit of \(limit) bytes" }
  }

  public let maximumMessageSize: Int
  private var buffer: [UInt8] = []
  /// Where the next message starts in `buffer`.
  private var start = 0
  /// How far past `start` has been searched for a NUL already.
  private var scanned = 0

  public init(maximumMessageSize: Int = VarlinkFrameDecoder.defaultMaximumMessageSize) {
    precondition(maximumMessageSize > 0)
    self.maximumMessageSize = maximumMessageSize
  }

  /// Bytes received but not yet returned as a message.
  public var bufferedByteCount: Int { buffer.count - start }

  /// True when a message has begun but its NUL has not arrived: at end of input, a truncated one.
  public var hasPartialMessage: Bool { bufferedByteCount > 0 }

  public mutating func append(_ bytes: UnsafeRawBufferPointer) {
    compactIfWorthwhile()
    buffer.append(contentsOf: bytes)
  }

  public mutating func append(_ bytes: some Sequence<UInt8>) {
    compactIfWorthwhile()
    buffer.append(contentsOf: bytes)
  }

  /// The next complete message without its NUL, or nil when more bytes are needed.
  /// - Throws: `MessageTooLarge` once the pending message exceeds the limit; the decoder is
  ///   then unusable, as the stream can no longer be split reliably.
  public mutating func nextMessage() throws(MessageTooLarge) -> ArraySlice<UInt8>? {
    let available = buffer.count - start
    let searchFrom = start + scanned
    if let end = buffer[searchFrom...].firstIndex(of: 0) {
      guard end - start <= maximumMessageSize else { throw MessageTooLarge(limit: maximumMessageSize) }
      let message = buffer[start..<end]
      start = end + 1
      scanned = 0
      return message
    }
    scanned = available
    if available > maximumMessageSize { throw MessageTooLarge(limit: maximumMessageSize) }
    return nil
  }

  private mutating func compactIfWorthwhile() {
    if start == buffer.count {
      buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 16)
      start = 0
    } else if start > 4096 && start * 2 > buffer.count {
      buffer.removeSubrange(0..<start)
      start = 0
    }
  }
}
