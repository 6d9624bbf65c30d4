import ContinuumCore
import ContinuumStore
import ContinuumWire
import Foundation
import Testing

/// Hostile peers against a node's groups (PROTOCOL.md §7.8.3): a raw plaintext client forges membership, replays or
/// reuses invites, and sends records and interest of a group it is not in. The target is in the test network, which
/// the client may join, and in a private group, which it may not. Each case shows the error the peer gets (or the
/// line the node logs), that the node still serves its good peer, and that its store is unchanged.
@Suite("Hostile peers: membership, invites, other groups", .serialized)
struct GroupHostileTests {
    private static let plaintext = [
        "--insecure-plaintext", "--handshake-timeout-ms", "10000", "--idle-timeout-ms", "5000",
    ]

    @Test("a forged membership claim is refused with not a member and the reason, before anything is sent")
    func forgedClaim() async throws {
        try await Self.withTarget { target, group, _ in
            let founding = try await target.node.withStore { store in
                try await store.storedRecords(of: group.founder, in: 1...1, limit: 1, maxBytes: 1 << 20)
            }
            let genuine = try #require(founding.first).bytes
            var forged = genuine
            forged[forged.count - 5] ^= 0x01
            for (proof, reason) in [
                (forged, "the proof is not a valid record"),
                (genuine, "the group record names another group or node"),
            ] {
                let identity = NodeIdentity.generate()
                let (client, ours, theirs) = try await RawClient.hellos(port: target.node.port, identity: identity)
                _ = (ours, theirs)
                try client.send(.membership(Membership(claims: [Membership.Claim(group: group, proof: proof)])))
                let error = try await client.expectRefusal(.notMember)
                #expect(error?.message.contains(reason) == true, "\(String(describing: error))")
                #expect(!client.received.contains { if case .clock = $0 { true } else { false } }, "no session")
                #expect(!client.received.contains { if case .records = $0 { true } else { false } }, "no records")
            }
            try await eventually("the node logs the refused stranger") {
                target.node.logText.contains("refused a node that shares no group")
            }
            try await target.expectUnchanged()
            try await target.expectStillServing()
        }
    }

    @Test("an invite works once: a second join with the same code is refused with invite refused")
    func inviteUsedTwice() async throws {
        try await Self.withTarget { target, group, _ in
            let code = try InviteCode(
                parsing: try await target.node.cli("invite", "--group", "Private", "--host", "127.0.0.1", "--port", "1")
            )
            let first = try await Self.join(target.node.port, code: code, identity: .generate())
            try await first.client.read(timeout: .seconds(10)) { messages in
                messages.contains { if case .joined = $0 { true } else { false } }
            }
            let joined = first.client.received.compactMap { message -> GroupID? in
                if case .joined(let group, _) = message { group } else { nil }
            }
            #expect(joined == [group], "\(first.client.received.map(\.typeName))")
            first.client.close()
            let after = try await Snapshot(target.node)

            let second = try await Self.join(target.node.port, code: code, identity: .generate())
            let error = try await second.client.expectRefusal(.inviteRefused)
            #expect(error?.message == "this invite was already used; ask for a new one", "\(String(describing: error))")
            #expect(try await Snapshot(target.node).records == after.records, "the second join stored nothing")
            #expect(try await Self.members(target.node, "Private") == 2)
            try await target.expectStillServing()
        }
    }

