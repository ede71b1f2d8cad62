import TrialFuzzTargets

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer?, _ count: Int) -> Int32 {
  FuzzTargets.fuzz(FuzzTargets.control, data, count)
}
