/// One variant of a plan (a `[Variant]` section of its file): a share of the plan's new
/// trials, by weight, that may take another length, reminders, grace and labels than the
/// plan's. A start of a plan with variants names one, or gets one by `TrialPlan.variant(for:)`,
/// and the trial keeps it (the attribute `variant`) with what it took from it.
public struct TrialVariant: Hashable, Sendable {
  /// Within its plan unique, as a plan's name is made (`TrialPlan.validateName`).
  public var name: String
  /// Its share of the plan's starts that name no variant: `weight` of the sum of the weights.
  public var weight: Int
  public var length: Duration?
  public var reminders: ReminderSchedule?
  public var grace: Duration?
  /// Labels its trials get, over the plan's and under the start's own.
  public var labels: TrialLabels

  /// The largest weight of one variant.
  public static let maximumWeight = 1_000_000
  /// The most variants one plan may have.
  public static let maximumCount = 64

  public init(
    name: String, weight: Int = 1, length: Duration? = nil, reminders: ReminderSchedule? = nil,
    grace: Duration? = nil, labels: TrialLabels = .none
  ) {
    self.name = name
    self.weight = weight
    self.length = length
    self.reminders = reminders
    self.grace = grace
    self.labels = labels
  }
}

extension TrialPlan {
  /// The variant a start of `subject` that names none gets: the same for the same subject key
  /// and plan, each variant in proportion to its weight. `key` is the subject under the plan's
  /// `SubjectKey=` rule. nil when the plan has no variants.
  ///
  /// The function, for an application that wants to know it beforehand: h = 64-bit FNV-1a
  /// (offset basis 0xcbf29ce484222325, prime 0x100000001b3) of the UTF-8 bytes of the plan's
  /// name, a zero byte, and the key, mixed by MurmurHash3's fmix64 (h ^= h >> 33; h ×=
  /// 0xff51afd7ed558ccd; h ^= h >> 33; h ×= 0xc4ceb9fe1a85ec53; h ^= h >> 33, products modulo
  /// 2^64); then p = (h × W) >> 64 (the high 64 bits of the 128-bit product) with W the sum of
  /// the weights; the variant is the first, in the file's order,
  /// whose running sum of weights exceeds p.
  public func variant(forKey key: String) -> TrialVariant? {
    guard !variants.isEmpty else { return nil }
    let total = variants.reduce(0) { $0 + $1.weight }
    let point = Self.variantPoint(plan: name, key: key, total: total)
    var sum = 0
    for variant in variants {
      sum += variant.weight
      if point < sum { return variant }
    }
    return variants.last
  }

  /// The point in [0, total) that `variant(forKey:)` places a key at.
  public static func variantPoint(plan: String, key: String, total: Int) -> Int {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    func add(_ byte: UInt8) {
      hash ^= UInt64(byte)
      hash = hash &* 0x0000_0100_0000_01b3
    }
    for byte in plan.utf8 { add(byte) }
    add(0)
    for byte in key.utf8 { add(byte) }
    // FNV-1a leaves its last bytes in the low bits: MurmurHash3's finalizer spreads them to
    // the high bits the reduction takes (else "user-1" and "user-2" would fall together).
    hash ^= hash >> 33
    hash = hash &* 0xff51_afd7_ed55_8ccd
    hash ^= hash >> 33
    hash = hash &* 0xc4ce_b9fe_1a85_ec53
    hash ^= hash >> 33
    return Int(hash.multipliedFullWidth(by: UInt64(total)).high)
  }

  /// The variant called `name`, if the plan has one.
  public func variant(named name: String) -> TrialVariant? {
    variants.first { $0.name == name }
  }
}
