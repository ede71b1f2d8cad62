import FoundationEssentials
import TrialCtl

#if canImport(Glibc)
  import Glibc
#endif

@main
struct Entrypoint {
  static func main() {
    exit(TrialwatchCtl.runProcess())
  }
}
