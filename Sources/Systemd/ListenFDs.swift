/// File descriptors passed by socket activation (sd_listen_fds(3)).
public enum ListenFDs {
  /// One passed descriptor and its name (`FileDescriptorName=` of the socket unit;
  /// "unknown" when the manager passed no names).
  public struct Descriptor: Hashable, Sendable {
    public var fd: Int32
    public var name: String

    public init(fd: Int32, name: String) {
      self.fd = fd
      self.name = name
    }
  }

  /// Takes the descriptors passed to this process, starting at 3. Empty when the process
  /// was not socket-activated (or the variables name another process). The variables are
  /// removed from the environment, so a second call returns nothing and children do not
  /// inherit them; the descriptors are set to close on exec.
  public static func take() throws(SystemdError) -> [Int32] {
    try takeNamed().map(\.fd)
  }

  /// Like `take()`, with each descriptor's name.
  public static func takeNamed() throws(SystemdError) -> [Descriptor] {
    try LibSystemd.listenFDs().map { Descriptor(fd: $0.fd, name: $0.name) }
  }
}
