/// Decides who may change trials: root, the daemon's own user, and members of the control
/// group (as the peer's primary group or one of its user's supplementary groups). Anyone who
/// can connect may read.
public struct ControlAuthorizer: Sendable {
  /// The daemon's effective uid.
  public var daemonUID: UInt32
  /// The group whose members may change trials; nil: only root and the daemon's user.
  public var controlGroup: UInt32?
  /// The groups of a user (by uid and primary gid), from the user database.
  public var groupsOfUser: @Sendable (_ uid: UInt32, _ primaryGroup: UInt32) -> [UInt32]?

  /// The groups of a user from the system's user database (`getpwuid_r`, `getgrouplist`).
  public static let userDatabaseGroups: @Sendable (UInt32, UInt32) -> [UInt32]? = {
    ControlSocket.groups(ofUser: $0, primaryGroup: $1)
  }

  public init(
    daemonUID: UInt32, controlGroup: UInt32?,
    groupsOfUser: @escaping @Sendable (UInt32, UInt32) -> [UInt32]? = ControlAuthorizer.userDatabaseGroups
  ) {
    self.daemonUID = daemonUID
    self.controlGroup = controlGroup
    self.groupsOfUser = groupsOfUser
  }

  public enum Decision: Hashable, Sendable {
    case root
    case daemonUser
    case primaryGroup
    case supplementaryGroup
    case refused

    public var permitted: Bool { self != .refused }
  }

  /// Whether the peer may change trials, and why.
  public func mayChange(_ peer: PeerCredentials) -> Decision {
    if peer.uid == 0 { return .root }
    if peer.uid == daemonUID { return .daemonUser }
    guard let controlGroup else { return .refused }
    if peer.gid == controlGroup { return .primaryGroup }
    if let groups = groupsOfUser(peer.uid, peer.gid), groups.contains(controlGroup) {
      return .supplementaryGroup
    }
    return .refused
  }
}
