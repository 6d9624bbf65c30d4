import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import ContinuumWire
import Foundation
import Testing

/// Raw peers against protocol v2's content rules (PROTOCOL.md §2.4, §2.6, §7.4.1): each shows the error, that the
/// node keeps serving, and that its store is unchanged.
extension HostileTests {
    /// Run inside `HostileTests`, one test at a time with it, so that the real nodes of both do not compete for
    /// the machine's two cores.
    @Suite("Hostile peers and v2 content: mismatched content, changed hashes, erased content, v1 peers", .serialized)
    struct ContentHostileTests {
        /// A post by `identity` whose photo no one has.
        static func post(
            by identity: NodeIdentity,
            sequence: UInt64 = 1,
            previous: RecordID? = nil,
            _ caption: String
        )
            throws -> VerifiedRecord
        {
            try identity.sign(
                RecordContent(
                    author: identity.author,
                    sequence: sequence,
                    previous: previous,
                    createdAt: .now(),
                    body: .post(
                        caption: caption,
                        photo: TestPhoto.reference("no such photo \(UUID())"),
                        location: nil
                    )
                )
            )
        }

        @Test("a record whose content does not match its header is refused with bad record and not stored")
        func contentMismatch() async throws {
            try await HostileTests.withTarget { target in
                let identity = NodeIdentity.generate()
                let valid = try Self.post(by: identity, "a post whose content was changed on the way")
                var changed = valid.bytes
                changed[changed.count - 3] ^= 0x01  // a bit of the content (its last field), not of the header
                #expect(throws: RecordError.self) { try SignedRecord(bytes: changed) }
                let client = try await RawClient.handshake(port: target.node.port, identity: identity)
                try client.send(.records(live: true, [changed]))
                let error = try await client.expectRefusal(.badRecord)
                #expect(
                    error?.message.contains("the content does not match its header") == true,
                    "\(String(describing: error))"
                )
                try await target.expectLogged("bad record", and: "does not match its header")
                let stored = try await target.node.withStore { try await $0.allRecordBytes() }
                #expect(!stored.contains { (try? SignedRecord(bytes: $0).id) == valid.id })
                try await target.expectUnchanged()
                try await target.expectStillServing()
            }
        }

        @Test(
            "a header whose content hash was changed is refused: alone, the content no longer matches; with a content to match, the signature fails",
            arguments: [false, true]
        )
        func changedContentHash(withMatchingContent: Bool) async throws {
            try await HostileTests.withTarget { target in
                let identity = NodeIdentity.generate()
                let valid = try Self.post(by: identity, "a post whose header was changed")
                let header = valid.record.headerBytes
                var content = try #require(valid.record.contentBytes)
                var forgedHeader = header
                // The content hash is the 32 bytes before the signature.
                let hashStart = header.count - 64 - 32
                if withMatchingContent {
                    content[18] ^= 0x01  // the caption's first letter (after the salt and the length): still valid text
                    let hash = Array(AssetHash.of(Data(content)).bytes)
                    forgedHeader.replaceSubrange(hashStart..<(hashStart + 32), with: hash)
                } else {
                    forgedHeader[hashStart] ^= 0x80
                }
                let forged = forgedHeader + content
                let client = try await RawClient.handshake(port: target.node.port, identity: identity)
                try client.send(.records(live: true, [forged]))
                let error = try await client.expectRefusal(.badRecord)
                let expected = withMatchingContent ? "signature" : "does not match its header"
                #expect(error?.message.contains(expected) == true, "\(String(describing: error))")
                try await target.expectLogged("bad record", and: expected)
                try await target.expectUnchanged()
                try await target.expectStillServing()
            }
        }

        @Test("content sent again for a record its author erased is dropped and logged; the session goes on")
        func erasedContentResent() async throws {
            try await HostileTests.withTarget { first in
                let identity = NodeIdentity.generate()
                let caption = "a caption its author erased \(UUID())"
                let join = try RawClient.selfAdd(identity)
                let post = try Self.post(by: identity, sequence: 2, previous: join.id, caption)
                let delete = try identity.sign(
                    RecordContent(
                        author: identity.author,
                        sequence: 3,
                        previous: post.id,
                        createdAt: .now(),
                        body: .delete(targets: [post.id])
                    )
                )
                let client = try await RawClient.handshake(port: first.node.port, identity: identity)
                try client.send(.records(live: true, [join.bytes, post.bytes, delete.bytes]))
                // Pings keep the session alive (the target's idle timeout is 6 s) while the node stores and erases.
                var nonce: UInt64 = 1000
                try await eventually("the post is stored and erased") {
                    nonce += 1
                    try client.send(.ping(nonce))
                    let held = try await first.node.withStore { try await $0.allRecordBytes() }
                    return held.contains(post.record.headerBytes) && held.contains(delete.bytes)
                }
                // What the node shows now, with the post erased.
                let target = Target(
                    node: first.node,
                    peer: first.peer,
                    post: first.post,
                    before: try await Snapshot(first.node)
                )
                try client.send(.records(live: true, [post.bytes]))
                try client.send(.ping(77))
                try await client.read(timeout: .seconds(10)) { $0.contains(.pong(77)) }
                #expect(client.received.contains(.pong(77)), "the session goes on: \(client.received.map(\.typeName))")
                #expect(client.end == nil)
                try await eventually("the node logged the dropped content") {
                    target.node.logText.contains("dropped the content of records their authors erased")
                }
                let held = try await target.node.withStore { try await $0.allRecordBytes() }
                #expect(
                    held.contains(post.record.headerBytes) && !held.contains(post.bytes),
                    "the header alone is kept"
                )
                #expect(
                    try SyncIntegrationTests.ErasureTests.databaseBytes(target.node).range(of: Data(caption.utf8))
                        == nil
                )
                try await target.expectUnchanged()
                try await target.expectStillServing()
            }
        }

        @Test("a peer speaking protocol v1 is refused with unsupported version and a message that says to upgrade")
        func protocolV1Hello() async throws {
            try await HostileTests.withTarget { target in
                let identity = NodeIdentity.generate()
                let client = try RawClient(port: target.node.port)
                var hello = RawClient.hello(for: identity)
                hello.protocolVersion = 1
                try client.send(.hello(hello))
                let error = try await client.expectRefusal(.unsupportedVersion)
                #expect(
                    error?.message.contains("protocol version 1") == true && error?.message.contains("upgrade") == true,
                    "\(String(describing: error))"
                )
                try await target.expectLogged("protocol version 1")
                try await target.expectUnchanged()
                try await target.expectStillServing()
            }
        }
    }
}
