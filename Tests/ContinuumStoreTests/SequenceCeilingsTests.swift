import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Logging
import Testing

/// `mayHold`: a session asks it before looking up records a peer sent; false must mean "holds none".
@Suite("Sequence ceilings: which records a store may hold, without a query")
struct SequenceCeilingsTests {
    @Test("raised by each write: up to a log's last record stored, and for no log not stored")
    func raisedByWrites() async throws {
        var factory = RecordFactory(authorCount: 2, seed: 4)
        let temporary = try TemporaryStore()
        let (alice, bob) = (factory.authors[0].author, factory.authors[1].author)
        #expect(!temporary.store.mayHold(alice, from: 1))
        let first = (0..<3).map { _ in factory.post(by: 0) }
        _ = try await temporary.store.ingest(first)
        #expect(temporary.store.mayHold(alice, from: 1))
        #expect(temporary.store.mayHold(alice, from: 3))
        #expect(!temporary.store.mayHold(alice, from: 4))
        #expect(!temporary.store.mayHold(bob, from: 1))
        // A record stored out of order (4 and 5 missing) raises the ceiling to it: 6 may be held, 7 is not.
        let later = (0..<3).map { _ in factory.post(by: 0) }
        _ = try await temporary.store.ingest([later[2]])
        #expect(temporary.store.mayHold(alice, from: 6))
        #expect(!temporary.store.mayHold(alice, from: 7))
    }

    @Test("read at open; rows another store instance wrote are seen at this one's next write")
    func openAndOtherWriters() async throws {
        var factory = RecordFactory(authorCount: 2, seed: 5)
        let temporary = try TemporaryStore(onDisk: true)
        let (alice, bob) = (factory.authors[0].author, factory.authors[1].author)
        _ = try await temporary.store.ingest((0..<2).map { _ in factory.post(by: 0) })
        // Another process (here, another instance on the same file) stores Bob's first record.
        let other = try ContinuumStore.open(temporary.directory, logger: Logger(label: "test"))
        _ = try await other.ingest([factory.post(by: 1)])
        #expect(other.mayHold(alice, from: 2), "read at open")
        #expect(other.mayHold(bob, from: 1))
        // Not seen yet by the first instance: a hint too low costs a verification, never a wrong answer.
        #expect(!temporary.store.mayHold(bob, from: 1))
        _ = try await temporary.store.ingest([factory.post(by: 0)])
        #expect(temporary.store.mayHold(bob, from: 1), "seen at this store's next write")
        #expect(temporary.store.mayHold(alice, from: 3))
        try other.close()
    }
}
