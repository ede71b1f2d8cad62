import Testing
import TrialTesting
struct Placeholder { @Test func x() {} }
