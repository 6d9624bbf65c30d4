import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation
import Logging
import Testing

@testable import ContinuumSync

/// A record is never sent back to the peer it came from (PROTOCOL.md §7.8.8), even when the engine's store poll
/// finds it the moment its batch commits, before the session has counted it as held by the peer.
@Suite("Gossip never sends a record back to its source")
struct GossipSourceTests {
    /// The record bytes in the RECORDS and PUSH frames among `messages`.
    private static func recordBytes(in messages: [WireMessage]) -> [[UInt8]] {
        messages.flatMap { message -> [[UInt8]] in
            switch message {
            case .records(_, let records), .push(let records): records
            default: []
            }
        }
    }

    @Test("a batch found by gossip before its session counted it goes to the other peer, not back to its sender")
    func noEchoWhenThePollWinsTheRace() async throws {
        let us = try SyncFixtures.identity(1)
        let sender = try SyncFixtures.identity(2)
        let other = try SyncFixtures.identity(3)
        let (group, view) = SyncFixtures.group(of: us, members: [sender, other])
        let store = MemorySyncStorage(view: view)
        let engine = SyncFixtures.engine(store: store, us: us)
        // The store poll fires right after the commit: gossip reads the batch before `ingest` returns.
        await store.setAfterCommit { await engine.gossipNewRecords() }
        func session(with peer: NodeIdentity) -> PeerSession {
            SyncFixtures.session(on: engine, with: peer, group: group, view: view)
        }
        let fromSender = session(with: sender)
        let toOther = session(with: other)
        #expect(await engine.register(fromSender) == nil)
        #expect(await engine.register(toOther) == nil)

        let records = try SyncFixtures.profileLog(of: sender, 7)
        try await fromSender.receive(.records(live: true, records.map(\.bytes)))
        // A store runs beside the session's reads: wait for it.
        await fromSender.finishIntake()

        let backToSender = Self.recordBytes(in: fromSender.outbox.takeQueued(limit: .max))
        let toTheOther = Self.recordBytes(in: toOther.outbox.takeQueued(limit: .max))
        #expect(backToSender.isEmpty, "the sender's own records were sent back to it")
        #expect(toTheOther == records.map(\.bytes), "gossip did not find the batch (the race was not exercised)")
        // The pass that found the batch began while it was being stored, so its sources are still known; the next
        // pass, which begins after the store returned, forgets them once it has read the store to its end.
        let arrivals = await fromSender.scope.arrivals
        #expect(arrivals.snapshot.count == 7)
        await engine.gossipNewRecords()
        #expect(arrivals.snapshot.count == 0)
        await fromSender.close()
        await toOther.close()
    }
}

/// The ledger of a session's arrivals: a record is remembered from before its store until a gossip pass that began
/// after the store returned has ended.
@Suite("Arrivals: the sources of records until gossip has passed them")
struct ArrivalsTests {
    private static func id(_ n: UInt8) -> RecordID { RecordID(unchecked: Data(repeating: n, count: 32)) }

    @Test("remembered while storing, through a pass that began before the store returned, forgotten after the next")
    func lifecycle() {
        var arrivals = Arrivals()
        let (a, b, c) = (Self.id(1), Self.id(2), Self.id(3))
        arrivals.storing([a, b])
        #expect(arrivals.sent(among: [a, c]) == [a])
        // A pass that begins and ends while the store is under way forgets nothing: the commit may follow its read.
        arrivals.passBegins()
        arrivals.passEnded()
        #expect(arrivals.sent(among: [a, b, c]) == [a, b])
        arrivals.returned([a, b])
        #expect(arrivals.sent(among: [a, b]) == [a, b])
        arrivals.passBegins()
        #expect(arrivals.sent(among: [b]) == [b], "during the pass that reads them")
        arrivals.storing([c])
        arrivals.passEnded()
        #expect(arrivals.sent(among: [a, b, c]) == [c])
        #expect(arrivals.count == 1)
    }
}
