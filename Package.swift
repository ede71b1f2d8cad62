// swift-tools-version:6.1
import PackageDescription

let package = Package(
  name: "trialwatch",
  platforms: [.macOS(.v13)],
  products: [
    .library(name: "TrialCore", targets: ["TrialCore"]),
    .library(name: "TrialTesting", targets: ["TrialTesting"]),
    .library(name: "TrialStore", targets: ["TrialStore"]),
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
    .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
    .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
  ],
  targets: [
    // The domain and the scheduling logic: no I/O, no C, no Dispatch.
    .target(
      name: "TrialCore",
      dependencies: [.product(name: "HeapModule", package: "swift-collections")]
    ),
    // Test doubles shipped as a library: virtual time, in-memory repository, spies.
    .target(name: "TrialTesting", dependencies: ["TrialCore"]),
    // The daemon's wiring: scheduling engine, control server, configuration, signals.
    .target(
      name: "TrialDaemon",
      dependencies: ["TrialCore", "CTimerFD", .product(name: "Logging", package: "swift-log")]
    ),
    // <sys/timerfd.h>, which Glibc's module does not export: clock-step detection.
    .systemLibrary(name: "CTimerFD", path: "Sources/CTimerFD"),
    // Debian's liblmdb-dev: the key-value file store under TrialStore.
    .systemLibrary(name: "CLMDB", pkgConfig: "lmdb", providers: [.apt(["liblmdb-dev"])]),
    // The LMDB file store and the repository over it; the only importer of CLMDB.
    .target(name: "TrialStore", dependencies: ["TrialCore", "CLMDB"]),
    // Test tool: the child process the crash test kills (logic in TrialStore).
    .executableTarget(name: "trialwatch-crashtest", dependencies: ["TrialStore"]),
    .executableTarget(name: "trialwatch-bench", dependencies: ["TrialCore", "TrialStore"]),
    .testTarget(
      name: "TrialCoreTests",
      dependencies: [
        "TrialCore", "TrialTesting",
        .product(name: "PropertyBased", package: "swift-property-based"),
      ]
    ),
    .testTarget(name: "TrialTestingTests", dependencies: ["TrialCore", "TrialTesting"]),
    .testTarget(name: "TrialDaemonTests", dependencies: ["TrialDaemon", "TrialCore", "TrialTesting"]),
    .testTarget(name: "TrialStoreTests", dependencies: ["TrialStore", "TrialCore", "TrialTesting"]),
  ]
)
