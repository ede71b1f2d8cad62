import Foundation
import Testing

@testable import ProcessMemory

#if canImport(Glibc)
  import Glibc
#endif

@Suite struct ProgramPagesTests {
  /// A program (device fe:00, inode 42) as the kernel maps it, its relocated part written
  /// (`Anonymous` pages), beside a library and a shared store file of the same inode elsewhere.
  static let smaps = """
    55b8beb58000-55b8bedd1000 r--p 00000000 fe:00 42                         /usr/sbin/trialwatchd
    Size:               2532 kB
    Rss:                 352 kB
    Anonymous:             0 kB
    VmFlags: rd mr mw me dw sd
    55b8bedd1000-55b8bf8c5000 r-xp 00278000 fe:00 42                         /usr/sbin/trialwatchd
    Rss:                3920 kB
    Anonymous:             0 kB
    55b8bf8c5000-55b8bf929000 r--p 00d6b000 fe:00 42                         /usr/sbin/trialwatchd
    Rss:                 400 kB
    Anonymous:           400 kB
    55b8bf929000-55b8bfb55000 rw-p 00dce000 fe:00 42                         /usr/sbin/trialwatchd
    Anonymous:           208 kB
    7f0000000000-7f0040000000 r--s 00000000 fe:01 42                         /var/lib/trialwatch/data.mdb
    Anonymous:             0 kB
    7f3b71a46000-7f3b71b9b000 r-xp 00028000 fe:00 77                         /usr/lib/x86_64-linux-gnu/libc.so.6
    Anonymous:             0 kB
    7f3b73292000-7f3b73293000 rw-p 00000000 00:00 0 
    Anonymous:             4 kB
    """

  @Test func mappings_ReadsEachHeaderAndItsAnonymousPages() {
    let mappings = ProgramPages.mappings(in: Array(Self.smaps.utf8))
    #expect(mappings.count == 7)
    #expect(mappings.first?.start == 0x55b8_beb5_8000 && mappings.first?.end == 0x55b8_bedd_1000)
    #expect(mappings.map(\.permissions) == ["r--p", "r-xp", "r--p", "rw-p", "r--s", "r-xp", "rw-p"])
    #expect(mappings.map(\.anonymousKB) == [0, 0, 400, 208, 0, 0, 4])
    #expect(mappings[4].device == (0xfe, 0x01) && mappings[4].inode == 42)
  }

  @Test func mappings_RefusesAHeaderWhoseNumbersDoNotFit64Bits() {
    let smaps = """
      55b8beb58000-55b8bedd1000 r--p 00000000 fe:00 99999999999999999999    /usr/sbin/trialwatchd
      Anonymous:             0 kB
      155b8beb580000000-155b8bedd10000000 r--p 00000000 fe:00 42              /usr/sbin/trialwatchd
      Anonymous:             0 kB
      55b8bedd1000-55b8bf8c5000 r-xp 00278000 fe:00 18446744073709551615    /usr/sbin/trialwatchd
      Anonymous:             7 kB
      """
    let mappings = ProgramPages.mappings(in: Array(smaps.utf8))
    #expect(mappings.map(\.inode) == [UInt64.max])
    #expect(mappings.map(\.anonymousKB) == [7])
  }

  @Test func release_TakesOnlyReadOnlyFileMappingsWithNoPageWritten() {
    var program = stat()
    program.st_dev = 0xfe00  // major 254, minor 0
    program.st_ino = 42
    let mappings = ProgramPages.mappings(in: Array(Self.smaps.utf8))
    let released = mappings.filter(\.isUnwrittenFileCopy)
    // The program's code and the metadata before it, and libc's code; not the relocated part
    // (written, then made read-only), the data, the store file (shared), nor anonymous memory.
    #expect(released.map(\.start) == [0x55b8_beb5_8000, 0x55b8_bedd_1000, 0x7f3b_71a4_6000])
    // The program's own: not the store file of the same inode on another device, nor libc.
    #expect(released.filter { $0.isOfFile(program) }.map(\.start) == [0x55b8_beb5_8000, 0x55b8_bedd_1000])
  }

  @Test func release_InThisProcess_LeavesItRunning() throws {
    // The test runner's own code and metadata, and its libraries': what runs next comes back
    // from the page cache, and the relocated parts, which would come back as the files'
    // unrelocated bytes, are kept.
    let released = ProgramPages.release()
    #expect(released.program > 0 && released.libraries > 0)
    let decoded = try JSONDecoder().decode([String: Int].self, from: Data(#"{"after":1}"#.utf8))
    #expect(decoded == ["after": 1])
  }
}
