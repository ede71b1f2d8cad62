import Glibc
import TrialCtl

@main
struct Entrypoint {
  static func main() {
    exit(TrialwatchCtl.runProcess())
  }
}
