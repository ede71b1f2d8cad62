import Foundation
import Testing
import TrialFuzzTargets

/// `make test`'s part of the fuzzing (docs/fuzzing.md): every committed input of
/// every fuzz target, the seed corpora and the regressions (the inputs that once crashed a
/// target), run through the target's checks without a sanitizer build. Serialized: the targets
/// run one input at a time, as libFuzzer runs them.
@Suite(.serialized) struct FuzzReplayTests {
  static let fuzzTesting = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("FuzzTesting")

  /// The files of `folder` (`Corpora` or `Regressions`) of `target`, by name.
  static func inputs(_ folder: String, of target: String) throws -> [URL] {
    let directory = fuzzTesting.appendingPathComponent(folder).appendingPathComponent(target)
    guard FileManager.default.fileExists(atPath: directory.path) else { return [] }
    return try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
      .filter { !$0.lastPathComponent.hasPrefix(".") }.sorted { $0.lastPathComponent < $1.lastPathComponent }
  }

  static func replay(_ folder: String, of name: String) throws -> Int {
    let target = try #require(FuzzTargets.named(name))
    let files = try inputs(folder, of: name)
    for file in files {
      let bytes = try Data(contentsOf: file)
      do {
        try bytes.withUnsafeBytes { try target.run($0) }
      } catch {
        Issue.record("\(folder)/\(name)/\(file.lastPathComponent): \(error)")
      }
    }
    return files.count
  }

  @Test(arguments: FuzzTargets.all.map(\.name))
  func corpus_OfEachTarget_PassesItsChecks(_ target: String) throws {
    #expect(try Self.replay("Corpora", of: target) > 0, "no seed inputs for \(target)")
  }

  @Test(arguments: FuzzTargets.all.map(\.name))
  func regressions_OfEachTarget_PassTheirChecks(_ target: String) throws {
    _ = try Self.replay("Regressions", of: target)
  }

  /// The committed seeds are those `FuzzSeeds` makes; `TRIALWATCH_FUZZ_WRITE_SEEDS=1` writes them.
  @Test(arguments: FuzzTargets.all.map(\.name))
  func seeds_OfEachTarget_AreCommitted(_ target: String) throws {
    let directory = Self.fuzzTesting.appendingPathComponent("Corpora").appendingPathComponent(target)
    let seeds = FuzzSeeds.seeds(of: target)
    #expect(!seeds.isEmpty)
    if ProcessInfo.processInfo.environment["TRIALWATCH_FUZZ_WRITE_SEEDS"] == "1" {
      try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
      for (name, bytes) in seeds { try Data(bytes).write(to: directory.appendingPathComponent(name)) }
    }
    let committed = try Self.inputs("Corpora", of: target).filter { $0.lastPathComponent.hasPrefix("seed-") }
    #expect(Set(committed.map(\.lastPathComponent)) == Set(seeds.keys))
    for file in committed {
      #expect(
        try Data(contentsOf: file) == Data(seeds[file.lastPathComponent] ?? []),
        "\(target)/\(file.lastPathComponent) differs from FuzzSeeds: TRIALWATCH_FUZZ_WRITE_SEEDS=1 writes it again"
      )
    }
  }
}
