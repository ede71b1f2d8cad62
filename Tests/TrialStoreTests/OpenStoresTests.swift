import Foundation
import TestSupport
import Testing
import TrialCore
import TrialStoreTesting

@testable import TrialStore

#if canImport(Glibc)
  import Glibc
#endif

/// The process's registry of open stores keys on device and inode, so it must never take one
/// directory for another: not when a store directory removed while open would hand its inode
/// to a new directory, nor when one is renamed while open.
@Suite struct OpenStoresTests {
  private func inode(_ path: String) -> UInt64? {
    var st = stat()
    return stat(path, &st) == 0 ? UInt64(st.st_ino) : nil
  }

  private func startTrial(_ store: LMDBTrialRepository, id: UInt64, subject: String) throws {
    let trial = Trial(
      id: TrialID(id), subject: subject,
      period: TrialPeriod(
        startDate: StoreCorruption.origin, endDate: StoreCorruption.origin.addingTimeInterval(5 * 86_400)))
    try store.write { try $0.putTrial(trial) }
  }

  /// A store directory removed while its store is open: the system would give its inode to the
  /// next directory made (ext4 does, at once). The registry holds the directory, so its inode
  /// stays taken while the store is open; the new store opens, once, and stays once-only
  /// after the first one closes.
  @Test func storeRemovedWhileOpen_ItsInodeIsNotReused_AndANewStoreOpensOnceOnly() throws {
    let parent = try TemporaryDirectory("registry")
    let first = parent.appending("first")
    let store = try LMDBTrialRepository(directory: first)
    try startTrial(store, id: 1, subject: "first")
    let taken = try #require(inode(first))
    for name in try FileManager.default.contentsOfDirectory(atPath: first) {
      #expect(unlink(first + "/" + name) == 0)
    }
    #expect(rmdir(first) == 0)

    // Directories made now, where the removed one was: none gets its inode.
    let made = (0..<64).map { parent.appending("new-\($0)") }
    for path in made { #expect(mkdir(path, 0o700) == 0) }
    #expect(made.allSatisfy { inode($0) != taken }, "a new directory took the inode of a store still open")

    let second = try LMDBTrialRepository(directory: made[0])
    try startTrial(second, id: 2, subject: "second")
    #expect(try store.read { try $0.trial(TrialID(1)) }?.subject == "first", "the removed store still reads")
    store.close()
    // Closing the first store left the second one's entry alone: it is still open only once.
    let again = try #require(throws: StoreError.self) { try LMDBTrialRepository(directory: made[0]) }
    #expect(again.kind == .inUse)
    #expect(try second.read { try $0.trial(TrialID(2)) }?.subject == "second")
    second.close()
    let reopened = try LMDBTrialRepository(directory: made[0])
    #expect(try reopened.read { try $0.trial(TrialID(2)) }?.subject == "second")
    reopened.close()
  }

  /// A store directory renamed while open is the same store under its new name.
  @Test func storeRenamedWhileOpen_IsInUseUnderItsNewName() throws {
    let parent = try TemporaryDirectory("registry")
    let before = parent.appending("before")
    let after = parent.appending("after")
    let store = try LMDBTrialRepository(directory: before)
    try startTrial(store, id: 1, subject: "renamed")
    #expect(rename(before, after) == 0)
    let error = try #require(throws: StoreError.self) { try LMDBTrialRepository(directory: after) }
    #expect(error.kind == .inUse)
    store.close()
    let reopened = try LMDBTrialRepository(directory: after)
    #expect(try reopened.read { try $0.trial(TrialID(1)) }?.subject == "renamed")
    reopened.close()
  }

  /// The registry's entry holds its directory open for as long as it lives, and no longer.
  @Test func registryEntry_HoldsItsDirectory_UntilRemoved() throws {
    let parent = try TemporaryDirectory("registry")
    let path = parent.appending("store")
    #expect(mkdir(path, 0o700) == 0)
    let identity = try #require(try OpenStores.shared.enter(path))
    #expect(try OpenStores.shared.enter(path) == nil, "entered twice")
    #expect(OpenStores.shared.contains(identity))
    OpenStores.shared.remove(identity)
    #expect(!OpenStores.shared.contains(identity))
    let again = try #require(try OpenStores.shared.enter(path))
    #expect(again == identity)
    OpenStores.shared.remove(again)
  }
}
