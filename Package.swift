// swift-tools-version:6.1
import PackageDescription

// Targets point one way: executables → daemon → configuration, engine, control server → core.
// TrialCore has no I/O and no C; each C library (CLMDB, CPostgres, CSystemd, CTimerFD, CEpoll,
// CUnistring) is imported by exactly one Swift file. Each target's comment below states what it
// may import.
// The stores sit beside the daemon, not under it: TrialCore defines what a store is (the
// repository contract, `StoreServices`, `FleetServices`), TrialStore (LMDB) and TrialPostgres
// implement it, and the executable trialwatchd chooses between them (`StoreBackends`).
// TrialDaemon works against the contract; it imports a store in one file only, StoreCommands,
// for the file store's backup, verify and restore, which have no fleet counterpart.
let package = Package(
  name: "trialwatch",
  platforms: [.macOS(.v15)],
  products: [
    .library(name: "TrialCore", targets: ["TrialCore"]),
    .library(name: "TrialTesting", targets: ["TrialTesting"]),
    .library(name: "TrialStore", targets: ["TrialStore"]),
    .library(name: "TrialControl", targets: ["TrialControl"]),
    // For FuzzTesting/, the package of libFuzzer executables beside this one.
    .library(name: "TrialFuzzTargets", targets: ["TrialFuzzTargets"]),
    .executable(name: "trialwatchd", targets: ["trialwatchd"]),
    .executable(name: "trialwatchctl", targets: ["trialwatchctl"]),
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
    .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
    .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
  ],
  targets: [
    // The domain and the scheduling logic: no I/O, no C, no Dispatch.
    .target(
      name: "TrialCore",
      dependencies: [.product(name: "HeapModule", package: "swift-collections")]
    ),
    // Test doubles shipped as a library: virtual time, in-memory repository, spies.
    .target(name: "TrialTesting", dependencies: ["TrialCore"]),
    // What every test and the benchmarks share, below the project's own modules: the one
    // launcher for processes, the datagram socket, temporary directories, the seeded
    // generator. Never a dependency of trialwatchd or trialwatchctl.
    .target(name: "TestSupport", dependencies: ["ErrnoText"]),
    // The text of an errno value (`strerror_r`), for every target that reports a failed call.
    .target(name: "ErrnoText"),
    // The process's own memory: its program's and libraries' pages released once start-up is
    // over, its heap in one arena and trimmed. For trialwatchd and trialwatch-webhooks. Import
    // rule: the C library only.
    .target(name: "ProcessMemory"),

    // Debian's liblmdb-dev: the key-value file store under TrialStore.
    .systemLibrary(name: "CLMDB", pkgConfig: "lmdb", providers: [.apt(["liblmdb-dev"])]),
    // The LMDB file store and the repository over it; the only importer of CLMDB.
    .target(name: "TrialStore", dependencies: ["TrialCore", "CLMDB"]),
    // The store's crash-test workload, run by trialwatch-crashtest and replayed by the tests.
    .target(name: "TrialStoreTesting", dependencies: ["TrialCore", "TrialStore"]),

    // Debian's libpq-dev: the declarations of PostgreSQL's client library under TrialPostgres.
    // Not linked: TrialPostgres opens libpq.so.5 at its first connection (shim.h).
    .systemLibrary(name: "CPostgres", providers: [.apt(["libpq-dev"])]),
    // A small wrapper over libpq: connections, statements, notifications; the only importer
    // of CPostgres.
    .target(name: "TrialPostgres", dependencies: ["TrialCore", "CPostgres"], path: "Sources/TrialPostgres"),
    // A shared store for tests: a fresh database on the tests' private PostgreSQL.
    .target(name: "TrialPostgresTesting", dependencies: ["TestSupport", "TrialCore", "TrialPostgres"]),

    // libcurl's and OpenSSL libcrypto's declarations (Debian: libcurl4-openssl-dev, libssl-dev).
    // Not linked: the webhooks' code opens libcurl.so.4 and libcrypto.so.3 at first use (shim.h),
    // so that trialwatchd and trialwatchctl, the same program, never map them (trialwatchctl
    // webhooks secret and http token add alone open libcrypto, for their new secrets).
    .systemLibrary(name: "CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
    .systemLibrary(name: "CCrypto", providers: [.apt(["libssl-dev"])]),
    // Webhooks' input and output: HMAC-SHA256 and random secrets (the only importer of CCrypto),
    // HTTP (the only importer of CCurl).
    .target(name: "TrialWebhooks", dependencies: ["TrialCore", "CCurl", "CCrypto"]),

    // libsystemd (Debian: libsystemd-dev), imported only by the Systemd target.
    .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
    // sd_notify, watchdog, socket activation, the journal and swift-log backends.
    .target(
      name: "Systemd",
      dependencies: ["CSystemd", "ErrnoText", .product(name: "Logging", package: "swift-log")]
    ),
    // A journal for tests that records what it is sent.
    .target(name: "SystemdTesting", dependencies: ["Systemd"]),
    // <sys/timerfd.h>, which Glibc's module does not export: clock-step detection.
    .systemLibrary(name: "CTimerFD", path: "Sources/CTimerFD"),
    // <sys/epoll.h> and <sys/eventfd.h>, likewise: the control server's poller thread.
    .systemLibrary(name: "CEpoll", path: "Sources/CEpoll"),
    // libunistring's declarations (Debian: libunistring-dev): Unicode NFKC case folding of
    // subjects, for plans that grant a trial once (SubjectKey=casefold and email). Not linked:
    // TrialDaemon opens libunistring.so.2 when it first folds a subject that is not ASCII (shim.h).
    .systemLibrary(name: "CUnistring", path: "Sources/CUnistring", providers: [.apt(["libunistring-dev"])]),

    // The Varlink wire format, the io.trialwatch.Trials interface and a blocking client,
    // shared by the daemon and trialwatchctl.
    .target(
      name: "TrialControl",
      dependencies: ["TrialCore", "ErrnoText"],
      resources: [
        .embedInCode("io.trialwatch.Trials.varlink"), .embedInCode("io.trialwatch.varlink"),
        .embedInCode("org.varlink.service.varlink"), .embedInCode("io.systemd.Metrics.varlink"),
      ]
    ),
    // The scheduling engine: the planner, the one wake, the commit lane, delivery to sinks, and
    // the timer-driven duties beside them. Import rule: TrialCore, Logging and Dispatch only (no
    // store, no socket, no systemd, no configuration): it sees stores through TrialCore's
    // contract and its host through `EngineObserver` and `EventSink`.
    .target(
      name: "TrialEngine",
      dependencies: ["TrialCore", .product(name: "Logging", package: "swift-log")]
    ),
    // The Varlink server: sockets, the poller thread, connections as state machines, the router.
    // Import rule: TrialControl, CEpoll, Logging and Dispatch only: it knows routes, not trials
    // (what a method does is the daemon's handler for it), and never the engine.
    .target(
      name: "TrialControlServer",
      dependencies: ["TrialControl", "CEpoll", .product(name: "Logging", package: "swift-log")]
    ),
    // The configuration: trialwatch.conf and its drop-ins, the plan files and the webhook
    // endpoints' files read into `DaemonConfiguration` with FILE:LINE diagnostics, the schema the
    // manual documents, and the few file reads they need (Files.swift). Import rule: TrialCore,
    // ErrnoText, Systemd (`LogTarget`) and Logging (`Logger.Level`) only: no engine, no store, no
    // socket, so that the daemon, the manual and the fuzz targets read files alike.
    .target(
      name: "TrialConfiguration",
      dependencies: ["TrialCore", "ErrnoText", "Systemd", .product(name: "Logging", package: "swift-log")]
    ),
    // The daemon's wiring: the service, the journal and the runtime (signals, clock steps,
    // memory), joining the engine to the control server and to systemd under the configuration
    // TrialConfiguration reads; the store comes from the executable, through the contract of
    // TrialCore.
    .target(
      name: "TrialDaemon",
      dependencies: [
        "TrialCore", "TrialConfiguration", "TrialEngine", "TrialControlServer", "TrialStore", "TrialControl",
        "Systemd", "ProcessMemory", "CTimerFD", "CUnistring",
        .product(name: "Logging", package: "swift-log"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ]
    ),
    // Fixtures for tests of the daemon: the control server over a real engine in virtual
    // time, and trialwatchd as a process.
    .target(
      name: "TrialDaemonTesting",
      dependencies: [
        "TestSupport", "TrialCore", "TrialTesting", "TrialControl", "TrialDaemon", "TrialEngine",
        "TrialControlServer", "TrialStore", "TrialPostgresTesting",
        .product(name: "Logging", package: "swift-log"),
      ]
    ),
    // trialwatchctl's commands and presenter. FoundationEssentials only, no Foundation (and so
    // no ICU): MemberImportVisibility keeps Foundation's members out of reach through the
    // modules below, which still import it. TrialConfiguration and TrialWebhooks for
    // `webhooks secret`, which reads an endpoint's secret file (`WebhookSecretFile`) and writes it
    // again with a new secret from libcrypto (`Crypto`, opened at that command's first use only),
    // and for `http token`, which does the same with the HTTP gateway's token file
    // (`HTTPTokenFile`).
    .target(
      name: "TrialCtl",
      dependencies: [
        "TrialCore", "TrialControl", "TrialConfiguration", "TrialWebhooks",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ],
      swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
    ),

    // trialwatch-webhooks, the webhooks' sender: attached to the daemon over its control socket
    // (ServeWebhooks), it posts the attempts handed to it from a pool of worker threads and reports
    // their outcomes (ReportWebhooks). Import rule: TrialCore, TrialControl, TrialWebhooks (the
    // posts), TrialConfiguration (the secret files), Systemd (sd_notify, logging), ProcessMemory
    // (its start-up's pages released), Logging, ArgumentParser and Synchronization only; no
    // Dispatch (an idle sender wakes for nothing), no engine, no store.
    .target(
      name: "TrialWebhookSender",
      dependencies: [
        "TrialCore", "TrialControl", "TrialWebhooks", "TrialConfiguration", "Systemd", "ProcessMemory",
        .product(name: "Logging", package: "swift-log"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ]
    ),

    // libmicrohttpd's declarations (Debian: libmicrohttpd-dev). Not linked: the gateway opens
    // libmicrohttpd.so.12 when it starts (shim.h); trialwatchd and trialwatchctl never map it.
    .systemLibrary(name: "CMicroHTTPD", providers: [.apt(["libmicrohttpd-dev"])]),
    // trialwatch-http, the HTTP gateway: the daemon's Varlink methods as POST /call/METHOD, its
    // metrics as /metrics, for a token of its token file. A Varlink client of the daemon that
    // holds no state. Import rule: TrialCore, TrialControl, TrialConfiguration (the token file),
    // TrialWebhooks (libcrypto: SHA-256, comparison in constant time), Systemd, ProcessMemory,
    // CMicroHTTPD (MicroHTTPD.swift only), Logging, ArgumentParser and Synchronization; no
    // Dispatch, no engine, no store.
    .target(
      name: "TrialHTTP",
      dependencies: [
        "TrialCore", "TrialControl", "TrialConfiguration", "TrialWebhooks", "Systemd", "ProcessMemory",
        "CMicroHTTPD", "ErrnoText",
        .product(name: "Logging", package: "swift-log"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ]
    ),

    // The man pages: trialwatchctl(1), trialwatchd(8), trialwatch-webhooks(8) and trialwatch-http(8)
    // from their command-line definitions, trialwatch.conf(5) from the configuration schema. Run by
    // trialwatch-manual at release time.
    .target(
      name: "TrialManual",
      dependencies: [
        "TrialConfiguration", "TrialControl", "TrialCtl", "TrialDaemon", "TrialWebhookSender", "TrialHTTP",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ]
    ),

    // Thin entry points. trialwatchd names the stores the daemon may run on; it is also
    // trialwatchctl when started by that name (the installed trialwatchctl is a link to it, so
    // that the Swift runtime is installed once), and trialwatch-webhooks likewise. The
    // trialwatchctl product is for development.
    .executableTarget(
      name: "trialwatchd",
      dependencies: [
        "TrialDaemon", "TrialStore", "TrialPostgres", "TrialCtl", "TrialWebhookSender", "TrialHTTP",
      ]),
    .executableTarget(
      name: "trialwatchctl", dependencies: ["TrialCtl"],
      swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]),
    // The bodies of the fuzz targets (FuzzTesting/, docs/fuzzing.md): one function
    // per target feeding its input to the daemon's own parsing code and checking what must hold.
    // FuzzTesting/'s executables call them under libFuzzer; TrialFuzzTargetsTests replay every
    // committed input through them. Never a dependency of trialwatchd or trialwatchctl.
    .target(
      name: "TrialFuzzTargets",
      dependencies: [
        "TrialCore", "TrialTesting", "TrialStore", "TrialStoreTesting", "TrialControl", "TrialConfiguration",
        "TrialDaemon", "TrialEngine", "TrialControlServer", "TrialCtl",
        .product(name: "Logging", package: "swift-log"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ]
    ),

    // Release tool: writes the man pages (logic in TrialManual).
    .executableTarget(name: "trialwatch-manual", dependencies: ["TrialManual"]),
    // Build tool: writes TrialCtl's LocaleTable, the texts of dates in each supported locale, from
    // Foundation's ICU (`make locale-table`). Never a dependency of trialwatchd or trialwatchctl.
    .executableTarget(name: "trialwatch-locale-table"),
    // Test tool: the child process the crash test kills (logic in TrialStoreTesting).
    .executableTarget(name: "trialwatch-crashtest", dependencies: ["TrialStoreTesting"]),
    // Benchmarks: `make bench` prints every figure as `name: value unit`.
    .executableTarget(
      name: "trialwatch-bench",
      dependencies: [
        "TestSupport", "TrialCore", "TrialStore", "TrialControl", "TrialDaemon", "TrialEngine",
        "TrialTesting",
        .product(name: "Histogram", package: "hdrhistogram-swift"),
      ]
    ),

    .testTarget(name: "TestSupportTests", dependencies: ["TestSupport"]),
    .testTarget(name: "ProcessMemoryTests", dependencies: ["ProcessMemory"]),
    .testTarget(
      name: "TrialCoreTests",
      dependencies: [
        "TestSupport", "TrialCore", "TrialTesting",
        .product(name: "PropertyBased", package: "swift-property-based"),
      ]
    ),
    .testTarget(name: "TrialTestingTests", dependencies: ["TrialCore", "TrialTesting"]),
    .testTarget(name: "TrialWebhooksTests", dependencies: ["TestSupport", "TrialCore", "TrialWebhooks"]),
    // The sender's parts, and trialwatch-webhooks as a process beside trialwatchd as one.
    .testTarget(
      name: "TrialWebhookSenderTests",
      dependencies: [
        "TestSupport", "TrialCore", "TrialControl", "TrialConfiguration", "TrialWebhooks",
        "TrialWebhookSender",
        "TrialDaemonTesting",
      ]
    ),
    // The gateway as a process beside trialwatchd, driven by curl.
    .testTarget(
      name: "TrialHTTPTests",
      dependencies: [
        "TestSupport", "TrialCore", "TrialControl", "TrialConfiguration", "TrialHTTP", "TrialDaemonTesting",
      ]
    ),
    .testTarget(
      name: "TrialStoreTests",
      dependencies: [
        "TestSupport", "TrialStore", "TrialStoreTesting", "TrialCore", "TrialTesting", "TrialPostgres",
        "TrialPostgresTesting",
      ],
      // Stores written by earlier versions, for the tests of the upgrade (Fixtures/README.md).
      resources: [.copy("Fixtures")]
    ),
    .testTarget(
      name: "TrialPostgresTests", dependencies: ["TrialPostgres", "TestSupport", "TrialCore", "TrialTesting"]),
    .testTarget(
      name: "SystemdTests",
      dependencies: [
        "Systemd", "SystemdTesting", "TestSupport", .product(name: "Logging", package: "swift-log"),
      ]
    ),
    .testTarget(
      name: "TrialControlTests", dependencies: ["TestSupport", "TrialCore", "TrialControl", "TrialTesting"]
    ),
    .testTarget(
      name: "TrialDaemonTests",
      dependencies: [
        "TestSupport", "TrialCore", "TrialTesting", "TrialControl", "TrialConfiguration", "TrialDaemon",
        "TrialEngine", "TrialControlServer", "TrialDaemonTesting", "TrialCtl",
        "TrialStore", "TrialStoreTesting", "TrialPostgres", "TrialPostgresTesting", "Systemd",
        "SystemdTesting",
        .product(name: "Logging", package: "swift-log"),
      ]
    ),
    .testTarget(
      name: "TrialCtlTests",
      dependencies: [
        "TestSupport", "TrialCore", "TrialTesting", "TrialControl", "TrialCtl", "TrialDaemon", "TrialEngine",
        "TrialDaemonTesting", "TrialConfiguration", "TrialWebhooks",
        .product(name: "Logging", package: "swift-log"),
      ]
    ),
    .testTarget(
      name: "TrialFuzzTargetsTests", dependencies: ["TrialFuzzTargets", "TrialCore", "TrialStore"]),
    .testTarget(
      name: "TrialManualTests",
      dependencies: [
        "TestSupport", "TrialConfiguration", "TrialControl", "TrialCtl", "TrialDaemon", "TrialManual",
        "TrialWebhookSender", "TrialHTTP",
      ]
    ),
  ]
)
