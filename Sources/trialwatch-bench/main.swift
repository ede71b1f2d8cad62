// Every benchmark of the project, run in order by `make bench`.
try runStoreBench()
