import ContinuumCore
import ContinuumStore
import ContinuumWire
import Foundation
import Testing

/// Rounds after the first send only what changed (CLOCK_SINCE), also across reconnects; a peer that lost the
/// base says CLOCK_UNKNOWN and gets the whole clock. Driven by a raw plaintext peer, so that every frame is seen.
@Suite("Clock deltas between peers that met before", .serialized)
struct ClockDeltaTests {
    @Test("a reconnect sends CLOCK_SINCE naming the clock sent last time; CLOCK_UNKNOWN gets the whole clock")
    func reconnect() async throws {
        let node = try await TestNode("node")
        defer { node.remove() }
        try await node.cli("post", node.fixture("lake.png"), "--caption", "one")
        try await node.start(extra: ["--insecure-plaintext", "--anti-entropy-interval", "600"])
        let peer = NodeIdentity.generate()

        // First session: nothing exchanged before, so whole clocks both ways.
        let first = try await RawClient.handshake(port: node.port, identity: peer)
        guard case .clock(_, let sent)? = first.received.first(where: { if case .clock = $0 { true } else { false } })
        else {
            Issue.record("no CLOCK first: \(first.received.map(\.typeName))")
            return
        }
        #expect(sent == (try await node.clock()))
        let ours = VectorClock()
        try first.send(.clock(round: 1, ours))
        try await first.read(timeout: .seconds(10)) { $0.contains(.done(round: 1)) }
        #expect(first.received.contains(.done(round: 1)))
        first.close()

        // The node writes one more record while apart.
        try await node.cli("comment", try #require(try await node.postIDs().first).hex, "two")
        let now = try await node.clock()

        // Second session: the node names the clock it sent last time and lists only the entry that changed.
        let second = try await RawClient.handshake(port: node.port, identity: peer)
        let since = second.received.compactMap { message -> (UInt32, ClockDigest, VectorClock)? in
            if case .clockSince(let round, let base, let clock) = message { (round, base, clock) } else { nil }
        }.first
        let (round, base, changes) = try #require(since, "CLOCK_SINCE: \(second.received.map(\.typeName))")
        #expect(base == WireCodec.clockDigest(sent))
        // The one log that changed (its group log); the node's account log (PROTOCOL.md §2.10) did not.
        #expect(changes.heads.count == 1 && now.heads.count == 2)
        #expect(changes.heads.allSatisfy { now.heads[$0.key] == $0.value }, "\(changes) against \(now)")

        // Our own round as a change to the clock we sent last time: answered like a CLOCK.
        try second.send(.clockSince(round: 2, base: WireCodec.clockDigest(ours), VectorClock()))
        try await second.read(timeout: .seconds(10)) { $0.contains(.done(round: 2)) }
        let offered = second.received.compactMap { message -> UInt64? in
            if case .offer(2, let records, _) = message { records } else { nil }
        }
        #expect(offered == [now.heads.values.reduce(0, +)], "the node offers every record it holds")

        // A base the node does not hold: CLOCK_UNKNOWN for that round.
        try second.send(
            .clockSince(round: 3, base: ClockDigest(bytes: [UInt8](repeating: 7, count: 32))!, VectorClock())
        )
        try await second.read(timeout: .seconds(10)) { $0.contains(.clockUnknown(round: 3)) }
        #expect(second.received.contains(.clockUnknown(round: 3)))

        // We claim not to hold the node's base: it sends the round's whole clock.
        try second.send(.clockUnknown(round: round))
        try await second.read(timeout: .seconds(10)) { $0.contains(.clock(round: round, now)) }
        #expect(second.received.contains(.clock(round: round, now)))
        second.close()
        try await node.stop()
    }

    @Test("a CLOCK_SINCE that arrives with the HELLO, while the node is still loading its clocks, is matched")
    func sinceRightAfterHello() async throws {
        let node = try await TestNode("node")
        defer { node.remove() }
        try await node.cli("post", node.fixture("lake.png"), "--caption", "one")
        try await node.start(extra: ["--insecure-plaintext", "--anti-entropy-interval", "600"])
        let peer = NodeIdentity.generate()
        let ours = VectorClock()
        let first = try await RawClient.handshake(port: node.port, identity: peer)
        try first.send(.clock(round: 1, ours))
        try await first.read(timeout: .seconds(10)) { $0.contains(.done(round: 1)) }
        first.close()
        for attempt in 0..<20 {
            var client = try RawClient(port: node.port)
            for _ in 0..<100 {
                // MEMBERSHIP and our round's CLOCK_SINCE in one write, right after the HELLOs: the node reads the
                // second before its own first round has loaded the clocks of this peer.
                let hello = RawClient.hello(for: peer)
                try client.send(.hello(hello))
                try await client.readHello(timeout: .seconds(10))
                guard case .hello(let theirs)? = client.received.first else {
                    Issue.record("no HELLO: \(client.received.map(\.typeName))")
                    return
                }
                try client.send(
                    WireCodec.encode(.membership(RawClient.membership(for: peer, ours: hello, theirs: theirs)))
                        + WireCodec.encode(.clockSince(round: 7, base: WireCodec.clockDigest(ours), VectorClock()))
                )
                try await client.read(timeout: .seconds(10)) { messages in
                    messages.contains(.done(round: 7)) || messages.contains(.clockUnknown(round: 7))
                        || messages.contains { if case .error = $0 { true } else { false } }
                }
                // The node may not have seen the previous connection end yet: try again in a moment.
                guard
                    client.received.contains(where: {
                        if case .error(let e) = $0 { e.code == .duplicateSession } else { false }
                    })
                else { break }
                client.close()
                try await Task.sleep(for: .milliseconds(20))
                client = try RawClient(port: node.port)
            }
            #expect(!client.received.contains(.clockUnknown(round: 7)), "attempt \(attempt)")
            #expect(client.received.contains(.done(round: 7)), "attempt \(attempt): \(client.received.map(\.typeName))")
            client.close()
        }
        try await node.stop()
    }
}
