import Foundation
import TrialCtl

@main
struct Entrypoint {
  static func main() {
    exit(TrialwatchCtl.main(arguments: Array(CommandLine.arguments.dropFirst()), environment: .current()))
  }
}
