// Every benchmark, one call each; each prints its figures as `name: value unit`.
try runControlBench()
