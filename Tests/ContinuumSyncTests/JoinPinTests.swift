import ContinuumCore
import ContinuumWire
import Foundation
import Logging
import Testing

@testable import ContinuumSync

/// A session on which a join completed stays outside the overlay's bound only until the joiner holds the group's
/// history: the rule itself from hand-written inputs, then engines joined in memory, where the session counts in the
/// bound (and may be ended for room, refuses strangers at the bound) once the first exchange is complete both ways,
/// while a `--peer HOST:PORT` session stays pinned.
@Suite("Join sessions: pinned until the joiner holds the group's history")
struct JoinPinTests {
    @Test("an address's session is always pinned, a join's only until the first exchange is complete both ways")
    func rule() {
        #expect(AdmissionRules.pinned(.none, caughtUp: false) == false)
        #expect(AdmissionRules.pinned(.none, caughtUp: true) == false)
        #expect(AdmissionRules.pinned(.address, caughtUp: false) == true)
        #expect(AdmissionRules.pinned(.address, caughtUp: true) == true, "a person asked for it")
        #expect(AdmissionRules.pinned(.join, caughtUp: false) == true)
        #expect(AdmissionRules.pinned(.join, caughtUp: true) == false)

        #expect(AdmissionRules.caughtUp(ourRoundFinished: true, theirRoundAnswered: true, unacknowledged: 0))
        #expect(
            !AdmissionRules.caughtUp(ourRoundFinished: false, theirRoundAnswered: true, unacknowledged: 0),
            "the peer's DONE of our round has not come: this node may lack some of its records"
        )
        #expect(
            !AdmissionRules.caughtUp(ourRoundFinished: true, theirRoundAnswered: false, unacknowledged: 0),
            "the peer's round is not answered yet"
        )
        #expect(
            !AdmissionRules.caughtUp(ourRoundFinished: true, theirRoundAnswered: true, unacknowledged: 1),
            "a RECORDS frame sent is not stored by the peer yet"
        )
    }

    /// Group 1's view: `founder` (an admin, the inviter) and the other members.
    private static func view(_ group: GroupID, founder: NodeIdentity, members: [NodeIdentity]) -> MembershipView {
        var logs: [AuthorID: MembershipView.Log] = [:]
        for member in members {
            logs[member.author] = .init(
                group: group,
                node: member.node,
                admin: member.author == founder.author,
                removedThrough: nil
            )
        }
        return MembershipView(
            groups: [group: .init(id: group, name: "g", open: false, network: false, log: founder.author)],
            logs: logs
        )
    }

    /// An engine over a store in memory holding `held`, keeping at most `maxPeers` sessions, with no periodic rounds.
    private static func engine(
        seed: UInt8,
        view: MembershipView,
        held: [VerifiedRecord],
        maxPeers: Int
    ) async throws -> (SyncEngine, MemorySyncStorage) {
        let store = MemorySyncStorage(view: view)
        for record in held {
            await store.hold(
                record.bytes,
                id: record.id,
                author: record.header.author,
                sequence: record.header.sequence
            )
        }
        var configuration = SyncConfiguration()
        configuration.antiEntropyInterval = nil
        configuration.maxPeers = maxPeers
        let engine = SyncEngine(
            store: store,
            identity: try SyncFixtures.identity(seed),
            configuration: configuration,
            logger: InMemoryLink.quiet
        )
        return (engine, store)
    }

    /// Why the session with `peer` ended, by the first `peerLeft` of it in `events`; nil when none came within
    /// `timeout` (which only bounds a broken run).
    private static func left(
        _ peer: AuthorID,
        _ events: AsyncStream<SyncEvent>,
        timeout: Duration = .seconds(90)
    ) async -> String? {
        await withTaskGroup(of: String?.self) { group in
            group.addTask {
                for await event in events {
                    if case .peerLeft(let who, let reason) = event, who == peer { return reason }
                }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    @Test("before the exchange a join's session is outside the bound: it is not ended, and a stranger still fits")
    func pinnedBeforeTheExchange() async throws {
        let (inviter, joiner, stranger) = (
            try SyncFixtures.identity(1), try SyncFixtures.identity(2), try SyncFixtures.identity(3)
        )
        let group = GroupID(founder: inviter.author)
        let view = Self.view(group, founder: inviter, members: [inviter, joiner, stranger])
        let (engine, _) = try await Self.engine(seed: 1, view: view, held: [], maxPeers: 1)
        // Registered and never driven: its first exchange never completes.
        let joined = PeerSession(
            peer: joiner.author,
            hello: Hello(nonce: .random(), node: joiner.author),
            initiator: false,
            pin: .join,
            host: "127.0.0.1",
            engine: engine,
            scope: SessionScope(peer: joiner.node, groups: [group], view: view),
            clocks: (nil, nil),
            logger: InMemoryLink.quiet
        )
        #expect(await engine.register(joined) == nil)
        #expect(await engine.overlayPeers() == [])
        await engine.dismiss(joiner.author, WireError(.busy, "room"))
        #expect(await engine.connectedPeers() == [joiner.author], "a pinned session is not ended for room")
        let other = SyncFixtures.session(on: engine, with: stranger, group: group, view: view)
        #expect(await engine.register(other) == nil, "the join's session does not fill the bound of 1")
        #expect(await engine.overlayPeers() == [stranger.author])
    }

    @Test("once the joiner holds the history, the join's session counts on both sides: strangers are busy, it can end")
    func countedAfterTheExchange() async throws {
        let (inviter, joiner, stranger) = (
            try SyncFixtures.identity(1), try SyncFixtures.identity(2), try SyncFixtures.identity(3)
        )
        let group = GroupID(founder: inviter.author)
        let view = Self.view(group, founder: inviter, members: [inviter, joiner, stranger])
        // The group's history: 5 records of the inviter's log; the joiner has signed its name in its new log.
        let history = try SyncFixtures.profileLog(of: inviter, 5)
        let name = try SyncFixtures.profileLog(of: joiner, 1)
        let (inviting, inviterStore) = try await Self.engine(seed: 1, view: view, held: history, maxPeers: 1)
        let (joining, joinerStore) = try await Self.engine(seed: 2, view: view, held: name, maxPeers: 1)

        let link = try await InMemoryLink.connect(joining, to: inviting, sharing: [group], pins: (.join, .join))
        try await SyncFixtures.waitUntil(
            "both sides count the join's session",
            [link.deliveries(to: link.dialler.engine), link.deliveries(to: link.listener.engine)]
        ) {
            !link.dialler.session.pinned && !link.listener.session.pinned
        }
        #expect(await joinerStore.clock() == VectorClock([inviter.author: 5, joiner.author: 1]))
        #expect(await inviterStore.clock() == VectorClock([inviter.author: 5, joiner.author: 1]))
        #expect(await inviting.overlayPeers() == [joiner.author])
        #expect(await joining.overlayPeers() == [inviter.author])

        // At the bound of 1, a stranger that is not a neighbour is refused now.
        let other = SyncFixtures.session(on: inviting, with: stranger, group: group, view: view)
        let refusal = try #require(await inviting.register(other))
        #expect(refusal.code == .busy)

        // The overlay ends it like any session with a non-neighbour; the joiner's side ends at the ERROR.
        let (joinerEvents, inviterEvents) = (await joining.events(), await inviting.events())
        await inviting.dismiss(joiner.author, WireError(.busy, "room for a neighbour"))
        #expect(await Self.left(inviter.author, joinerEvents) == "the peer refused: busy: room for a neighbour")
        // This side closed it, and says why (not "closed by the peer").
        #expect(await Self.left(joiner.author, inviterEvents) == "busy: room for a neighbour")
        #expect(await joining.connectedPeers() == [])
        #expect(await inviting.connectedPeers() == [])
        await link.close()
    }

    @Test("a session dialled to keep an address connected stays pinned after the exchange; the other side counts it")
    func addressStaysPinned() async throws {
        let (one, two) = (try SyncFixtures.identity(1), try SyncFixtures.identity(2))
        let group = GroupID(founder: one.author)
        let view = Self.view(group, founder: one, members: [one, two])
        let records = try SyncFixtures.profileLog(of: one, 3)
        let (a, _) = try await Self.engine(seed: 1, view: view, held: records, maxPeers: 1)
        let (b, _) = try await Self.engine(seed: 2, view: view, held: [], maxPeers: 1)
        let link = try await InMemoryLink.connect(b, to: a, sharing: [group], pins: (.address, .none))
        // Both first rounds are done, and B sent no records: a join's session would count on B's side by now.
        #expect(await link.opened(), "a first round did not finish")
        #expect(await b.session(for: one.author) != nil)
        #expect(link.dialler.session.pinned, "a person asked for this one")
        #expect(await a.overlayPeers() == [two.author], "the other side counts it")
        #expect(await b.overlayPeers() == [])
        await b.dismiss(one.author, WireError(.busy, "room"))
        #expect(await b.connectedPeers() == [one.author])
        await link.close()
    }
}
