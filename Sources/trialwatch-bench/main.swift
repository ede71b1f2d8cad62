import Foundation
import TrialStore

// Benchmarks of trialwatch: each figure is printed as `name: value unit`.
// TRIALWATCH_BENCH=planner,store,engine,daemon,stats,control,ingest,feed,package picks sections (default:
// all).
//
// The planner bench runs first: it re-runs this executable once per case (a fresh process
// for each memory figure), and each of those runs stops after its case. The control bench
// re-runs it as its clients (`--control-client`, see ControlClient). `populate-plans` writes a
// store for another harness and exits (see PopulateCommand), `populate` one of active trials
// (PopulateActiveCommand).
if CommandLine.arguments.dropFirst().first == ControlClient.flag {
  exit(ControlClient.main(Array(CommandLine.arguments.dropFirst(2))))
}
if CommandLine.arguments.dropFirst().first == PopulateCommand.name {
  exit(PopulateCommand.main(Array(CommandLine.arguments.dropFirst(2))))
}
if CommandLine.arguments.dropFirst().first == PopulateActiveCommand.name {
  exit(PopulateActiveCommand.main(Array(CommandLine.arguments.dropFirst(2))))
}

let sections = ProcessInfo.processInfo.environment["TRIALWATCH_BENCH"].map {
  Set($0.split(separator: ",").map(String.init))
}
func selected(_ name: String) -> Bool { sections?.contains(name) ?? true }

do {
  if selected("planner") { try runPlannerBench() }
  if selected("store") { try runStoreBench() }
  if selected("engine") {
    try runEngineBench(makeRepository: { try LMDBTrialRepository(directory: $0.path) })
  }
  if selected("daemon") { try runDaemonBench() }
  if selected("stats") { try runStatsBench() }
  if selected("control") { try runControlBench() }
  if selected("ingest") { try runIngestBench() }
  if selected("feed") { try runFeedBench() }
  if selected("package") { try runPackageBench() }
} catch {
  FileHandle.standardError.write(Data("trialwatch-bench: \(error)\n".utf8))
  exit(1)
}
