import CCrypto
import TrialCore

/// OpenSSL's libcrypto, opened at first use (`Crypto.shared`): HMAC-SHA256, SHA-256, the system's
/// random bytes, a comparison in constant time. The only importer of CCrypto.
public final class Crypto: @unchecked Sendable {
  // @unchecked: the table is filled once and only read; libcrypto's functions used here are
  // thread-safe (OpenSSL 3).
  private let table: UnsafePointer<TWCrypto>

  private init(table: UnsafePointer<TWCrypto>) {
    self.table = table
  }

  /// The process's one table, opened at first use: libcrypto, or why it could not be opened.
  public static func shared() throws(CryptoError) -> Crypto {
    switch opened {
    case .success(let crypto): return crypto
    case .failure(let error): throw error
    }
  }

  private static let opened: Result<Crypto, CryptoError> = {
    var error = [CChar](repeating: 0, count: 512)
    guard let table = tw_crypto_open(&error, error.count) else {
      return .failure(
        .unavailable(String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)))
    }
    return .success(Crypto(table: table))
  }()

  /// HMAC-SHA256 of `data` under `key`: 32 bytes.
  public func hmacSHA256(key: [UInt8], data: [UInt8]) -> [UInt8] {
    var mac = [UInt8](repeating: 0, count: 32)
    var length: UInt32 = 0
    let done = key.withUnsafeBytes { key in
      data.withUnsafeBufferPointer { data in
        table.pointee.HMAC(
          table.pointee.EVP_sha256(), key.baseAddress, Int32(key.count), data.baseAddress, data.count, &mac,
          &length)
      }
    }
    precondition(done != nil && length == 32, "HMAC-SHA256 gave no 32-byte MAC")
    return mac
  }

  /// SHA-256 of `data`: 32 bytes.
  public func sha256(_ data: [UInt8]) -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: 32)
    var length: UInt32 = 0
    let done = data.withUnsafeBytes {
      table.pointee.EVP_Digest($0.baseAddress, $0.count, &digest, &length, table.pointee.EVP_sha256(), nil)
    }
    precondition(done == 1 && length == 32, "SHA-256 gave no 32-byte digest")
    return digest
  }

  /// `count` bytes from the system's random source, through OpenSSL's generator.
  public func randomBytes(_ count: Int) throws(CryptoError) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    guard table.pointee.RAND_bytes(&bytes, Int32(count)) == 1 else { throw .random }
    return bytes
  }

  /// Whether `a` and `b` are equal, in a time that depends only on their lengths.
  public func equalInConstantTime(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    return a.withUnsafeBytes { a in
      b.withUnsafeBytes { b in table.pointee.CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 }
    }
  }

  /// The `webhook-signature` header of a message: one signature for each secret.
  public func signatureHeader(secrets: [WebhookSecret], id: String, timestamp: Int64, body: [UInt8]) -> String
  {
    let content = WebhookSignature.signedContent(id: id, timestamp: timestamp, body: body)
    return WebhookSignature.header(macs: secrets.map { hmacSHA256(key: $0.key, data: content) })
  }

  /// A new secret, of `WebhookSecret.newKeyBytes` random bytes.
  public func newSecret() throws(CryptoError) -> WebhookSecret {
    let key = try randomBytes(WebhookSecret.newKeyBytes)
    do {
      return try WebhookSecret(key: key)
    } catch {
      preconditionFailure("a key of \(key.count) bytes is a secret's: \(error)")
    }
  }
}

/// What went wrong with libcrypto.
public enum CryptoError: Error, Hashable, Sendable, CustomStringConvertible {
  case unavailable(String)
  case random

  public var description: String {
    switch self {
    case .unavailable(let reason): "OpenSSL's libcrypto cannot be used (Debian: libssl3): \(reason)"
    case .random: "the system's random source gave no bytes"
    }
  }
}