    @Test("a join proof copied from another connection is refused, and the invite stays unused")
    func replayedProof() async throws {
        try await Self.withTarget { target, group, _ in
            let code = try InviteCode(
                parsing: try await target.node.cli("invite", "--group", "Private", "--host", "127.0.0.1", "--port", "1")
            )
            let identity = NodeIdentity.generate()
            let log = NodeIdentity.generate()
            // The proof of the first connection, seen and sent again on a second one.
            let (seen, ours, theirs) = try await RawClient.hellos(port: target.node.port, identity: identity)
            let copied = Self.joinProof(code: code, log: log, ours: ours, theirs: theirs, identity: identity)
            seen.close()
            let (replay, _, _) = try await RawClient.hellos(port: target.node.port, identity: identity)
            try replay.send(.membership(Membership(join: copied)))
            let error = try await replay.expectRefusal(.inviteRefused)
            // Both proofs of a join are bound to the connection's nonces: the copied one fails the first checked.
            #expect(
                error?.message == "the joiner does not prove that it holds the log key it asks to have added"
                    || error?.message == "the invite's proof does not match this session",
                "\(String(describing: error))"
            )
            try await target.expectUnchanged()
            #expect(try await Self.members(target.node, "Private") == 1)
            // The invite was not used up: its rightful holder joins with it.
            let rightful = try await Self.join(target.node.port, code: code, identity: .generate())
            try await rightful.client.read(timeout: .seconds(10)) { messages in
                messages.contains { if case .joined(group, _) = $0 { true } else { false } }
            }
            #expect(rightful.client.received.contains { if case .joined = $0 { true } else { false } })
            try await target.expectStillServing()
        }
    }

    @Test("a join whose JOINED was lost gets the same record again with the same key; another key is refused")
    func lostJoined() async throws {
        try await Self.withTarget { target, group, _ in
            let code = try InviteCode(
                parsing: try await target.node.cli("invite", "--group", "Private", "--host", "127.0.0.1", "--port", "1")
            )
            let identity = NodeIdentity.generate()
            let log = NodeIdentity.generate()
            // The first try: the join is sent, and the connection is gone before JOINED is read.
            let (first, ours, theirs) = try await RawClient.hellos(port: target.node.port, identity: identity)
            try first.send(
                .membership(
                    Membership(
                        join: Self.joinProof(code: code, log: log, ours: ours, theirs: theirs, identity: identity)
                    )
                )
            )
            try await eventually("the target signed the joiner's member record") {
                try await Self.members(target.node, "Private") == 2
            }
            first.close()
            // Again with the same key, on a new connection: the same record comes back.
            let (again, ours2, theirs2) = try await RawClient.hellos(port: target.node.port, identity: identity)
            try again.send(
                .membership(
                    Membership(
                        join: Self.joinProof(code: code, log: log, ours: ours2, theirs: theirs2, identity: identity)
                    )
                )
            )
            try await again.read(timeout: .seconds(10)) { messages in
                messages.contains { if case .joined = $0 { true } else { false } }
            }
            guard
                case .joined(let joinedGroup, let record)? = again.received.first(where: {
                    if case .joined = $0 { true } else { false }
                })
            else { throw ClientError("no JOINED: \(again.received.map(\.typeName))") }
            #expect(joinedGroup == group)
            let change = try SignedRecord(bytes: record).verify().header.references
            guard case .member(let member) = change else { throw ClientError("not a member record") }
            #expect(member.log == log.author && member.node == identity.node)
            // With another key, the invite stays used.
            let (other, ours3, theirs3) = try await RawClient.hellos(port: target.node.port, identity: identity)
            try other.send(
                .membership(
                    Membership(
                        join: Self.joinProof(
                            code: code,
                            log: .generate(),
                            ours: ours3,
                            theirs: theirs3,
                            identity: identity
                        )
                    )
                )
            )
            let error = try await other.expectRefusal(.inviteRefused)
            #expect(error?.message == "this invite was already used; ask for a new one", "\(String(describing: error))")
            #expect(try await Self.members(target.node, "Private") == 2, "one member added, once")
            // Once removed, the same key gets nothing back from the used invite.
            try await target.node.cli("revoke", String(log.author.hex.prefix(12)), "--group", "Private")
            let (late, ours4, theirs4) = try await RawClient.hellos(port: target.node.port, identity: identity)
            try late.send(
                .membership(
                    Membership(
                        join: Self.joinProof(code: code, log: log, ours: ours4, theirs: theirs4, identity: identity)
                    )
                )
            )
            let removed = try await late.expectRefusal(.inviteRefused)
            #expect(
                removed?.message == "this invite was already used; ask for a new one",
                "\(String(describing: removed))"
            )
            try await target.expectStillServing()
        }
    }

    @Test("a join that names a log key the joiner does not hold is refused, and the invite stays unused")
    func joinWithoutLogKey() async throws {
        try await Self.withTarget { target, group, _ in
            let code = try InviteCode(
                parsing: try await target.node.cli("invite", "--group", "Private", "--host", "127.0.0.1", "--port", "1")
            )
            let identity = NodeIdentity.generate()
            let (client, ours, theirs) = try await RawClient.hellos(port: target.node.port, identity: identity)
            // A valid proof of the invite, but for a log key held by someone else: the signature is another key's.
            var join = Self.joinProof(code: code, log: .generate(), ours: ours, theirs: theirs, identity: identity)
            join.log = group.founder
            join.mac = MembershipProofs.joinMAC(
                secret: code.secret,
                inviterNonce: theirs.nonce.bytes,
                joinerNonce: ours.nonce.bytes,
                inviter: NodeID(unchecked: theirs.node.bytes),
                joiner: identity.node,
                log: join.log
            )
            try client.send(.membership(Membership(join: join)))
            let error = try await client.expectRefusal(.inviteRefused)
            #expect(
                error?.message == "the joiner does not prove that it holds the log key it asks to have added",
                "\(String(describing: error))"
            )
            try await target.expectUnchanged()
            let rightful = try await Self.join(target.node.port, code: code, identity: .generate())
            try await rightful.client.read(timeout: .seconds(10)) { messages in
                messages.contains { if case .joined = $0 { true } else { false } }
            }
            #expect(rightful.client.received.contains { if case .joined = $0 { true } else { false } })
            try await target.expectStillServing()
        }
    }

    @Test("a request to join signed for another connection is refused, and nothing is recorded")
    func replayedRequest() async throws {
        try await Self.withTarget { target, _, _ in
            let identity = NodeIdentity.generate()
            let log = NodeIdentity.generate()
            // A signature made for an earlier connection (its nonces), sent on a new one.
            let (first, firstOurs, firstTheirs) = try await RawClient.hellos(port: target.node.port, identity: identity)
            let stale = Self.request(log: log, ours: firstOurs, theirs: firstTheirs, identity: identity)
            first.close()
            let (client, _, _) = try await RawClient.hellos(port: target.node.port, identity: identity)
            try client.send(.membership(Membership(request: stale)))
            let error = try await client.expectRefusal(.inviteRefused)
            #expect(
                error?.message == "the request does not prove that it holds the log key it asks to have added",
                "\(String(describing: error))"
            )
            try await target.expectUnchanged()
            #expect(try await target.node.cli("requests", "--all") == "no node has asked to join")
            try await target.expectStillServing()
        }
    }

    @Test("a flood of requests to join from new identities keeps at most 100, the newest; the node keeps serving")
    func requestFlood() async throws {
        try await Self.withTarget { target, _, _ in
            let count = ContinuumStore.maxJoinRequests + 5
            for _ in 0..<count {
                let identity = NodeIdentity.generate()
                let (client, ours, theirs) = try await RawClient.hellos(port: target.node.port, identity: identity)
                try client.send(
                    .membership(
                        Membership(
                            request: Self.request(log: .generate(), ours: ours, theirs: theirs, identity: identity)
                        )
                    )
                )
                let error = try await client.expectRefusal(.requestPending)
                #expect(error?.message.contains("waits for an admin of this node") == true)
            }
            let requests = try GroupTests.list(try await target.node.cli("requests", "--json"), "requests")
            #expect(requests.count == ContinuumStore.maxJoinRequests)
            try await target.expectUnchanged()
            try await target.expectStillServing()
        }
    }

    @Test("records of a group the peer is not in are not stored, and logged; the session goes on")
    func recordsOfAnotherGroup() async throws {
        try await Self.withTarget { target, group, privatePost in
            // The private post's record copied from the target's own store, and a group founded by the peer itself:
            // neither belongs to a group the session shares. (A node's view of who is in which group may differ from
            // its peer's for a while, so such records are dropped, not taken as an attack.)
            let copied = try await target.node.withStore { store in
                try await store.storedRecords(of: group.founder, in: 1...3, limit: 3, maxBytes: 1 << 20)
            }.map(\.bytes)
            let founder = NodeIdentity.generate()
            let founding = try founder.sign(
                RecordContent(
                    author: founder.author,
                    sequence: 1,
                    previous: nil,
                    createdAt: .now(),
                    body: .group(GroupFounding(node: founder.node, name: "Elsewhere", open: true))
                )
            )
            let client = try await RawClient.handshake(port: target.node.port)
            try client.send(.records(live: true, copied))
            try client.send(.records(live: true, [founding.bytes]))
            try client.send(.ping(41))
            try await client.read(timeout: .seconds(10)) { $0.contains(.pong(41)) }
            #expect(client.received.contains(.pong(41)), "the session goes on: \(client.received.map(\.typeName))")
            #expect(client.end == nil)
            try await eventually("the node logs the records it did not store") {
                target.node.logText.contains("records of a group this session does not share were not stored")
            }
            // Nothing of the private group reached the peer either.
            #expect(
                !client.received.contains { message in
                    if case .records(_, let records) = message {
                        records.contains { (try? SignedRecord(bytes: $0).author) == group.founder }
                    } else {
                        false
                    }
                }
            )
            _ = privatePost
            try await target.expectUnchanged()
            try await target.expectStillServing()
        }
    }

    @Test("INTEREST in a post of a group the peer is not in is ignored and logged; nothing of it is pushed")
    func interestInAnotherGroup() async throws {
        try await Self.withTarget { target, group, privatePost in
            let client = try await RawClient.handshake(port: target.node.port)
            let post = try #require(PostID(hex: privatePost))
            try client.send(.interest(replace: true, [PostInterest(post: post, hops: 0)]))
            try await eventually("the node logs the interest it ignored") {
                target.node.logText.contains("interest in posts of a group this session does not share was ignored")
            }
            // A comment on the private post, made now, is not pushed to the peer.
            try await target.node.cli("comment", privatePost, "for the group only")
            try client.send(.ping(42))
            try await client.read(timeout: .seconds(5)) { $0.contains(.pong(42)) }
            try await Task.sleep(for: .seconds(1))
            try client.send(.ping(43))
            try await client.read(timeout: .seconds(5)) { $0.contains(.pong(43)) }
            #expect(!client.received.contains { if case .push = $0 { true } else { false } }, "no PUSH")
            #expect(
                !client.received.contains { message in
                    if case .records(_, let records) = message {
                        records.contains { (try? SignedRecord(bytes: $0).author) == group.founder }
                    } else {
                        false
                    }
                }
            )
            #expect(!(try await target.node.cli("peers", "--json")).contains("\"pushInterest\" : 1"))
            try await target.expectStillServing()
        }
    }

    @Test("a member record signed by someone who is not an admin is held back and logged; members are unchanged")
    func memberRecordByNonAdmin() async throws {
        try await Self.withTarget { target, _, _ in
            let membersBefore = try await target.node.cli("group", "members", "--group", TestNode.network, "--json")
            let identity = NodeIdentity.generate()
            let client = try await RawClient.handshake(port: target.node.port, identity: identity)
            // The peer's own log: its self-add to the (open) test network, then an add of a stranger's log, which in
            // a network group nobody may sign.
            let join = try identity.sign(
                RecordContent(
                    author: identity.author,
                    sequence: 1,
                    previous: nil,
                    createdAt: .now(),
                    body: .member(
                        MemberChange(
                            group: TestNode.networkGroup,
                            action: .add,
                            node: identity.node,
                            log: identity.author
                        )
                    )
                )
            )
            let intruder = NodeIdentity.generate()
            let add = try identity.sign(
                RecordContent(
                    author: identity.author,
                    sequence: 2,
                    previous: join.id,
                    createdAt: .now(),
                    body: .member(
                        MemberChange(
                            group: TestNode.networkGroup,
                            action: .add,
                            node: intruder.node,
                            log: intruder.author
                        )
                    )
                )
            )
            try client.send(.records(live: true, [join.bytes, add.bytes]))
            try await eventually("the node logs the member record it held back") {
                target.node.logText.contains("not an admin")
            }
            let stored = try await target.node.withStore { try await $0.allRecordBytes() }
            #expect(!stored.contains(add.bytes), "the add is not stored")
            let membersAfter = try GroupTests.list(
                try await target.node.cli("group", "members", "--group", TestNode.network, "--json"),
                "members"
            )
            #expect(!membersAfter.contains { $0["log"] as? String == intruder.author.hex }, "the intruder is no member")
            #expect(
                membersAfter.count == (try GroupTests.list(membersBefore, "members")).count + 1,
                "only the peer's own self-add"
            )
            try await target.expectUnchanged(ignoringLogCounts: true)
            try await target.expectStillServing()
        }
    }

    // MARK: Helpers

    /// A target as ``HostileTests/withTarget(_:)`` makes one, also in a private group with one post of its own.
    static func withTarget(_ body: (Target, GroupID, String) async throws -> Void) async throws {
        let node = try await TestNode("target")
        let peer = try await TestNode("good-peer")
        defer {
            node.remove()
            peer.remove()
        }
        let post = try await node.cli("post", node.fixture("lake.png"), "--caption", "the target's post")
        try await node.cli("group", "create", "Private")
        let group = try #require(
            try GroupTests.list(try await node.cli("group", "list", "--json"), "groups").first {
                $0["name"] as? String == "Private"
            }?["id"] as? String
        )
        let privatePost = try await node.cli(
            "post",
            node.fixture("forest.webp"),
            "--caption",
            "a private post",
            "--group",
            "Private"
        )
        try await node.start(extra: plaintext)
        try await peer.start(peers: [node], extra: plaintext)
        try await eventually("the good peer is connected and in sync") {
            let connected = try await node.cli("peers", "--json").contains("\"connected\"")
            let synced = try await node.clock() == (try await peer.clock())
            return connected && synced
        }
        #expect(!(try await peer.feedJSON()).contains("a private post"), "the good peer is not in the private group")
        let target = Target(node: node, peer: peer, post: post, before: try await Snapshot(node))
        try await body(target, try #require(GroupID(hex: group)), privatePost)
        try await peer.stop()
        try await node.stop()
    }

    /// Dials, exchanges HELLOs and sends a join with `code`'s invite, proven for this connection.
    static func join(
        _ port: Int,
        code: InviteCode,
        identity: NodeIdentity
    ) async throws -> (client: RawClient, log: AuthorID) {
        let log = NodeIdentity.generate()
        let (client, ours, theirs) = try await RawClient.hellos(port: port, identity: identity)
        try client.send(
            .membership(
                Membership(join: joinProof(code: code, log: log, ours: ours, theirs: theirs, identity: identity))
            )
        )
        return (client, log.author)
    }

    /// A join: the invite's id, the new log key, the mac under the invite's secret and the log key's signature, both
    /// bound to this connection's nonces (PROTOCOL.md §7.8.3).
    static func joinProof(
        code: InviteCode,
        log: NodeIdentity,
        ours: Hello,
        theirs: Hello,
        identity: NodeIdentity
    )
        -> Membership.Join
    {
        let inviter = NodeID(unchecked: theirs.node.bytes)
        let message = MembershipProofs.joinLogMessage(
            inviterNonce: theirs.nonce.bytes,
            joinerNonce: ours.nonce.bytes,
            joiner: identity.node
        )
        return Membership.Join(
            invite: InviteCode.id(of: code.secret),
            log: log.author,
            mac: MembershipProofs.joinMAC(
                secret: code.secret,
                inviterNonce: theirs.nonce.bytes,
                joinerNonce: ours.nonce.bytes,
                inviter: inviter,
                joiner: identity.node,
                log: log.author
            ),
            signature: Array(try! log.privateKey.signature(for: message))
        )
    }

    /// A request to join with `log`, its signature bound to this connection's nonces (PROTOCOL.md §7.8.3).
    static func request(log: NodeIdentity, ours: Hello, theirs: Hello, identity: NodeIdentity) -> Membership.Request {
        let message = MembershipProofs.joinLogMessage(
            inviterNonce: theirs.nonce.bytes,
            joinerNonce: ours.nonce.bytes,
            joiner: identity.node
        )
        return Membership.Request(log: log.author, signature: Array(try! log.privateKey.signature(for: message)))
    }

    static func members(_ node: TestNode, _ group: String) async throws -> Int {
        try GroupTests.list(try await node.cli("group", "members", "--group", group, "--json"), "members").filter {
            $0["removed"] as? Bool == false
        }.count
    }
}

extension RawClient {
    /// Connects and exchanges HELLOs: the client, its HELLO and the node's.
    static func hellos(port: Int, identity: NodeIdentity) async throws -> (RawClient, Hello, Hello) {
        let client = try RawClient(port: port)
        let ours = hello(for: identity)
        try client.send(.hello(ours))
        try await client.readHello(timeout: .seconds(10))
        guard case .hello(let theirs)? = client.received.first else {
            throw ClientError("no HELLO from the node: \(client.received.map(\.typeName))")
        }
        return (client, ours, theirs)
    }
}
