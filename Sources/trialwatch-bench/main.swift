// Benchmarks of trialwatch: each figure is printed as `name: value unit`.
//
// The planner bench runs first: it re-runs this executable once per case (a fresh process
// for each memory figure), and each of those runs stops after its case.
try runPlannerBench()
try runStoreBench()
