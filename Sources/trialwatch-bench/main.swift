// Benchmarks of trialwatch: each figure is printed as `name: value unit`.
try runPlannerBench()
