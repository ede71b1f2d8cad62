// swift-tools-version:6.1
import PackageDescription

// The libFuzzer executables of trialwatch (docs/fuzzing.md): one per target, each
// only the `LLVMFuzzerTestOneInput` entry calling its target in TrialFuzzTargets (the main
// package, by path). Built by `make fuzz` with `--sanitize=fuzzer --sanitize=address`.
// `-parse-as-library`, as swift-protobuf's FuzzTesting/ builds its targets: the executables
// have no `main` of their own, so SwiftPM's renaming of an executable's `main` (for tests)
// does not take libFuzzer's.
let targets = ["control", "configuration", "store-records", "store-file", "text"]

let package = Package(
  name: "FuzzTesting",
  platforms: [.macOS(.v15)],
  dependencies: [.package(name: "trialwatch", path: "..")],
  targets: targets.map { name in
    .executableTarget(
      name: "fuzz-\(name)",
      dependencies: [.product(name: "TrialFuzzTargets", package: "trialwatch")],
      swiftSettings: [.unsafeFlags(["-parse-as-library"])]
    )
  }
)
