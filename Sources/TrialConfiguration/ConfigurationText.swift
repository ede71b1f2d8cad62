import FoundationEssentials
import Glibc

/// Reading configuration files from disk, for the main file, its drop-ins and the plan files
/// alike: what is wrong with a file is reported as a diagnostic naming it.
enum ConfigurationText {
  enum Read {
    /// The file does not exist, and need not.
    case absent
    /// Linked to /dev/null: masked, as systemd masks drop-ins and units.
    case masked
    /// Reported.
    case unreadable
    case text(String)
  }

  /// The text of `file`, which must be a regular file of UTF-8 text.
  static func read(_ file: String, required: Bool, into diagnostics: inout [ConfigurationDiagnostic]) -> Read
  {
    var info = stat()
    guard stat(file, &info) == 0 else {
      let code = errno
      if code == ENOENT && !required { return .absent }
      diagnostics.append(.init(.error, file: file, line: nil, "cannot read: \(SystemError(code: code))"))
      return .unreadable
    }
    switch info.st_mode & S_IFMT {
    case S_IFREG:
      break
    case S_IFCHR where info.st_rdev == nullDevice():
      return .masked
    case S_IFDIR:
      diagnostics.append(.init(.error, file: file, line: nil, "is a directory, not a configuration file"))
      return .unreadable
    default:
      diagnostics.append(.init(.error, file: file, line: nil, "not a regular file"))
      return .unreadable
    }
    let bytes: [UInt8]
    switch readFile(file) {
    case .success(let read):
      bytes = read
    case .failure(let error):
      diagnostics.append(.init(.error, file: file, line: nil, "cannot read: \(error)"))
      return .unreadable
    }
    guard let text = String(validating: bytes, as: UTF8.self) else {
      diagnostics.append(.init(.error, file: file, line: nil, "not valid UTF-8 text"))
      return .unreadable
    }
    return .text(text)
  }

  /// The names of the `*.conf` files of `directory` (not hidden ones), sorted by byte order;
  /// none when it does not exist. `what` names them in a diagnostic (`drop-ins`).
  static func confFiles(in directory: String, what: String, into diagnostics: inout [ConfigurationDiagnostic])
    -> [String]
  {
    var info = stat()
    guard stat(directory, &info) == 0 else {
      let code = errno
      if code != ENOENT {
        diagnostics.append(
          .init(.error, file: directory, line: nil, "cannot list \(what): \(SystemError(code: code))"))
      }
      return []
    }
    guard info.st_mode & S_IFMT == S_IFDIR else {
      diagnostics.append(.init(.error, file: directory, line: nil, "not a directory"))
      return []
    }
    switch listDirectory(directory) {
    case .success(let names):
      // By bytes, as systemd's drop-in directories: a name is a file name, not text.
      return names.filter {
        $0.utf8.suffix(5).elementsEqual(".conf".utf8) && $0.utf8.first != UInt8(ascii: ".")
      }
      .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    case .failure(let error):
      diagnostics.append(.init(.error, file: directory, line: nil, "cannot list \(what): \(error)"))
      return []
    }
  }
}

/// The device number of /dev/null.
private func nullDevice() -> dev_t {
  var info = stat()
  return stat("/dev/null", &info) == 0 ? info.st_rdev : dev_t.max
}
