import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import ContinuumWire
import Foundation
import Testing

/// A protocol that grows: a raw peer of a later build sends records of kinds the node does not know (PROTOCOL.md
/// §2.8), which a version-2 session does not store or pass on; optional messages, which it ignores (§7.3); and a
/// HELLO of a later version, to which it answers at its own (§7.4.1). No session ends.
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

        @Test("kinds 8 and 200 in a version-2 session: not stored, not passed on, shown nowhere; the session goes on")
        func kindsToComeNotStored() async throws {
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

                // The self-add and the profile are stored and passed on; the kinds to come are neither (§2.8): a
                // build before them, on this LAN, would end its session on one.
                let kept = [records[0], records[3]]
                for node in [target.node, target.peer] {
                    try await eventually("\(node.name) holds the self-add and the profile") {
                        let held = Set(try await node.withStore { try await $0.allRecordBytes() })
                        return kept.allSatisfy { held.contains($0.bytes) }
                    }
                    let held = try await node.withStore { try await $0.allRecordBytes() }
                    #expect(!held.contains(records[1].record.headerBytes) && !held.contains(records[2].bytes))
                    let shown = try await node.cli("show", target.post, "--json")
                    #expect(!shown.contains(token), "\(node.name): \(shown)")
                }
                try await eventually("the node logged what it did not store") {
                    target.node.logText.contains("records of kinds this protocol version does not define")
                }
                try client.send(.ping(42))
                try await client.read(timeout: .seconds(10)) { $0.contains(.pong(42)) }
                #expect(client.end == nil, "no ERROR: \(client.received.map(\.typeName))")
                #expect(!target.node.logText.contains("bad record"), "the node refused nothing")
                try await target.expectStillServing()
            }
        }
    }
}
