import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import ContinuumWire
import Foundation
import Testing

/// A protocol that grows: a raw peer of a later build sends records of kinds the node does not know (PROTOCOL.md
/// §2.8), which it keeps, passes on to its other peers and shows nowhere; optional messages, which it ignores (§7.3);
/// and a HELLO of a later version, to which it answers at its own (§7.4.1). No session ends.
extension HostileTests {
    /// Run inside `HostileTests`, one test at a time with it, so that the real nodes of both do not compete for
    /// the machine's two cores.
    @Suite("A protocol that grows: unknown kinds, optional messages, later versions", .serialized)
    struct GrowthHostileTests {
        @Test("a peer of a later version speaks this one's; its optional messages, 3 bytes and 1 MiB, are ignored")
        func laterPeerAndOptionalMessages() async throws {
            try await HostileTests.withTarget { target in
                let identity = NodeIdentity.generate()
                let client = try await RawClient.handshake(
                    port: target.node.port,
                    identity: identity,
                    version: WireLimits.protocolVersion + 1
                )
                try client.send(.optional(type: 0x90, payload: [1, 2, 3]))
                try client.send(.optional(type: 0xfe, payload: [UInt8](repeating: 0x5a, count: 1 << 20)))
                try client.send(.ping(51))
                try await client.read(timeout: .seconds(10)) { $0.contains(.pong(51)) }
                #expect(client.received.contains(.pong(51)), "answered: \(client.received.map(\.typeName))")
                // Records flow in the session: the peer's self-add is stored.
                let join = try RawClient.selfAdd(identity)
                try client.send(.records(live: true, [join.bytes]))
                try await eventually("the node stores the later peer's record") {
                    try client.send(.ping(52))
                    return try await target.node.withStore { try await $0.allRecordBytes() }.contains(join.bytes)
                }
                #expect(client.end == nil, "no ERROR: \(client.received.map(\.typeName))")
                try await target.expectStillServing()
            }
        }

        @Test("kinds 8 and 200, with and without content, beside a post: kept and passed on, the session goes on")
        func storedAndForwarded() async throws {
            try await HostileTests.withTarget { target in
                let identity = NodeIdentity.generate()
                let token = UUID().uuidString.lowercased()
                let post = try #require(PostID(hex: target.post))
                let join = try RawClient.selfAdd(identity)
                var records = [join]
                func sign(_ body: RecordBody) throws {
                    let last = records[records.count - 1]
                    records.append(
                        try identity.sign(
                            RecordContent(
                                author: identity.author,
                                sequence: last.header.sequence + 1,
                                previous: last.id,
                                createdAt: .now(),
                                body: body
                            )
                        )
                    )
                }
                try sign(
                    .opaque(
                        OpaqueReferences(code: 200, context: post, data: [1, 2, 3]),
                        payload: Array("a future kind's content \(token)".utf8)
                    )
                )
                try sign(.opaque(OpaqueReferences(code: 8, context: nil), payload: []))
                try sign(.profile(name: "Raw \(token.prefix(8))"))
                let client = try await RawClient.handshake(port: target.node.port, identity: identity)
                try client.send(.records(live: true, records.map(\.bytes)))
                try client.send(.ping(41))
                try await client.read(timeout: .seconds(10)) { $0.contains(.pong(41)) }
                #expect(client.received.contains(.pong(41)), "the session goes on: \(client.received.map(\.typeName))")

                // Kept as received, and passed on, whole, to the good peer.
                for node in [target.node, target.peer] {
                    try await eventually("\(node.name) holds the four records, whole") {
                        let held = Set(try await node.withStore { try await $0.allRecordBytes() })
                        return records.allSatisfy { held.contains($0.bytes) }
                    }
                    // Shown nowhere: the feed and the post read as before, no text of them anywhere.
                    let feed = try await node.cli("feed", "--json")
                    #expect(!feed.contains(records[1].id.hex) && !feed.contains(records[2].id.hex))
                    let shown = try await node.cli("show", target.post, "--json")
                    #expect(shown.contains("\"commentCount\" : 0"), "\(node.name): \(shown)")
                    #expect(!shown.contains(token))
                }
                // The raw peer's clock entry counts all four: nothing is held back behind them.
                let clock = try await target.peer.clock()
                #expect(clock[identity.author] == 4)
                try client.send(.ping(42))
                try await client.read(timeout: .seconds(10)) { $0.contains(.pong(42)) }
                #expect(client.end == nil, "no ERROR: \(client.received.map(\.typeName))")
                #expect(!target.node.logText.contains("bad record"), "the node refused nothing")
                try await target.expectStillServing()

                // The target's own post is deleted: the kind-200 record that goes with it is erased on both nodes.
                try await target.node.cli("delete", target.post)
                for node in [target.node, target.peer] {
                    try await eventually("\(node.name) erased the content that went with the post") {
                        let held = Set(try await node.withStore { try await $0.allRecordBytes() })
                        return held.contains(records[1].record.headerBytes) && !held.contains(records[1].bytes)
                    }
                }
            }
        }
    }
}
