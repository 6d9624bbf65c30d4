import ContinuumCore
import ContinuumTestSupport
import Foundation
import Logging
import Testing

@testable import ContinuumStore

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

    @Test("read at open from each log's last record: out of order, several logs, the next write's rows on top")
    func readAtOpenPerLog() async throws {
        var factory = RecordFactory(authorCount: 4, seed: 6)
        let temporary = try TemporaryStore(onDisk: true)
        let authors = factory.authors.map(\.author)
        // Alice's 1, 2 and 6 (3 to 5 not here), Bob's 1 to 4, Carol's 1; Dave's none until after the open.
        let alices = (0..<6).map { _ in factory.post(by: 0) }
        let bobs = (0..<4).map { _ in factory.post(by: 1) }
        _ = try await temporary.store.ingest([alices[5], bobs[0]] + alices[0..<2] + bobs[1...] + [factory.post(by: 2)])
        let opened = try ContinuumStore.open(temporary.directory, logger: Logger(label: "test"))
        for (author, last, name) in [(authors[0], 6, "Alice"), (authors[1], 4, "Bob"), (authors[2], 1, "Carol")] {
            #expect(opened.mayHold(author, from: UInt64(last)), "\(name)'s last record, read at open")
            #expect(!opened.mayHold(author, from: UInt64(last + 1)), "nothing of \(name)'s above it")
        }
        #expect(!opened.mayHold(authors[3], from: 1))
        #expect(opened.ceilings.lastRowid == 8, "the next raise starts above the 8 records read at open")
        // The open's raise set where the next one starts: a write's new rows raise the ceilings, the old ones stay.
        _ = try await opened.ingest([factory.post(by: 3), factory.post(by: 1)])
        #expect(opened.mayHold(authors[3], from: 1))
        #expect(!opened.mayHold(authors[3], from: 2))
        #expect(opened.mayHold(authors[1], from: 5))
        #expect(opened.mayHold(authors[0], from: 6))
        #expect(!opened.mayHold(authors[0], from: 7))
        try opened.close()
    }

    @Test("a store opened empty: the first write's rows are read, all of them")
    func openedEmpty() async throws {
        var factory = RecordFactory(authorCount: 2, seed: 7)
        let temporary = try TemporaryStore(onDisk: true)
        let opened = try ContinuumStore.open(temporary.directory, logger: Logger(label: "test"))
        #expect(!opened.mayHold(factory.authors[0].author, from: 1))
        _ = try await opened.ingest((0..<3).map { _ in factory.post(by: 0) } + [factory.post(by: 1)])
        #expect(opened.mayHold(factory.authors[0].author, from: 3))
        #expect(!opened.mayHold(factory.authors[0].author, from: 4))
        #expect(opened.mayHold(factory.authors[1].author, from: 1))
        try opened.close()
    }
}
