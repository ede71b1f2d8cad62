import Foundation
import Testing
import TrialControl

@Suite struct InterfaceTests {
  static let sources = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Sources/TrialControl")

  /// The .varlink files are the source of truth; the served descriptions must be them,
  /// byte for byte. After editing a file, run `make interfaces`.
  @Test func theEmbeddedDescriptionsAreTheFiles() throws {
    let files = try FileManager.default.contentsOfDirectory(atPath: Self.sources.path)
      .filter { $0.hasSuffix(".varlink") }.sorted()
    #expect(
      files == ["io.trialwatch.Trials.varlink", "io.trialwatch.varlink", "org.varlink.service.varlink"])
    for file in files {
      let name = String(file.dropLast(".varlink".count))
      let text = try String(contentsOf: Self.sources.appendingPathComponent(file), encoding: .utf8)
      #expect(
        VarlinkInterfaces.descriptions[name] == text,
        "\(file) differs from the embedded description: run `make interfaces`")
      #expect(text.contains("\ninterface \(name)\n"))
    }
    #expect(Set(VarlinkInterfaces.descriptions.keys) == Set(VarlinkInterfaces.all))
  }

  /// Every method and error the code uses is declared in the interface files.
  @Test func theCodeAndTheDefinitionsAgree() throws {
    let trials = try #require(VarlinkInterfaces.descriptions[VarlinkInterfaces.trials])
    for method in TrialsMethod.allCases {
      #expect(trials.contains("\nmethod \(method.rawValue)("), "\(method.rawValue) not declared")
    }
    let errors = try #require(VarlinkInterfaces.descriptions[VarlinkInterfaces.errors])
    let service = try #require(VarlinkInterfaces.descriptions[VarlinkInterfaces.service])
    let names = [
      ControlError.Name.trialNotFound, ControlError.Name.subjectAlreadyActive,
      ControlError.Name.trialNotActive,
      ControlError.Name.permissionDenied, ControlError.Name.invalidMessage, ControlError.Name.messageTooLarge,
      ControlError.Name.tooManyConnections, ControlError.Name.internalError,
      ControlError.Name.interfaceNotFound,
      ControlError.Name.methodNotFound, ControlError.Name.methodNotImplemented,
      ControlError.Name.invalidParameter,
      ControlError.Name.expectedMore,
    ]
    for name in names {
      let dot = try #require(name.lastIndex(of: "."))
      let interface = String(name[..<dot])
      let member = String(name[name.index(after: dot)...])
      let text = interface == VarlinkInterfaces.errors ? errors : service
      #expect(interface == VarlinkInterfaces.errors || interface == VarlinkInterfaces.service)
      #expect(text.contains("\nerror \(member) ("), "\(name) not declared")
    }
  }
}
