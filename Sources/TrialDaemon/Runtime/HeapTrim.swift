#if canImport(Glibc)
  import Glibc
#endif

/// Hands the allocator's free memory back to the system: glibc's `malloc_trim(0)`, which
/// releases the free pages of every arena, not only the top of the main one. glibc keeps what
/// a burst of work freed (parsed messages, a large transaction's buffers) for reuse otherwise,
/// resident. The Glibc module does not export it: looked up once, at run time.
enum HeapTrim {
  private typealias Trim = @convention(c) (Int) -> Int32

  private static let trim: Trim? = {
    #if canImport(Glibc)
      guard let symbol = dlsym(nil, "malloc_trim") else { return nil }
      return unsafeBitCast(symbol, to: Trim.self)
    #else
      return nil
    #endif
  }()

  /// Returns the free memory of every arena to the system; nothing where there is no
  /// `malloc_trim`.
  static func run() {
    _ = trim?(0)
  }
}
