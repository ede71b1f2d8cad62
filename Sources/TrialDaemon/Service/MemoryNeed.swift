/// The memory the daemon needs to start on a store and run, estimated before it loads the store,
/// and the check of that estimate against its cgroup's memory limit (`MemoryMax=`): a daemon
/// whose limit is below what it needs fails its start, before it has written anything, rather
/// than crawl through its start or be killed by the kernel in the middle of a commit.
///
/// The figures, measured on the build `make release` ships with 1,000,000 active trials in an
/// LMDB store of 325 MB (docs/install.md, "Memory"):
///
/// - resident after `READY=1`: 31.2 MB (`daemon_rss_after_ready_1000k`), 18.7 MB of it
///   anonymous (the planner, the heap); an empty store: 6.1 MB (`daemon_rss_idle_empty`), and
///   the start of an empty store ran under a cgroup v1 limit of 3 MB, not under 2 MB;
/// - the peak while loading, `VmHWM`: 308 MB, nearly all of it the store file's pages mapped
///   in by the start-up scan; the peak charged to its cgroup, the page cache read cold: 361 MB;
/// - under a limit of 400 MB it was ready in 1.8 s, as without one; under 250 MB (or 60 MB),
///   not in 30 s: the scan reads the trials in id order, which is not the file's order, and
///   the kernel kept taking back the pages it read and read them again.
///
/// So the need is a base for the program and its start, the planner's part of each active
/// trial (16 bytes held far, up to 64 held in full: its next event due within two hours, or any
/// trial on a fleet node, which holds none far), and the store's pages in use, which the scan
/// reads (ended trials among them: about 230 bytes each).
public struct MemoryNeed: Equatable, Sendable {
  /// The program's pages while it runs its start, its heap, stacks and LMDB's buffers.
  public static let base = 24 * 1_000_000
  /// Per active trial: the planner's 64 bytes of a trial held in full.
  public static let perTrial = 64

  /// The active trials counted.
  public var trials: Int
  /// The bytes of the store file in use (its size less its free pages); 0 for a store in a
  /// database server.
  public var storeBytes: Int

  public init(trials: Int, storeBytes: Int = 0) {
    self.trials = trials
    self.storeBytes = storeBytes
  }

  /// The estimate, in bytes.
  public var bytes: Int { Self.base + Self.perTrial * max(trials, 0) + max(storeBytes, 0) }

  /// What `MemoryMax=` should be at least: the need, rounded up to a whole megabyte.
  public var recommendedMegabytes: Int { (bytes + 999_999) / 1_000_000 }

  /// Why a start with `limit` cannot go on; nil when the limit is enough.
  public func refusal(under limit: CgroupMemory.Limit) -> String? {
    guard limit.bytes < bytes else { return nil }
    return
      "the memory limit of its cgroup, \(Self.megabytes(limit.bytes)) (\(limit.file)), is below the "
      + "\(Self.megabytes(bytes)) it needs for \(trials) active trials (\(Self.megabytes(Self.base)), "
      + "\(Self.perTrial) bytes a trial and the \(Self.megabytes(storeBytes)) of the store it reads); "
      + "raise MemoryMax= to at least \(recommendedMegabytes)M in a drop-in (systemctl edit "
      + "trialwatch.service)"
  }

  /// Bytes as megabytes (10^6 bytes) with one decimal.
  static func megabytes(_ bytes: Int) -> String {
    let tenths = (bytes + 50_000) / 100_000
    return "\(tenths / 10).\(tenths % 10) MB"
  }
}
