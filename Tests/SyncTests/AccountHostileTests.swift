import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import ContinuumWire
import Foundation
import Testing

/// Account records from a raw peer (PROTOCOL.md §2.10, §7.8.6): the account log of a node of the group is stored and
/// passed on; the account log of a key that is no node of the group, or a post signed by a node key, is not stored,
/// and the session goes on. An account record that the peer itself signed and that breaks a rule of §2.10 (an add
/// without consent, a claim on another account) ends its session with ERROR *bad record*, counts for nothing, and
/// is passed on without ending the sessions of the nodes that only relay it; a removed device is refused.
extension HostileTests {
    @Suite("Account records from a raw peer", .serialized)
    struct AccountHostileTests {
        @Test(
            "a node's account is kept and passed on; a stranger's account and a node key's post are not stored"
        )
        func accountRecords() async throws {
            try await HostileTests.withTarget { target in
                let node = NodeIdentity.generate()
                let log = NodeIdentity.generate()
                let stranger = NodeIdentity.generate()
                var logs = LogSigner(createdAt: nil)
                // The raw peer's group log (its self-add names its node), then its node key's account log.
                _ = try logs.sign(
                    .member(MemberChange(group: TestNode.networkGroup, action: .add, node: node.node, log: log.author)),
                    by: log
                )
                _ = try logs.sign(AccountRecord.founding(recovery: nil).body, by: node)
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
                    #expect(try await holder.withStore { try await $0.account(of: stranger.author) } == nil)
                }
                try client.send(.ping(62))
                try await client.read(timeout: .seconds(10)) { $0.contains(.pong(62)) }
                #expect(client.end == nil, "no ERROR: \(client.received.map(\.typeName))")
                try await target.expectUnchanged(ignoringLogCounts: true)
                try await target.expectStillServing()
            }
        }

        /// A hostile account record, signed by the raw peer's node key after its self-add and founding record, and
        /// the fragment of the ERROR the node answers with.
        struct Claim {
            let name: String
            let fragment: String
            let sign: (_ logs: inout LogSigner, _ node: NodeIdentity, _ own: AccountID) throws -> VerifiedRecord
        }

