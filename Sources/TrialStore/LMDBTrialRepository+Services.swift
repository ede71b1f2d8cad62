import TrialCore

/// The file store's services to the daemon: its file's size, and what opening it upgraded.
extension LMDBTrialRepository: StoreServices {
  public func fileSize() -> Int? { (try? statistics())?.fileSize }

  /// The pages of the store file mapped into the daemon, read by its writes and reads since
  /// the last release (see `releaseMappedPages`).
  public func releaseMemory() {
    releaseMappedPages()
  }

  public var openingNotes: [StoreNote] {
    guard let upgrade else { return [] }
    return [
      StoreNote(
        "store upgraded",
        fields: [
          "from_schema": "\(upgrade.fromSchema)", "to_schema": "\(upgrade.toSchema)",
          "kept_copy": "\(upgrade.keptCopy)", "events_logged": "\(upgrade.backfilledEvents)",
        ])
    ]
  }

  /// The store of one host, opened for the daemon.
  public static func open(directory: String) throws -> OpenedStore {
    let store = try LMDBTrialRepository(directory: directory)
    return OpenedStore(store)
  }
}
