// swift-tools-version:6.1
import PackageDescription

let package = Package(
  name: "trialwatch",
  platforms: [.macOS(.v13)],
  products: [
    .library(name: "TrialCore", targets: ["TrialCore"]),
    .library(name: "TrialTesting", targets: ["TrialTesting"]),
    .library(name: "TrialControl", targets: ["TrialControl"]),
    .executable(name: "trialwatchctl", targets: ["trialwatchctl"]),
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
    .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
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
    // The Varlink wire format, the io.trialwatch.Trials interface and a blocking client,
    // shared by the daemon and trialwatchctl.
    .target(
      name: "TrialControl",
      dependencies: ["TrialCore"],
      exclude: ["io.trialwatch.Trials.varlink", "io.trialwatch.varlink", "org.varlink.service.varlink"]
    ),
    // The daemon's wiring: scheduler engine, control server, signals, config.
    .target(
      name: "TrialDaemon",
      dependencies: [
        "TrialCore", "TrialControl",
        .product(name: "Logging", package: "swift-log"),
      ]
    ),
    // Doubles for the daemon's seams: an in-memory backend for the control server.
    .target(
      name: "TrialDaemonTesting",
      dependencies: ["TrialCore", "TrialTesting", "TrialControl", "TrialDaemon"]
    ),
    // trialwatchctl's commands and presenter.
    .target(
      name: "TrialCtl",
      dependencies: [
        "TrialCore", "TrialControl",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ]
    ),
    .executableTarget(name: "trialwatchctl", dependencies: ["TrialCtl"]),
    .executableTarget(
      name: "trialwatch-bench",
      dependencies: ["TrialCore", "TrialControl", "TrialDaemon", "TrialDaemonTesting"]
    ),
    .testTarget(
      name: "TrialCoreTests",
      dependencies: [
        "TrialCore", "TrialTesting",
        .product(name: "PropertyBased", package: "swift-property-based"),
      ]
    ),
    .testTarget(name: "TrialTestingTests", dependencies: ["TrialCore", "TrialTesting"]),
    .testTarget(name: "TrialControlTests", dependencies: ["TrialCore", "TrialControl"]),
    .testTarget(
      name: "TrialDaemonTests",
      dependencies: [
        "TrialCore", "TrialTesting", "TrialControl", "TrialDaemon", "TrialDaemonTesting",
        .product(name: "Logging", package: "swift-log"),
      ]
    ),
    .testTarget(
      name: "TrialCtlTests",
      dependencies: [
        "TrialCore", "TrialTesting", "TrialControl", "TrialCtl", "TrialDaemon", "TrialDaemonTesting",
        .product(name: "Logging", package: "swift-log"),
      ]
    ),
  ]
)
