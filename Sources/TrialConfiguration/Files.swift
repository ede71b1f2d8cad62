import ErrnoText
import Glibc

/// An `errno` value as its message, e.g. "Permission denied".
public struct SystemError: Error, CustomStringConvertible {
  public var code: Int32
  public var description: String { errnoText(code) }

  public init(code: Int32) {
    self.code = code
  }
}

/// The whole content of the file at `path`.
public func readFile(_ path: String) -> Result<[UInt8], SystemError> {
  let fd = open(path, O_RDONLY | O_CLOEXEC)
  guard fd >= 0 else { return .failure(SystemError(code: errno)) }
  defer { close(fd) }
  return readToEnd(fd)
}

/// What `fd` gives until its end.
public func readToEnd(_ fd: Int32) -> Result<[UInt8], SystemError> {
  var bytes: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 65_536)
  while true {
    let count = read(fd, &chunk, chunk.count)
    if count < 0 {
      if errno == EINTR { continue }
      return .failure(SystemError(code: errno))
    }
    if count == 0 { return .success(bytes) }
    bytes.append(contentsOf: chunk[0..<count])
  }
}

/// The names in the directory at `path`, without `.` and `..`.
public func listDirectory(_ path: String) -> Result<[String], SystemError> {
  guard let directory = opendir(path) else { return .failure(SystemError(code: errno)) }
  defer { closedir(directory) }
  var names: [String] = []
  while let entry = readdir(directory) {
    let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
      String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
    }
    if name != "." && name != ".." { names.append(name) }
  }
  return .success(names)
}
