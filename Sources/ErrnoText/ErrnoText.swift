#if canImport(Glibc)
  import Glibc
#endif

/// The text of an `errno` value, e.g. `No such file or directory`: the C library's own, through
/// `strerror_r`, which unlike `strerror` may be called from any thread; `error N` for a value it
/// has no text for. The one place the project turns an `errno` into words.
public func errnoText(_ code: Int32) -> String {
  var buffer = [CChar](repeating: 0, count: 256)
  guard strerror_r(code, &buffer, buffer.count) == 0 else { return "error \(code)" }
  return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
}
