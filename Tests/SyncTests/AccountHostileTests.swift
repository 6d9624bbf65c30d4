import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import ContinuumWire
import Foundation
import Testing

/// Account records from a raw peer (PROTOCOL.md §2.10, §7.8.6): the account log of a node of the group is stored and
/// passed on, an add without the added key's consent counts for nothing, and the account log of a key that is no
/// node of the group, or a post signed by a node key, is not stored. No session ends.
extension HostileTests {
    @Suite("Account records from a raw peer", .serialized)
    struct AccountHostileTests {
        @Test(
            "a node's account is kept and passed on; a forged add, a stranger's account and a node key's post are not"
        )
        func accountRecords() async throws {
            try await HostileTests.withTarget { target in
                let node = NodeIdentity.generate()
                let log = NodeIdentity.generate()
                let victim = NodeIdentity.generate()
                let stranger = NodeIdentity.generate()
                var logs = LogSigner(createdAt: nil)
                // The raw peer's group log (its self-add names its node), then its node key's account log.
                _ = try logs.sign(
                    .member(MemberChange(group: TestNode.networkGroup, action: .add, node: node.node, log: log.author)),
                    by: log
                )
                let founding = try logs.sign(AccountRecord.founding(recovery: nil).body, by: node)
                let account = AccountID(founding: founding.id)
                // An add of the victim's key with a consent the victim gave another account: inert.
                let forged = try logs.sign(
                    AccountRecord.deviceAdd(
                        account: account,
                        device: victim.author,
                        consent: try victim.consent(toJoin: AccountID(unchecked: Data(repeating: 7, count: 32)))
                    ).body,
                    by: node
                )
                let kept = logs.records
                // Not stored: a post signed by the node key, and the account log of a key that is no node of the
                // group.
                let post = try logs.sign(
                    .comment(post: try #require(PostID(hex: target.post)), text: "by a node key"),
                    by: node
                )
                let strangers = try logs.sign(AccountRecord.founding(recovery: nil).body, by: stranger)

                let client = try await RawClient.handshake(port: target.node.port, identity: node)
                try client.send(.records(live: true, logs.records.map(\.bytes)))
                try client.send(.ping(61))
                try await client.read(timeout: .seconds(10)) { $0.contains(.pong(61)) }
                #expect(client.received.contains(.pong(61)), "the session goes on: \(client.received.map(\.typeName))")

                for holder in [target.node, target.peer] {
                    try await eventually("\(holder.name) holds the raw peer's account, its one device") {
                        try await holder.withStore { try await $0.account(of: node.author) }?.devices == [node.author]
                    }
                    let held = Set(try await holder.withStore { try await $0.allRecordBytes() })
                    #expect(
                        kept.allSatisfy { held.contains($0.bytes) },
                        "\(holder.name): the group log and account log"
                    )
                    #expect(!held.contains(post.bytes), "\(holder.name): a post by a node key is not stored")
                    #expect(!held.contains(strangers.bytes), "\(holder.name): the stranger's account is not stored")
                    #expect(try await holder.withStore { try await $0.account(of: victim.author) } == nil)
                    #expect(try await holder.withStore { try await $0.account(of: stranger.author) } == nil)
                }
                #expect(forged.header.sequence == 2)
                try client.send(.ping(62))
                try await client.read(timeout: .seconds(10)) { $0.contains(.pong(62)) }
                #expect(client.end == nil, "no ERROR: \(client.received.map(\.typeName))")
                try await target.expectUnchanged(ignoringLogCounts: true)
                try await target.expectStillServing()
            }
        }

        @Test(
            "a claim on the target's account: a log declared for it, a removal of its device, an add without consent"
        )
        func accountClaims() async throws {
            try await HostileTests.withTarget { target in
                let node = NodeIdentity.generate()
                let log = NodeIdentity.generate()
                let claimed = NodeIdentity.generate()
                let status = try JSONSerialization.jsonObject(
                    with: Data(try await target.node.cli("status", "--json").utf8)
                )
                let targetHex = try #require(((status as? [String: Any])?["node"] as? [String: Any])?["id"] as? String)
                let targetID = try #require(AuthorID(hex: targetHex))
                let victim = try #require(try await target.node.withStore { try await $0.account(of: targetID) })
                var logs = LogSigner(createdAt: nil)
                _ = try logs.sign(
                    .member(MemberChange(group: TestNode.networkGroup, action: .add, node: node.node, log: log.author)),
                    by: log
                )
                _ = try logs.sign(AccountRecord.founding(recovery: nil).body, by: node)
                // The peer's key declares a log of its own for the target's account, and posts in it.
                let signature = try claimed.declaration(
                    account: victim.account,
                    group: TestNode.networkGroup,
                    device: node.author
                )
                _ = try logs.sign(
                    AccountRecord.logDeclaration(
                        account: victim.account,
                        group: TestNode.networkGroup,
                        log: claimed.author,
                        signature: signature
                    ).body,
                    by: node
                )
                let claimedPost = try logs.sign(
                    .comment(post: try #require(PostID(hex: target.post)), text: "as the target"),
                    by: claimed
                )
                // It removes the target's node from the target's account, and adds itself without its consent.
                _ = try logs.sign(
                    AccountRecord.deviceRemove(account: victim.account, device: targetID, frontier: []).body,
                    by: node
                )
                _ = try logs.sign(
                    AccountRecord.deviceAdd(account: victim.account, device: log.author, consent: Data(count: 64))
                        .body,
                    by: node
                )

                let client = try await RawClient.handshake(port: target.node.port, identity: node)
                try client.send(.records(live: true, logs.records.map(\.bytes)))
                try client.send(.ping(63))
                try await client.read(timeout: .seconds(10)) { $0.contains(.pong(63)) }
                #expect(client.end == nil, "the claims are inert: \(client.received.map(\.typeName))")
                for holder in [target.node, target.peer] {
                    try await eventually("\(holder.name) holds the raw peer's account log") {
                        try await holder.withStore { try await $0.account(of: node.author) }?.devices == [node.author]
                    }
                    // The target's account is as it was: its one device, the claimed log nobody's.
                    #expect(try await holder.withStore { try await $0.account(of: targetID) }?.devices == [targetID])
                    let held = Set(try await holder.withStore { try await $0.allRecordBytes() })
                    #expect(!held.contains(claimedPost.bytes), "\(holder.name): the claimed log's comment")
                    let view = try await holder.withStore { try await $0.membershipView() }
                    #expect(view.logs[claimed.author] == nil, "\(holder.name): the claimed log is no member")
                }
                try await target.expectUnchanged(ignoringLogCounts: true)
                try await target.expectStillServing()
            }
        }
    }
}
