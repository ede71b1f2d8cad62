import Glibc
import Synchronization
import TrialConfiguration
import TrialWebhooks

/// Who a request's secret says its client is: the token file read again whenever it changes
/// (a token added or removed takes effect at the next request), a secret compared with every
/// token's hash in constant time.
final class TokenCheck: Sendable {
  /// What a secret came to.
  enum Verdict: Equatable, Sendable {
    case token(HTTPTokenFile.Token)
    /// No token has this secret.
    case unknown
    /// The file cannot be used: why (no request is let in).
    case unusable(String)
  }

  let path: String
  let crypto: Crypto
  private let loaded = Mutex<Loaded>(Loaded())

  private struct Loaded {
    /// The file's identity when read: device, inode, size, modification time.
    var stamp: [Int] = []
    var tokens: Result<[HTTPTokenFile.Token], HTTPTokenFile.Problem> = .success([])
  }

  init(path: String, crypto: Crypto) {
    self.path = path
    self.crypto = crypto
  }

  /// The tokens as the file says now, or its problem.
  func tokens() -> Result<[HTTPTokenFile.Token], HTTPTokenFile.Problem> {
    var info = stat()
    let stamp =
      stat(path, &info) == 0
      ? [
        Int(info.st_dev), Int(info.st_ino), Int(info.st_size), info.st_mtim.tv_sec, info.st_mtim.tv_nsec,
      ] : [-1, Int(errno)]
    return loaded.withLock { loaded in
      if loaded.stamp != stamp {
        loaded.stamp = stamp
        loaded.tokens = Result { () throws(HTTPTokenFile.Problem) in try HTTPTokenFile.read(path) }
      }
      return loaded.tokens
    }
  }

  /// The token whose secret `secret` is. The work does not depend on which token matches, or
  /// whether one does: the secret is hashed once and compared with every hash.
  func verdict(_ secret: String) -> Verdict {
    let tokens: [HTTPTokenFile.Token]
    switch self.tokens() {
    case .success(let read): tokens = read
    case .failure(let problem): return .unusable(problem.description)
    }
    let hash = crypto.sha256(Array(secret.utf8))
    var found: HTTPTokenFile.Token?
    for token in tokens where crypto.equalInConstantTime(hash, token.hash) && found == nil {
      found = token
    }
    return found.map(Verdict.token) ?? .unknown
  }
}
