import Testing
import TrialCore

struct EventCursorTextTests {
  @Test func generationZero_IsSixteenDigits_AndAnotherAddsItsOwn() {
    #expect(EventCursor(0x2A).description == "000000000000002a")
    #expect(EventCursor(0x2A, generation: 3).description == "000000000000002a-00000003")
    #expect(EventCursor(.max, generation: .max).description == "ffffffffffffffff-ffffffff")
  }

  @Test(arguments: [(UInt64(0), UInt32(0)), (1, 1), (0x2A, 3), (.max, .max), (5, 0x1_0000)])
  func text_RoundTrips(sequence: UInt64, generation: UInt32) {
    let cursor = EventCursor(sequence, generation: generation)
    #expect(EventCursor(cursor.description) == cursor)
  }

  @Test(arguments: [
    "", "2a", "000000000000002a-", "000000000000002a-3", "000000000000002a-00000000",
    "000000000000002a+00000003",
    "000000000000002a-000000003", "00000000000002a-00000003", "000000000000002a-0000000g",
    "000000000000002a 00000003",
  ])
  func parse_BadText_IsRejected(text: String) {
    #expect(EventCursor(text) == nil)
  }
}

struct LogGenerationTests {
  @Test func record_RoundTrips_AndBadRecordsAreRejected() {
    for generation in [
      LogGeneration(), LogGeneration(number: 3, began: 0x102, parent: 2), LogGeneration(number: 1, began: 7),
    ] {
      #expect(LogGeneration(record: generation.record) == generation)
    }
    #expect(LogGeneration(number: 3, began: 0x102, parent: 2).record == "3 began 0000000000000102 from 2")
    for bad in [
      "", "3", "3 began 102", "3 began 0000000000000102 from", "x began 0000000000000102",
      "3 at 0000000000000102",
    ] {
      #expect(LogGeneration(record: bad) == nil, "\(bad)")
    }
  }

  /// After a restore, a cursor of the backup's generation at or before where the backup ended
  /// names the same event; any other resumes where the generation began.
  @Test func resumePoint_KeepsACursorOfTheParentUpToWhereItBegan() {
    let restored = LogGeneration(number: 2, began: 10, parent: 0)
    #expect(restored.resumePoint(for: EventCursor(7)) == EventCursor(7, generation: 2))
    #expect(restored.resumePoint(for: EventCursor(10)) == EventCursor(10, generation: 2))
    #expect(restored.resumePoint(for: EventCursor(12)) == EventCursor(10, generation: 2))
    #expect(restored.resumePoint(for: EventCursor(7, generation: 1)) == EventCursor(10, generation: 2))
    let imported = LogGeneration(number: 1, began: 10)
    #expect(imported.resumePoint(for: EventCursor(7)) == EventCursor(10, generation: 1))
  }

  @Test func successor_IsANumberNeitherHad() {
    let backup = LogGeneration(number: 1, began: 4, parent: 0)
    let next = backup.successor(began: 9, parent: 1, other: LogGeneration(number: 5))
    #expect(next == LogGeneration(number: 6, began: 9, parent: 1))
    #expect(LogGeneration(number: .max).successor(began: 0, parent: nil).number == 1)
  }

  @Test func checkCursor_OfAnotherGeneration_IsRefusedNamingBothAndWhereToResume() throws {
    let bounds = EventLogBounds(
      last: EventCursor(12), count: 12, generation: LogGeneration(number: 2, began: 10, parent: 0))
    #expect(bounds.last == EventCursor(12, generation: 2))
    try EventFeed.checkCursor(EventCursor(11, generation: 2), against: bounds)
    #expect(
      throws: TrialError(
        .cursorGeneration(cursor: EventCursor(11), generation: 2, resumeAfter: EventCursor(10, generation: 2))
      )
    ) {
      try EventFeed.checkCursor(EventCursor(11), against: bounds)
    }
  }
}
