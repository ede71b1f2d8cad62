import Foundation
import TestSupport

/// The Debian package's size once installed:
///
///     package_installed_kb    `Installed-Size` of the package `make deb` left in `.build-deb/`
///                             (kB, as dpkg counts them), for the version of the trialwatchd
///                             beside this bench
///
/// The bench does not build the package (`make deb` takes a release build, debhelper and
/// lintian); without one, it prints a `#` line saying so instead of the figure.
func runPackageBench() throws {
  let figure = "package_installed_kb"
  guard let folder = checkoutFolder()?.appendingPathComponent(".build-deb") else {
    print("# \(figure): no checkout around \(BuiltProducts.directory), no .deb to read")
    return
  }
  let version = try daemonVersion()
  let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
  guard
    let name = names.sorted().first(where: { $0.hasPrefix("trialwatch_\(version)_") && $0.hasSuffix(".deb") })
  else {
    print("# \(figure): no .deb of version \(version), run make deb")
    return
  }
  let package = folder.appendingPathComponent(name).path
  guard FileManager.default.isExecutableFile(atPath: "/usr/bin/dpkg-deb") else {
    print("# \(figure): no dpkg-deb to read .build-deb/\(name)")
    return
  }
  let read = try ChildProcess.run(.path("/usr/bin/dpkg-deb"), ["-f", package, "Installed-Size"])
  guard read.status == .exited(0),
    let kilobytes = Int(read.output.trimmingCharacters(in: .whitespacesAndNewlines))
  else {
    throw BenchError("dpkg-deb -f \(package) Installed-Size: \(read.status) \(read.errors)")
  }
  report(figure, Double(kilobytes), "kB", digits: 0)
  print("# \(figure): from .build-deb/\(name)")
}

/// The folder the build folders of this bench lie in: the parent of the nearest folder above
/// the executable whose name begins with `.build`.
private func checkoutFolder() -> URL? {
  var folder = URL(fileURLWithPath: BuiltProducts.directory)
  while folder.path != "/" {
    if folder.lastPathComponent.hasPrefix(".build") { return folder.deletingLastPathComponent() }
    folder = folder.deletingLastPathComponent()
  }
  return nil
}

/// What `trialwatchd --version` prints: the version a package of this checkout carries.
private func daemonVersion() throws -> String {
  let done = try ChildProcess.run(.path(DaemonProcess.builtExecutable.path), ["--version"])
  let version = done.output.trimmingCharacters(in: .whitespacesAndNewlines)
  guard done.status == .exited(0), !version.isEmpty else {
    throw BenchError("trialwatchd --version: \(done.status) \(done.errors)")
  }
  return version
}
