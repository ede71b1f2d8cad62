import Foundation
import TrialManual

// trialwatch-manual: writes trialwatch's man pages (trialwatchctl.1, trialwatch.conf.5,
// trialwatchd.8) into a folder. `make release` runs it; the pages come from TrialManual.
let usage = "usage: trialwatch-manual --date YYYY-MM-DD --output DIR"
var options: [String: String] = [:]
var arguments = CommandLine.arguments.dropFirst()
while let name = arguments.popFirst() {
  guard ["--date", "--output"].contains(name), let value = arguments.popFirst() else {
    FileHandle.standardError.write(Data("trialwatch-manual: \(usage)\n".utf8))
    exit(64)
  }
  options[name] = value
}
guard let date = options["--date"], let output = options["--output"] else {
  FileHandle.standardError.write(Data("trialwatch-manual: \(usage)\n".utf8))
  exit(64)
}
do {
  try TrialwatchManual.write(date: date, to: output)
} catch {
  FileHandle.standardError.write(Data("trialwatch-manual: \(error)\n".utf8))
  exit(1)
}
