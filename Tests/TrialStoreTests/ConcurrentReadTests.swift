import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable import TrialStore

/// Reads on many threads at once, beside the writer, while its writes grow the map.
@Suite struct ConcurrentReadTests {
  /// What the threads of a test share.
  private final class Shared: Sendable {
    let writing = Atomic<Bool>(true)
    let found = Atomic<Bool>(false)
    let reads = Atomic<Int>(0)
    let lines = Mutex<[String]>([])

    func note(_ line: String) { lines.withLock { $0.append(line) } }
    var noted: [String] { lines.withLock { $0 } }
  }

  /// Runs `body` on a thread of its own; the semaphore is signalled when it returns.
  private func thread(_ done: DispatchSemaphore, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread {
      body()
      done.signal()
    }
    thread.start()
  }

  @Test func readsOnManyThreads_WhileWritesGrowTheMap_AllSucceedAndSeeCommittedStates() throws {
    let directory = try TemporaryDirectory()
    let store = try LMDBTrialRepository(
      directory: directory.appending("store"), options: .init(initialMapSize: 64 << 10))
    try startTrials(store, count: 10)
    let batches = 40
    let shared = Shared()
    let done = DispatchSemaphore(value: 0)
    let readers = 8
    for reader in 0..<readers {
      thread(done) {
        var seen = 10
        // Each reader reads until the writer is done, and at least a few times.
        var rounds = 0
        while shared.writing.load(ordering: .acquiring) || rounds < 20 {
          rounds += 1
          do {
            let (count, trial) = try store.read { txn -> (Int, Trial?) in
              var count = 0
              try txn.scanTrials(after: nil) { _ in
                count += 1
                return true
              }
              return (count, try txn.trial(TrialID(UInt64(1 + (rounds + reader) % 10))))
            }
            // Whole batches only, and never fewer than before.
            if count < seen || (count - 10) % 100 != 0 || trial == nil {
              shared.note("reader \(reader) saw \(count) trials after \(seen)")
            }
            seen = count
            shared.reads.add(1, ordering: .relaxed)
          } catch {
            shared.note("reader \(reader): \(error)")
            return
          }
        }
      }
    }
    thread(done) {
      defer { shared.writing.store(false, ordering: .releasing) }
      do {
        for batch in 0..<batches {
          let first = 1_000 + UInt64(batch) * 100
          try store.write { txn in
            // Made inside the body: a write that meets a full map runs again.
            let ids = SequenceTrialIDGenerator(Array(first..<first + 100))
            for index in 0..<100 {
              _ = try TrialBook.startTrial(
                in: txn, subject: "s\(first + UInt64(index))-" + String(repeating: "x", count: 200),
                endDate: origin.addingTimeInterval(day), reminders: .default, now: origin, ids: ids)
            }
          }
        }
      } catch {
        shared.note("writer: \(error)")
      }
    }
    for _ in 0...readers {
      try #require(done.wait(timeout: .now() + 60) == .success, "every thread finished")
    }
    #expect(shared.noted == [])
    #expect(store.mapGrowthCount > 2, "the map grew while the readers read")
    #expect(try store.statistics().trials == 10 + batches * 100)
    let reads = shared.reads.load(ordering: .relaxed)
    #expect(reads >= readers * 20)
    store.close()
  }

  @Test func writeInsideARead_IsRefused_AndReadsInsideReadsAndWritesRun() throws {
    let directory = try TemporaryDirectory()
    let store = try LMDBTrialRepository(directory: directory.appending("store"))
    try startTrials(store, count: 2)
    let error = try #require(throws: StoreError.self) {
      try store.read { _ in try store.write { try $0.setLastSeenWallTime(origin) } }
    }
    #expect(error.kind == .misuse)
    let nested = try store.read { outer in
      try store.read { inner in (try outer.trial(TrialID(1)), try inner.trial(TrialID(2))) }
    }
    #expect(nested.0 != nil && nested.1 != nil)
    // After the refusal, the store is usable from this thread and from another.
    try startTrials(store, count: 1, firstID: 3)
    let done = DispatchSemaphore(value: 0)
    let shared = Shared()
    thread(done) {
      shared.found.store((try? store.read { try $0.trial(TrialID(3)) }) != nil, ordering: .relaxed)
    }
    try #require(done.wait(timeout: .now() + 10) == .success)
    let found = shared.found.load(ordering: .relaxed)
    #expect(found)
    store.close()
  }

  @Test func gate_WithAllPlacesTaken_MakesTheNextReadWait() throws {
    let gate = StoreGate(readerPlaces: 1)
    let inFirst = DispatchSemaphore(value: 0)
    let leaveFirst = DispatchSemaphore(value: 0)
    let done = DispatchSemaphore(value: 0)
    let order = Shared()
    thread(done) {
      gate.read {
        inFirst.signal()
        _ = leaveFirst.wait(timeout: .now() + 10)
        order.note("first out")
      }
    }
    try #require(inFirst.wait(timeout: .now() + 10) == .success)
    thread(done) { gate.read { order.note("second in") } }
    leaveFirst.signal()
    for _ in 0..<2 { try #require(done.wait(timeout: .now() + 10) == .success) }
    #expect(order.noted == ["first out", "second in"])
  }
}
