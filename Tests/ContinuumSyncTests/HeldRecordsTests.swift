import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import ContinuumSync

/// A RECORDS frame's records that this node holds already are found before verification and never verified nor
/// stored again; a record at a held sequence that differs (a fork) is verified and stored as usual.
@Suite("Held records are dropped before verification")
struct HeldRecordsTests {
    /// This node and a sender, both members of one group, over an in-memory store.
    struct Members {
        let us: NodeIdentity
        let sender: NodeIdentity
        let group: GroupID
        let view: MembershipView
        let store: MemorySyncStorage

        init() throws {
            us = try SyncFixtures.identity(1)
            sender = try SyncFixtures.identity(2)
            (group, view) = SyncFixtures.group(of: us, members: [sender])
            store = MemorySyncStorage(view: view)
        }

        /// A session with the sender, registered with an engine over the store.
        func session() async -> PeerSession {
            await SyncFixtures.registeredSession(store: store, us: us, peer: sender, view: view, group: group)
        }
    }

    @Test("held bytes are never verified (a broken copy held is acknowledged); a fork is verified and stored")
    func heldDroppedForkKept() async throws {
        let members = try Members()
        let (sender, store) = (members.sender, members.store)
        let records = try SyncFixtures.profileLog(of: sender, 3)
        // Held: records 1 and 2 as signed, and at 3 a copy with its last byte flipped (its content no longer
        // matches its header). Only a node that parsed or verified held records would notice.
        for record in records.prefix(2) {
            await store.hold(record.bytes, id: record.id, author: sender.author, sequence: record.header.sequence)
        }
        var broken = records[2].bytes
        broken[broken.count - 1] ^= 0xFF
        await store.hold(broken, id: records[2].id, author: sender.author, sequence: 3)
        let session = await members.session()

        try await session.receive(.records(live: true, [records[0].bytes, records[1].bytes, broken]))
        // A store runs beside the session's reads: wait for it.
        await session.finishIntake()
        #expect(await store.ingested.isEmpty, "nothing stored: every record was held")
        let acks = session.outbox.takeQueued(limit: .max).filter { if case .ack = $0 { true } else { false } }
        #expect(acks == [.ack(VectorClock([sender.author: 3]))])
        #expect(await session.currentStats().recordsIn == 3)

        // Another record at sequence 2 (a fork): not the held bytes, so verified and handed to storage.
        let fork = try SyncFixtures.profileLog(of: sender, 2, name: "other")[1]
        try await session.receive(.records(live: true, [fork.bytes]))
        await session.finishIntake()
        #expect(await store.ingested.map { $0.map(\.id) } == [[fork.id]])
        await session.close()
    }

    @Test("a live record of a log not known here is held back, and a round of ours asks for it at once")
    func heldBackLiveRecordAsksAgain() async throws {
        // The sender is a member; the author of the record it relays (a member who joined a moment ago, whose
        // member record has not come here yet) is not known.
        let members = try Members()
        let store = members.store
        let newcomer = try SyncFixtures.identity(3)
        let record = try SyncFixtures.profileLog(of: newcomer, 1)[0]
        let session = await members.session()
        session.outbox.uncork()

        try await session.receive(.records(live: true, [record.bytes]))
        await session.finishIntake()
        #expect(await store.ingested.isEmpty, "a record of a log not known here was stored")
        // What the session queues (the ACK, then the round's CLOCK), each told as it leaves the outbox.
        let (sent, sending) = AsyncStream<WireMessage>.makeStream()
        let clocks = NIOLockedValueBox(0)
        let writer = Task {
            while let message = await session.outbox.next() {
                if case .clock = message { clocks.withLockedValue { $0 += 1 } }
                if case .clockSince = message { clocks.withLockedValue { $0 += 1 } }
                sending.yield(message)
            }
            sending.finish()
        }
        defer { writer.cancel() }
        try await SyncFixtures.waitUntil("a round of ours asks for the record held back", sent) {
            clocks.withLockedValue { $0 } >= 1
        }
        await session.close()
    }

    @Test("a record held back from a round's batch is asked for again once its log is known, by any way")
    func heldBackCatchUpRecordAsksAgainOnceKnown() async throws {
        // The sender answers a round of ours with a record of a member whose member record has not come here yet;
        // that record then comes another way (another peer, a write here): the view changes, and the engine reads
        // it again.
        let members = try Members()
        let store = members.store
        let newcomer = try SyncFixtures.identity(3)
        let record = try SyncFixtures.profileLog(of: newcomer, 1)[0]
        let session = await members.session()
        session.outbox.uncork()
        let (sent, sending) = AsyncStream<WireMessage>.makeStream()
        let clocks = NIOLockedValueBox(0)
        let writer = Task {
            while let message = await session.outbox.next() {
                if case .clock = message { clocks.withLockedValue { $0 += 1 } }
                if case .clockSince = message { clocks.withLockedValue { $0 += 1 } }
                sending.yield(message)
            }
            sending.finish()
        }
        defer { writer.cancel() }
        let round = try #require(await session.startRound())
        try await SyncFixtures.waitUntil("our round's CLOCK is sent", sent) { clocks.withLockedValue { $0 } == 1 }

        try await session.receive(.records(live: false, [record.bytes]))
        await session.finishIntake()
        #expect(await store.ingested.isEmpty, "a record of a log not known here was stored")
        try await session.receive(.done(round: round))
        #expect(await session.waitForRound(round, timeout: .seconds(90)), "the round did not finish")
        #expect(clocks.withLockedValue { $0 } == 1, "a round's batch that made no log known asked again")

        let (group, view) = SyncFixtures.group(of: members.us, members: [members.sender, newcomer])
        #expect(group == members.group)
        await store.setView(view)
        await session.engine.refreshMembership()
        try await SyncFixtures.waitUntil("a round of ours asks for the record held back", sent) {
            clocks.withLockedValue { $0 } >= 2
        }
        await session.close()
    }

    @Test("a record's author and sequence are read from their place in the header")
    func positionInHeader() throws {
        let sender = try SyncFixtures.identity(2)
        let record = try SyncFixtures.profileLog(of: sender, 2)[1]
        let position = try #require(PeerSession.position(of: record.bytes))
        #expect(position.0 == sender.author)
        #expect(position.1 == 2)
        #expect(PeerSession.position(of: Array(record.bytes.prefix(45))) == nil)
    }

    @Test("sorted sequence numbers are cut into runs without a gap")
    func runs() {
        let entries: [(sequence: UInt64, index: Int)] = [(1, 0), (2, 1), (2, 2), (3, 3), (7, 4), (9, 5), (10, 6)]
        #expect(PeerSession.runs(entries).map { $0.map(\.sequence) } == [[1, 2, 2, 3], [7], [9, 10]])
    }
}
