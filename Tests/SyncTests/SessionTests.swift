import ContinuumCore
import ContinuumStore
import ContinuumWire
import Foundation
import Testing

/// One session per pair of nodes (PROTOCOL.md §7.8.4), seen from a raw plaintext peer.
@Suite("Sessions: one per pair of nodes", .serialized)
struct SessionTests {
    @Test("a session replaced by one that wins the tie-break is told ERROR duplicate session, then closed")
    func replacedSessionIsTold() async throws {
        let node = try await TestNode("node")
        defer { node.remove() }
        try await node.cli("init", "--name", "Node")
        let nodeID = AuthorID(hex: try await node.nodeID())!
        // The connection dialled by the smaller id is kept: be smaller than the node.
        var identity = NodeIdentity.generate()
        while !(identity.author < nodeID) { identity = NodeIdentity.generate() }
        let listener = try RawListener()
        // A loaded machine may take seconds from the node dialling us to this test reading the connection: a long
        // handshake timeout, so that the node does not give up on us first.
        try await node.start(extra: [
            "--insecure-plaintext", "--peer", "127.0.0.1:\(listener.port)", "--handshake-timeout-ms", "60000",
        ])

        // 1. The node dials us: a session that the node dialled.
        let dialled = try await listener.accept(timeout: .seconds(30))
        try await dialled.establish(identity)
        #expect(dialled.received.contains { if case .clock = $0 { true } else { false } }, "\(dialled.received)")

        // 2. We dial the node as the same identity: our connection wins, the node's own is replaced.
        let ours = try await RawClient.handshake(port: node.port, identity: identity)
        let error = try await dialled.expectRefusal(.duplicateSession)
        #expect(error?.message == "a newer session with this node replaces this one")
        // The new session is the one that lives: it answers a round.
        try ours.send(.clock(round: 1, VectorClock()))
        try await ours.read(timeout: .seconds(10)) { $0.contains(.done(round: 1)) }
        #expect(ours.received.contains(.done(round: 1)))
        #expect(ours.end == nil, "the winning connection stays open")
        ours.close()
        try await node.stop()
    }
}
