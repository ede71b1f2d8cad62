import TrialCore

/// The file store's services to the daemon: its file's size, and what opening it upgraded.
extension LMDBTrialRepository: StoreServices {
  public func fileSize() -> Int? { (try? statistics())?.fileSize }

  /// From the environment's figures and LMDB's list of free pages (a record per transaction
  /// that freed pages; a few hundred at most, never the trials).
  public func space() -> StoreSpace? {
    try? gate.read {
      let info = try environment.info()
      let pageSize = max(info.pageSize, 1)
      let listed = try environment.read { txn in
        var pages = 0
        try txn.forEach(.freePages) { record in
          if record.value.count >= MemoryLayout<Int>.size {
            pages += record.value.loadUnaligned(as: Int.self)
          }
        }
        return pages
      }
      let unused = max(0, info.fileSize / pageSize - (info.lastPage + 1))
      return StoreSpace(fileBytes: info.fileSize, freeBytes: (listed + unused) * pageSize)
    }
  }

  /// The pages of the store file mapped into the daemon, read by its writes and reads since
  /// the last release (see `releaseMappedPages`).
  public func releaseMemory() {
    releaseMappedPages()
  }

  /// The count of active trials the store keeps in its meta records (as `restore` reads it to
  /// reserve room), never more than the entries of the trials' table.
  public func trialsToHold() throws -> Int? {
    let figures = try statistics()
    return min(figures.activeTrials, figures.trials)
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
