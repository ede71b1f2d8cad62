// swift-tools-version:6.1
import PackageDescription

let package = Package(
  name: "trialwatch",
  platforms: [.macOS(.v13)],
  products: [
    .library(name: "TrialCore", targets: ["TrialCore"]),
    .library(name: "TrialTesting", targets: ["TrialTesting"]),
    .executable(name: "trialwatchd", targets: ["trialwatchd"]),
    .library(name: "TrialStore", targets: ["TrialStore"]),
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
    .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
    .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
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
      dependencies: [
        "TrialCore", "TrialStore", "Systemd", "CTimerFD", .product(name: "Logging", package: "swift-log"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ]
    ),
    // <sys/timerfd.h>, which Glibc's module does not export: clock-step detection.
    .systemLibrary(name: "CTimerFD", path: "Sources/CTimerFD"),
    // Debian's liblmdb-dev: the key-value file store under TrialStore.
    .systemLibrary(name: "CLMDB", pkgConfig: "lmdb", providers: [.apt(["liblmdb-dev"])]),
    // The LMDB file store and the repository over it; the only importer of CLMDB.
    .target(name: "TrialStore", dependencies: ["TrialCore", "CLMDB"]),
    // The daemon's entry point.
    .executableTarget(name: "trialwatchd", dependencies: ["TrialDaemon", "TrialStore"]),
    // Test tool: the child process the crash test kills (logic in TrialStore).
    .executableTarget(name: "trialwatch-crashtest", dependencies: ["TrialStore"]),
    .executableTarget(name: "trialwatch-bench", dependencies: ["TrialCore", "TrialStore", "TrialDaemon"]),
    .testTarget(
      name: "TrialCoreTests",
      dependencies: [
        "TrialCore", "TrialTesting",
        .product(name: "PropertyBased", package: "swift-property-based"),
      ]
    ),
    .testTarget(name: "TrialTestingTests", dependencies: ["TrialCore", "TrialTesting"]),
    // libsystemd (Debian: libsystemd-dev), imported only by the Systemd target.
    .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
    // sd_notify, watchdog, socket activation, the journal and swift-log backends.
    .target(
      name: "Systemd",
      dependencies: ["CSystemd", .product(name: "Logging", package: "swift-log")]
    ),
    .testTarget(
      name: "SystemdTests",
      dependencies: ["Systemd", .product(name: "Logging", package: "swift-log")]
    ),
    .testTarget(
      name: "TrialDaemonTests", dependencies: ["TrialDaemon", "TrialCore", "TrialTesting", "Systemd"]),
    .testTarget(name: "TrialStoreTests", dependencies: ["TrialStore", "TrialCore", "TrialTesting"]),
  ]
)
