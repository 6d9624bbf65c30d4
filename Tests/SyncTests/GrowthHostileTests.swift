import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import ContinuumWire
import Foundation
import Testing

/// A protocol that grows: a raw peer of a later build sends records of kinds the node does not know (PROTOCOL.md
/// §2.8), which it stores and passes on and shows nowhere; optional messages, which it ignores (§7.3); and a HELLO of
/// a later version, to which it answers at its own (§7.4.1). No session ends. A peer of version 2 is refused with a
/// message naming both versions.
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
                // FOLLOWS (0x88) from a peer that is no device of the node's account: ignored, the follows unchanged.
                let followed = try await target.node.withStore { try await $0.followedPosts() }
                #expect(!followed.isEmpty, "the target follows its own post")
                let latest = Timestamp(milliseconds: WireLimits.maxFollowTime)
                try client.send(.follows(followed.map { FollowEntry(post: $0, following: false, changedAt: latest) }))
                try client.send(.ping(51))
                try await client.read(timeout: .seconds(10)) { $0.contains(.pong(51)) }
                #expect(client.received.contains(.pong(51)), "answered: \(client.received.map(\.typeName))")
                #expect(try await target.node.withStore { try await $0.followedPosts() } == followed)
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

        @Test("kinds 12 and 200 from a raw peer: stored, passed on to a third node, shown nowhere; no session ends")
        func kindsToComeKeptAndForwarded() async throws {
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
                try sign(.opaque(OpaqueReferences(code: 12, context: nil), payload: []))
                try sign(.profile(name: "Raw \(token.prefix(8))"))
                let client = try await RawClient.handshake(port: target.node.port, identity: identity)
                try client.send(.records(live: true, records.map(\.bytes)))
                try client.send(.ping(41))
                try await client.read(timeout: .seconds(10)) { $0.contains(.pong(41)) }
                #expect(client.received.contains(.pong(41)), "the session goes on: \(client.received.map(\.typeName))")

                // Every record of the log is stored by the node and passed on to its peer, the kinds to come whole
                // (§2.8): a node of a later version that knows them finds them on every node.
                for node in [target.node, target.peer] {
                    try await eventually("\(node.name) holds the four records of the raw peer's log, whole") {
                        let held = Set(try await node.withStore { try await $0.allRecordBytes() })
                        return records.allSatisfy { held.contains($0.bytes) }
                    }
                    let shown = try await node.cli("show", target.post, "--json")
                    #expect(!shown.contains(token), "\(node.name): \(shown)")
                    #expect(!shown.contains("\"count\""), "\(node.name) counts no reaction: \(shown)")
                }
                try client.send(.ping(42))
                try await client.read(timeout: .seconds(10)) { $0.contains(.pong(42)) }
                #expect(client.end == nil, "no ERROR: \(client.received.map(\.typeName))")
                #expect(!target.node.logText.contains("bad record"), "the node refused nothing")
                #expect(!target.peer.logText.contains("bad record"), "its peer refused nothing")
                try await target.expectStillServing()
            }
        }

        @Test("a peer of protocol version 2 is refused with a message naming both versions")
        func versionTwoPeer() async throws {
            try await HostileTests.withTarget { target in
                let client = try RawClient(port: target.node.port)
                var hello = RawClient.hello(for: NodeIdentity.generate())
                hello.protocolVersion = 2
                try client.send(.hello(hello))
                let error = try await client.expectRefusal(.unsupportedVersion)
                #expect(
                    error?.message
                        == "the peer speaks protocol version 2; this node speaks version 3, whose records (reactions, "
                        + "kinds to come) a node of version 2 cannot keep: upgrade the peer's continuum-node"
                )
                try await target.expectLogged("protocol version 2")
                try await target.expectUnchanged()
                try await target.expectStillServing()
            }
        }
    }
}
