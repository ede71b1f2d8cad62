import Foundation
import TestSupport
import TrialCore

@testable import TrialConfiguration

/// A scratch `/etc/trialwatch`: the main file and its drop-in directory, on the real file system.
final class ConfigurationFixture {
  let scratch = try! TemporaryDirectory("config")
  var directory: String { scratch.path }

  var main: String { directory + "/trialwatch.conf" }
  var dropIns: String { main + ".d" }

  /// With `main` written to the main file, when given.
  init(main text: String? = nil) {
    if let text { write("trialwatch.conf", text) }
  }

  /// Writes `text` to `name` (relative to the scratch directory), creating folders.
  @discardableResult
  func write(_ name: String, _ text: String) -> String {
    let path = directory + "/" + name
    try! FileManager.default.createDirectory(
      atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try! Data(text.utf8).write(to: URL(fileURLWithPath: path))
    return path
  }

  @discardableResult
  func dropIn(_ name: String, _ text: String) -> String {
    write("trialwatch.conf.d/" + name, text)
  }

  func load(environment: [String: String] = [:]) -> LoadedConfiguration {
    ConfigurationLoader(mainFile: main, environment: environment).load()
  }

  /// The main file `text`, loaded with no drop-ins.
  static func load(_ text: String) -> LoadedConfiguration { ConfigurationFixture(main: text).load() }
}

let defaults = DaemonConfiguration(environment: [:])
let thirtyThreeOffsets: String = (1...33).map { "\($0)h" }.joined(separator: ",")
