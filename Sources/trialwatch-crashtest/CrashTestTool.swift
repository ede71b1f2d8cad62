import Foundation
import TrialStoreTesting

/// Test tool for the store's crash test: runs `StoreCrashWorkload` on the store directory
/// given as its argument until it is killed. Not part of the installed daemon.
@main
struct CrashTestTool {
  static func main() {
    exit(StoreCrashWorkload.runChild(arguments: Array(CommandLine.arguments.dropFirst())))
  }
}
