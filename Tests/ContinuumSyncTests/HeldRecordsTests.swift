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
    /// This node and a sender, both members of one group, over an in-memory store; and a newcomer, a member who
    /// joined a moment ago and whose member record has not come here yet.
    struct Members {
        let us: NodeIdentity
        let sender: NodeIdentity
        let newcomer: NodeIdentity
        let group: GroupID
        let view: MembershipView
        let store: MemorySyncStorage

        init() throws {
            us = try SyncFixtures.identity(1)
            sender = try SyncFixtures.identity(2)
            newcomer = try SyncFixtures.identity(3)
            (group, view) = SyncFixtures.group(of: us, members: [sender])
            store = MemorySyncStorage(view: view)
        }

        /// A session with the sender, registered with an engine over the store.
        func session() async -> PeerSession {
            await SyncFixtures.registeredSession(store: store, us: us, peer: sender, view: view, group: group)
        }

        /// A session with the sender, its outbox uncorked and what it queues watched (cancel the watch's writer).
        func watchedSession() async -> (PeerSession, Outgoing) {
            let session = await session()
            session.outbox.uncork()
            return (session, Outgoing(session))
        }
    }

    /// What a session queues, each message told as it leaves the outbox, with the rounds (CLOCK or CLOCK_SINCE)
    /// and the REQUESTs among them counted.
    struct Outgoing {
        let sent: AsyncStream<WireMessage>
        let clocks = NIOLockedValueBox(0)
        let requests = NIOLockedValueBox<[[LogRange]]>([])
        let writer: Task<Void, Never>

        init(_ session: PeerSession) {
            let (sent, sending) = AsyncStream<WireMessage>.makeStream()
            self.sent = sent
            let (clocks, requests) = (clocks, requests)
            writer = Task {
                while let message = await session.outbox.next() {
                    if case .clock = message { clocks.withLockedValue { $0 += 1 } }
                    if case .clockSince = message { clocks.withLockedValue { $0 += 1 } }
                    if case .request(let ranges) = message { requests.withLockedValue { $0.append(ranges) } }
                    sending.yield(message)
                }
                sending.finish()
            }
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

    @Test("a live record of a log not known here is held back, and asked for again at once, by position")
    func heldBackLiveRecordAsksAgain() async throws {
        // The sender is a member; the author of the record it relays (a member who joined a moment ago, whose
        // member record has not come here yet) is not known.
        let members = try Members()
        let (store, newcomer) = (members.store, members.newcomer)
        let record = try SyncFixtures.profileLog(of: newcomer, 1)[0]
        // What the session queues (the ACK, then the round's CLOCK and the REQUEST), each told as it leaves.
        let (session, outbox) = await members.watchedSession()
        defer { outbox.writer.cancel() }
        let (sent, clocks, requests) = (outbox.sent, outbox.clocks, outbox.requests)

        try await session.receive(.records(live: true, [record.bytes]))
        await session.finishIntake()
        #expect(await store.ingested.isEmpty, "a record of a log not known here was stored")
        // The sender sent it down this connection already: only a REQUEST of its position brings it again.
        let held = [LogRange(author: newcomer.author, range: 1...1)]
        try await SyncFixtures.waitUntil("a round of ours, then a REQUEST for the record held back", sent) {
            clocks.withLockedValue { $0 } >= 1 && requests.withLockedValue { $0 }.contains(held)
        }
        await session.close()
    }

    @Test("a record held back from a round's batch is asked for again, by position, once its log is known by any way")
    func heldBackCatchUpRecordAsksAgainOnceKnown() async throws {
        // The sender answers a round of ours with a record of a member whose member record has not come here yet;
        // that record then comes another way (another peer, a write here): the view changes, and the engine reads
        // it again.
        let members = try Members()
        let (store, newcomer) = (members.store, members.newcomer)
        // Its second record, without the first (as a round's answer to a HAVE may bring it): the peer is not seen to
        // hold the first, so nothing else asks for it.
        let record = try SyncFixtures.profileLog(of: newcomer, 2)[1]
        let (session, outbox) = await members.watchedSession()
        defer { outbox.writer.cancel() }
        let (sent, clocks, requests) = (outbox.sent, outbox.clocks, outbox.requests)
        let round = try #require(await session.startRound())
        try await SyncFixtures.waitUntil("our round's CLOCK is sent", sent) { clocks.withLockedValue { $0 } == 1 }

        try await session.receive(.records(live: false, [record.bytes]))
        await session.finishIntake()
        #expect(await store.ingested.isEmpty, "a record of a log not known here was stored")
        try await session.receive(.done(round: round))
        #expect(await session.waitForRound(round, timeout: .seconds(90)), "the round did not finish")
        #expect(clocks.withLockedValue { $0 } == 1, "a round's batch that made no log known asked again")
        #expect(requests.withLockedValue { $0 }.isEmpty, "a round's batch that made no log known asked again")

        let (group, view) = SyncFixtures.group(of: members.us, members: [members.sender, newcomer])
        #expect(group == members.group)
        await store.setView(view)
        await session.engine.refreshMembership()
        let held = [LogRange(author: newcomer.author, range: 2...2)]
        try await SyncFixtures.waitUntil("a round of ours, then a REQUEST for the record held back", sent) {
            clocks.withLockedValue { $0 } >= 2 && requests.withLockedValue { $0 } == [held]
        }
        await session.close()
    }

    @Test("held positions are asked for as ranges of consecutive sequences, each once, up to a limit")
    func heldPositionsAsRanges() throws {
        let (one, other) = (try SyncFixtures.identity(2).author, try SyncFixtures.identity(3).author)
        func ref(_ author: AuthorID, _ sequence: UInt64) -> RecordRef {
            RecordRef(
                id: RecordID(unchecked: Data(repeating: UInt8(sequence % 256), count: 32)),
                author: author,
                sequence: sequence
            )
        }
        var held = HeldPositions()
        held.insert([ref(one, 3), ref(one, 1), ref(other, 7), ref(one, 2), ref(one, 5), ref(one, 2)])
        #expect(held.count == 5)
        let expected = [
            one: [LogRange(author: one, range: 1...3), LogRange(author: one, range: 5...5)],
            other: [LogRange(author: other, range: 7...7)],
        ]
        #expect(
            held.takeRanges() == (one < other ? expected[one]! + expected[other]! : expected[other]! + expected[one]!)
        )
        #expect(held.isEmpty && held.takeRanges().isEmpty)
        held.insert((1...UInt64(HeldPositions.limit + 10)).map { ref(one, $0 * 2) })
        #expect(held.count == HeldPositions.limit)
        #expect(held.takeRanges().count == HeldPositions.limit)
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
