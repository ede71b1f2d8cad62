import Foundation
import TestSupport
import Testing

/// Files short enough to read whole, checked over the repository's files (what git tracks, and
/// the new files it does not ignore; nothing under a `.build` folder): a Swift file at most 450
/// lines, a script (`.sh`, `.py`, or any file that starts with `#!`) at most 400, a document
/// (`README.md`, a markdown file under `docs/`) at most 450.
@Suite struct FileSizeTests {
  enum Kind: Sendable, CustomStringConvertible {
    case swift
    case script
    case document

    var limit: Int {
      switch self {
      case .swift: 450
      case .script: 400
      case .document: 450
      }
    }

    var description: String {
      switch self {
      case .swift: "Swift files"
      case .script: "scripts"
      case .document: "documents"
      }
    }
  }

  struct SizedFile: Equatable, CustomStringConvertible {
    var path: String
    var lines: Int

    var description: String { "\(path): \(lines) lines" }
  }

  /// The repository, found from this source file.
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

  /// What the file at `path` is, by its name or, without a known ending, its first bytes; nil
  /// for a file that is none of them.
  static func kind(of path: String, start: some Sequence<UInt8>) -> Kind? {
    if path.hasSuffix(".swift") { return .swift }
    if path == "README.md" || (path.hasPrefix("docs/") && path.hasSuffix(".md")) { return .document }
    if path.hasSuffix(".sh") || path.hasSuffix(".py") || start.starts(with: "#!".utf8) { return .script }
    return nil
  }

  /// Lines as `wc -l` counts them, and a last line without its newline.
  static func lineCount(_ bytes: some BidirectionalCollection<UInt8>) -> Int {
    bytes.count(where: { $0 == UInt8(ascii: "\n") })
      + (bytes.last.map { $0 == UInt8(ascii: "\n") ? 0 : 1 } ?? 0)
  }

  /// The repository's files, relative to `root`.
  static func repositoryFiles() throws -> [String] {
    let listed = try ChildProcess.run(
      .path("/usr/bin/git"),
      ["-C", root.path, "ls-files", "-z", "--cached", "--others", "--exclude-standard"])
    guard listed.status == .exited(0) else { throw TestSupportError("git ls-files: \(listed.errors)") }
    return listed.output.split(separator: "\0").map(String.init).filter { path in
      !path.split(separator: "/").contains { $0.hasPrefix(".build") }
    }
  }

  /// The files among `paths` (relative to `root`) of `kind` that are over its limit, with their
  /// counts; a path listed but gone from the work tree is passed over.
  static func overTheLimit(_ kind: Kind, among paths: [String], in root: URL) -> [SizedFile] {
    paths.sorted().compactMap { path in
      guard let bytes = FileManager.default.contents(atPath: root.appendingPathComponent(path).path),
        Self.kind(of: path, start: bytes.prefix(2)) == kind
      else { return nil }
      let lines = lineCount(bytes)
      return lines > kind.limit ? SizedFile(path: path, lines: lines) : nil
    }
  }

  @Test(arguments: [Kind.swift, .script, .document])
  func repositoryFiles_OfEachKind_AreWithinTheLimit(kind: Kind) throws {
    let over = Self.overTheLimit(kind, among: try Self.repositoryFiles(), in: Self.root)
    let list = over.map(\.description).joined(separator: "\n")
    #expect(over.isEmpty, "\(kind) over \(kind.limit) lines:\n\(list)")
  }

  @Test func repositoryFiles_Listed_HoldTheSourcesTheScriptsAndTheDocuments() throws {
    let files = try Self.repositoryFiles()
    let paths = [
      "Package.swift", "Tests/TestSupportTests/FileSizeTests.swift", ".ci/run", "Makefile", "README.md",
      "docs/testing.md",
    ]
    for path in paths {
      #expect(files.contains(path), "\(path)")
    }
    #expect(files.contains { $0.hasSuffix(".sh") } && files.contains { $0.hasSuffix(".py") })
  }

  @Test(
    arguments: [
      ("Package.swift", "// swift-tools-version", .swift), ("Tests/e2e/e2e.sh", "# no shebang", .script),
      ("bench/fleet/poller.py", "import sys", .script), (".ci/run", "#!/usr/bin/env bash", .script),
      ("debian/rules", "#!/usr/bin/make -f", .script), ("README.md", "# trialwatch", .document),
      ("docs/testing.md", "# Testing", .document), ("etc/trialwatch.conf", "# trialwatch.conf", nil),
      ("Tests/TrialStoreTests/Fixtures/README.md", "# Fixtures", nil),
    ] as [(String, String, Kind?)])
  func kind_OfAFile_IsFoundFromItsNameOrItsFirstLine(path: String, start: String, kind: Kind?) {
    #expect(Self.kind(of: path, start: start.utf8) == kind)
  }

  @Test(arguments: [("", 0), ("one\n", 1), ("one", 1), ("one\ntwo\n", 2), ("one\ntwo", 2), ("\n\n", 2)])
  func lineCount_WithOrWithoutAFinalNewline_CountsEveryLine(text: String, lines: Int) {
    #expect(Self.lineCount(Array(text.utf8)) == lines)
  }

  @Test func files_OverTheLimit_AreNamedWithTheirCount() throws {
    let scratch = try TemporaryDirectory("sizes")
    try FileManager.default.createDirectory(
      atPath: scratch.appending("docs"), withIntermediateDirectories: true)
    let files = [
      "long.swift": 451, "short.swift": 450, "long.sh": 401, "short.py": 400, "tool": 401, "notes.md": 900,
      "README.md": 451, "docs/long.md": 451, "docs/short.md": 450,
    ]
    for (name, lines) in files {
      let start = name == "tool" ? "#!/bin/sh\n" : "first\n"
      let text = start + String(repeating: "line\n", count: lines - 1)
      try Data(text.utf8).write(to: URL(fileURLWithPath: scratch.appending(name)))
    }
    let paths = Array(files.keys) + ["gone.swift"]
    #expect(
      Self.overTheLimit(.swift, among: paths, in: scratch.url) == [SizedFile(path: "long.swift", lines: 451)])
    let scripts = Self.overTheLimit(.script, among: paths, in: scratch.url)
    #expect(scripts.map(\.description) == ["long.sh: 401 lines", "tool: 401 lines"])
    let documents = Self.overTheLimit(.document, among: paths, in: scratch.url)
    #expect(documents.map(\.description) == ["README.md: 451 lines", "docs/long.md: 451 lines"])
  }
}
