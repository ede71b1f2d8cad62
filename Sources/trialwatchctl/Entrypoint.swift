import Foundation
import TrialCtl

@main
struct Entrypoint {
  static func main() {
    exit(TrialwatchCtl.runProcess())
  }
}
