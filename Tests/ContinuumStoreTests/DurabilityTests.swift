import GRDB
import Testing

@testable import ContinuumStore

/// A record is durable on disk before its ACK is sent (PROTOCOL.md, ARCHITECTURE.md): the writer connection syncs
/// the WAL at every commit. GRDB's DatabasePool turns WAL on with `synchronous = NORMAL` after the store's own
/// set-up, which synced only at checkpoints; the store sets FULL again after opening.
@Suite("Durability: every commit is synced")
struct DurabilityTests {
    @Test("the writer runs with synchronous = FULL, in WAL mode")
    func writerSyncsEveryCommit() async throws {
        let temporary = try TemporaryStore(onDisk: true)
        let (mode, level) = try await temporary.store.write { db in
            (
                try String.fetchOne(db, sql: "PRAGMA journal_mode"),
                try Int.fetchOne(db, sql: "PRAGMA synchronous")
            )
        }
        #expect(mode == "wal")
        // 2 is FULL; NORMAL (1) loses the commits since the last checkpoint on a power loss.
        #expect(level == 2)
    }
}
