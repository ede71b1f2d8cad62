import Foundation
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

// Bench tool: the command `trialwatchctl consume` runs per event in `make bench`. It reads the
// wall clock once, first thing, and sends `<EVENT_DUE> <seconds since 1970>` as one datagram
// to the socket named by TRIALWATCH_PROBE_SOCKET; the bench takes due time to command start
// from it (start-up of this small program included).
let now = SystemWallClock().now().timeIntervalSince1970
let environment = ProcessInfo.processInfo.environment
guard let path = environment["TRIALWATCH_PROBE_SOCKET"], let due = environment["EVENT_DUE"] else {
  FileHandle.standardError.write(
    Data("trialwatch-consume-probe: TRIALWATCH_PROBE_SOCKET and EVENT_DUE needed\n".utf8))
  exit(2)
}
let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
var address = sockaddr_un()
address.sun_family = sa_family_t(AF_UNIX)
withUnsafeMutableBytes(of: &address.sun_path) { buffer in
  for (index, byte) in path.utf8.prefix(buffer.count - 1).enumerated() { buffer[index] = byte }
}
let message = Array("\(due) \(now)".utf8)
let sent = withUnsafePointer(to: &address) {
  $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
    sendto(fd, message, message.count, 0, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
  }
}
exit(sent == message.count ? 0 : 1)