        /// The target's account and node, read from its store.
        private static func targetAccount(_ target: Target) async throws -> (AccountMembership, AuthorID) {
            let status = try JSONSerialization.jsonObject(
                with: Data(try await target.node.cli("status", "--json").utf8)
            )
            let hex = try #require(((status as? [String: Any])?["node"] as? [String: Any])?["id"] as? String)
            let id = try #require(AuthorID(hex: hex))
            return (try #require(try await target.node.withStore { try await $0.account(of: id) }), id)
        }

        @Test("account records the peer signed that break a rule end its session; relays of them end none")
        func accountClaims() async throws {
            try await HostileTests.withTarget { target in
                let (victim, targetID) = try await Self.targetAccount(target)
                let stranger = NodeIdentity.generate()
                let claimed = NodeIdentity.generate()
                let claims: [Claim] = [
                    Claim(
                        name: "an add without the added key's consent",
                        fragment: "without the added device's consent"
                    ) {
                        logs,
                        node,
                        own in
                        try logs.sign(
                            AccountRecord.deviceAdd(account: own, device: stranger.author, consent: Data(count: 64))
                                .body,
                            by: node
                        )
                    },
                    Claim(name: "an add with a consent given to another account", fragment: "consent") {
                        logs,
                        node,
                        own in
                        let consent = try stranger.consent(toJoin: AccountID(unchecked: Data(repeating: 7, count: 32)))
                        return try logs.sign(
                            AccountRecord.deviceAdd(account: own, device: stranger.author, consent: consent).body,
                            by: node
                        )
                    },
                    Claim(name: "a removal of the target's device", fragment: "a device-remove of account") {
                        logs,
                        node,
                        _ in
                        try logs.sign(
                            AccountRecord.deviceRemove(account: victim.account, device: targetID, frontier: []).body,
                            by: node
                        )
                    },
                    Claim(name: "a log claimed for the target's account", fragment: "a log declaration of account") {
                        logs,
                        node,
                        _ in
                        let signature = try claimed.declaration(
                            account: victim.account,
                            group: TestNode.networkGroup,
                            device: node.author
                        )
                        let body = AccountRecord.logDeclaration(
                            account: victim.account,
                            group: TestNode.networkGroup,
                            log: claimed.author,
                            signature: signature
                        ).body
                        return try logs.sign(body, by: node)
                    },
                    Claim(
                        name: "a self-add naming the target's node, declared by the peer",
                        fragment: "whose self-add names"
                    ) {
                        logs,
                        node,
                        own in
                        let log = NodeIdentity.generate()
                        _ = try logs.sign(
                            .member(
                                MemberChange(
                                    group: TestNode.networkGroup,
                                    action: .add,
                                    node: NodeID(unchecked: targetID.bytes),
                                    log: log.author
                                )
                            ),
                            by: log
                        )
                        let signature = try log.declaration(
                            account: own,
                            group: TestNode.networkGroup,
                            device: node.author
                        )
                        let body = AccountRecord.logDeclaration(
                            account: own,
                            group: TestNode.networkGroup,
                            log: log.author,
                            signature: signature
                        ).body
                        return try logs.sign(body, by: node)
                    },
                    Claim(name: "a second founding", fragment: "not the first record of its log") { logs, node, _ in
                        try logs.sign(AccountRecord.founding(recovery: nil).body, by: node)
                    },
                ]
                var relayed: [VerifiedRecord] = []
                for claim in claims {
                    let node = NodeIdentity.generate()
                    let log = NodeIdentity.generate()
                    var logs = LogSigner(createdAt: nil)
                    _ = try logs.sign(
                        .member(
                            MemberChange(group: TestNode.networkGroup, action: .add, node: node.node, log: log.author)
                        ),
                        by: log
                    )
                    let own = AccountID(
                        founding: try logs.sign(AccountRecord.founding(recovery: nil).body, by: node).id
                    )
                    let hostile = try claim.sign(&logs, node, own)
                    relayed.append(hostile)
                    let client = try await RawClient.handshake(port: target.node.port, identity: node)
                    try client.send(.records(live: true, logs.records.map(\.bytes)))
                    let error = try await client.expectRefusal(.badRecord)
                    #expect(
                        error?.message.contains("the peer signed a record that breaks a rule") == true
                            && error?.message.contains(claim.fragment) == true,
                        "\(claim.name): \(String(describing: error))"
                    )
                }
                for holder in [target.node, target.peer] {
                    // Kept inert, as evidence, and passed on: the good peer holds them from the target.
                    try await eventually("\(holder.name) holds every hostile record") {
                        let held = Set(try await holder.withStore { try await $0.allRecordBytes() })
                        return relayed.allSatisfy { held.contains($0.bytes) }
                    }
                    #expect(try await holder.withStore { try await $0.account(of: targetID) } == victim)
                    #expect(try await holder.withStore { try await $0.account(of: stranger.author) } == nil)
                    let view = try await holder.withStore { try await $0.membershipView() }
                    #expect(view.logs[claimed.author] == nil, "\(holder.name): the claimed log is no member")
                }
                #expect(
                    !target.peer.logText.contains("the peer signed a record that breaks a rule"),
                    "the good peer only received the records from the target, which relays them"
                )
                try await target.expectUnchanged(ignoringLogCounts: true)
                try await target.expectStillServing()
            }
        }

        @Test("a device removed from its account: its session ends, what it signs after is refused, it cannot return")
        func removedDevice() async throws {
            try await HostileTests.withTarget { target in
                // The raw peer P (its group log L) founds an account and adds a second device D, which removes P.
                let node = NodeIdentity.generate()
                let log = NodeIdentity.generate()
                let desktop = NodeIdentity.generate()
                var logs = LogSigner(createdAt: nil)
                let selfAdd = try logs.sign(
                    .member(MemberChange(group: TestNode.networkGroup, action: .add, node: node.node, log: log.author)),
                    by: log
                )
                let account = AccountID(
                    founding: try logs.sign(AccountRecord.founding(recovery: nil).body, by: node).id
                )
                let add = try logs.sign(
                    AccountRecord.deviceAdd(
                        account: account,
                        device: desktop.author,
                        consent: try desktop.consent(toJoin: account)
                    ).body,
                    by: node
                )
                _ = try logs.sign(AccountRecord.joining(account).body, by: desktop)
                // As a linked device does, the desktop declares a log of its own in the account's group.
                let desktopLog = NodeIdentity.generate()
                _ = try logs.sign(
                    AccountRecord.logDeclaration(
                        account: account,
                        group: TestNode.networkGroup,
                        log: desktopLog.author,
                        signature: try desktopLog.declaration(
                            account: account,
                            group: TestNode.networkGroup,
                            device: desktop.author
                        )
                    ).body,
                    by: desktop
                )
                let client = try await RawClient.handshake(port: target.node.port, identity: node)
                try client.send(.records(live: true, logs.records.map(\.bytes)))
                try client.send(.ping(64))
                try await client.read(timeout: .seconds(10)) { $0.contains(.pong(64)) }
                #expect(client.end == nil, "an account of two devices: \(client.received.map(\.typeName))")
                try await eventually("the target holds the account's two devices") {
                    try await target.node.withStore { try await $0.account(of: node.author) }?.devices.count == 2
                }
                // The desktop removes P, keeping its logs as they are; P then comments, after its removal, back-dated.
                let frontier = [
                    FrontierEntry(log: node.author, through: 2, head: add.id),
                    FrontierEntry(log: log.author, through: 1, head: selfAdd.id),
                ].sorted { $0.log < $1.log }
                let removal = try logs.sign(
                    AccountRecord.deviceRemove(account: account, device: node.author, frontier: frontier).body,
                    by: desktop
                )
                // Signed after the removal, and dated 2020-01-01: long before it.
                var backDated = LogSigner(
                    createdAt: Timestamp(milliseconds: 1_577_836_800_000),
                    continuing: logs.records
                )
                let after = try backDated.sign(
                    .comment(post: try #require(PostID(hex: target.post)), text: "after my removal"),
                    by: log
                )
                try client.send(.records(live: true, [removal.bytes]))
                try client.send(.records(live: true, [after.bytes]))
                let error = try await client.expectRefusal(.notMember)
                #expect(error?.message.contains("no group") == true, "\(String(describing: error))")
                try await eventually("the target knows P removed") {
                    try await target.node.withStore { try await $0.account(of: desktop.author) }?.devices
                        == [desktop.author]
                }
                for holder in [target.node, target.peer] {
                    try await eventually("\(holder.name) holds the removal") {
                        try await holder.withStore { try await $0.allRecordBytes() }.contains(removal.bytes)
                    }
                    let held = try await holder.withStore { try await $0.allRecordBytes() }
                    #expect(!held.contains(after.bytes), "\(holder.name): what P signed after its removal")
                }
                // P cannot come back.
                let (again, ours, theirs) = try await RawClient.hellos(port: target.node.port, identity: node)
                try again.send(.membership(RawClient.membership(for: node, ours: ours, theirs: theirs)))
                let refusal = try await again.expectRefusal(.notMember)
                #expect(
                    refusal?.message.contains("shares no group with you") == true,
                    "\(refusal?.message ?? "no ERROR")"
                )
                try await target.expectUnchanged(ignoringLogCounts: true)
                try await target.expectStillServing()
            }
        }
    }
}
