import ErrnoText
import FoundationEssentials
import Glibc
import TrialCore

/// A directory of the process's own for the targets that read files: under `/dev/shm` where
/// there is one (no disk in the loop), else under `TMPDIR` or `/tmp`; emptied before each input
/// and removed when the process exits.
final class Scratch: @unchecked Sendable {
  // @unchecked: libFuzzer and the replay run one input at a time.
  let path: String

  init(_ name: String) {
    var base = "/tmp"
    if access("/dev/shm", W_OK) == 0 {
      base = "/dev/shm"
    } else if let tmp = getenv("TMPDIR").map({ String(cString: $0) }), !tmp.isEmpty {
      base = tmp
    }
    var template = Array("\(base)/trialwatch-fuzz-\(name)-XXXXXX".utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
      fatalError("cannot make a scratch directory under \(base): \(errnoText(errno))")
    }
    path = String(cString: made)
    Scratch.made.append(path)
    if Scratch.made.count == 1 { atexit { Scratch.removeAll() } }
  }

  nonisolated(unsafe) private static var made: [String] = []

  private static func removeAll() {
    for path in made { remove(tree: path) }
  }

  /// Empties the directory.
  func clear() {
    for name in Scratch.entries(of: path) { Scratch.remove(tree: path + "/" + name) }
  }

  /// Writes `bytes` to `name` (relative), making its directory if need be.
  func write(_ name: String, _ bytes: some Collection<UInt8>) {
    let file = path + "/" + name
    makeFolder(of: name)
    let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { fatalError("cannot write \(file): \(errnoText(errno))") }
    defer { close(fd) }
    let all = Array(bytes)
    var written = 0
    while written < all.count {
      let count = all.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
      guard count > 0 else { fatalError("cannot write \(file): \(errnoText(errno))") }
      written += count
    }
  }

  /// Links `name` (relative) to `target`, making its directory if need be.
  func link(_ name: String, to target: String) {
    makeFolder(of: name)
    symlink(target, path + "/" + name)
  }

  /// The folder of `name` (relative, of at most two components), found by bytes: a slash
  /// followed by a combining mark is one Character with it.
  private func makeFolder(of name: String) {
    let folder = FilePaths.parent(name)
    if !folder.isEmpty { mkdir(path + "/" + folder, 0o700) }
  }

  private static func entries(of directory: String) -> [String] {
    guard let stream = opendir(directory) else { return [] }
    defer { closedir(stream) }
    var names: [String] = []
    while let entry = readdir(stream) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) {
        String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
      }
      if name != "." && name != ".." { names.append(name) }
    }
    return names
  }

  private static func remove(tree path: String) {
    var info = stat()
    guard lstat(path, &info) == 0 else { return }
    if info.st_mode & S_IFMT == S_IFDIR {
      for name in entries(of: path) { remove(tree: path + "/" + name) }
      rmdir(path)
    } else {
      unlink(path)
    }
  }
}
