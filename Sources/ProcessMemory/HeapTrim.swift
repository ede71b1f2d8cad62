#if canImport(Glibc)
  import Glibc
#endif

/// Hands the allocator's free memory back to the system: glibc's `malloc_trim(0)`, which
/// releases the free pages of every arena, not only the top of the main one. glibc keeps what
/// a burst of work freed (parsed messages, a large transaction's buffers) for reuse otherwise,
/// resident. The Glibc module does not export it: looked up once, at run time.
public enum HeapTrim {
  private typealias Trim = @convention(c) (Int) -> Int32
  private typealias Option = @convention(c) (Int32, Int32) -> Int32

  private static let trim: Trim? = {
    #if canImport(Glibc)
      guard let symbol = dlsym(nil, "malloc_trim") else { return nil }
      return unsafeBitCast(symbol, to: Trim.self)
    #else
      return nil
    #endif
  }()

  /// glibc's `mallopt` parameter for the most arenas (`M_ARENA_MAX` in `malloc.h`).
  private static let arenaMaximum: Int32 = -8

  /// Has every thread allocate from one arena. glibc gives threads arenas of their own as they
  /// contend (up to eight a core): each keeps the free memory of its own bursts, pages a trim
  /// can only hand back where whole pages are free. The daemon's threads are few and mostly
  /// take turns (one queue each), and each keeps a cache of small blocks of its own anyway; the
  /// sender's workers spend their time waiting for the network.
  public static func useOneArena() {
    #if canImport(Glibc)
      guard let symbol = dlsym(nil, "mallopt") else { return }
      _ = unsafeBitCast(symbol, to: Option.self)(arenaMaximum, 1)
    #endif
  }

  /// Returns the free memory of every arena to the system; nothing where there is no
  /// `malloc_trim`.
  public static func run() {
    _ = trim?(0)
  }
}
