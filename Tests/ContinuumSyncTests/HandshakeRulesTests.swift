import ContinuumCore
import ContinuumWire
import Foundation
import NIOCore
import NIOEmbedded
import Testing

@testable import ContinuumSync

/// The handshake's decisions (``HandshakeRules``), each with the ERROR written out by hand, and the read and refusal
/// of ``SyncNetwork`` over an in-memory channel carrying the real frame handlers: a frame the decoder refuses in the
/// pipeline is still answered with its ERROR.
@Suite("Handshake: what each message gets, and every refusal an ERROR")
struct HandshakeRulesTests {
    private static let hello = Hello(
        nonce: SessionNonce(bytes: [UInt8](repeating: 7, count: 32))!,
        node: AuthorID(unchecked: Data(repeating: 0x11, count: 32)),
        name: "peer",
        listenPort: 7420,
        plaintext: true
    )

    private struct Broken: Error, CustomStringConvertible {
        var description: String { "TLS handshake failed" }
    }

    // MARK: What each read gets

    @Test("the message waited for goes on, at each stage")
    func expected() {
        #expect(HandshakeRules.next(.message(.hello(Self.hello)), at: .hello) == .proceed(Self.hello))
        let membership = Membership(networkTags: [[UInt8](repeating: 1, count: 16)])
        #expect(HandshakeRules.next(.message(.membership(membership)), at: .membership) == .proceed(membership))
        let group = GroupID(unchecked: Data(repeating: 0x22, count: 32))
        #expect(
            HandshakeRules.next(.message(.joined(group: group, record: [1, 2])), at: .joined)
                == .proceed(JoinedGroup(group: group, record: [1, 2]))
        )
    }

    @Test("another message is refused with unexpected message, naming the one waited for")
    func unexpected() {
        #expect(
            HandshakeRules.next(.message(.ping(1)), at: .hello)
                == .end(
                    send: WireError(.unexpectedMessage, "expected HELLO"),
                    reason: "refused: the first frame was PING, not HELLO"
                )
        )
        #expect(
            HandshakeRules.next(.message(.hello(Self.hello)), at: .membership)
                == .end(
                    send: WireError(.unexpectedMessage, "expected MEMBERSHIP"),
                    reason: "refused: the frame after HELLO was HELLO, not MEMBERSHIP"
                )
        )
        #expect(
            HandshakeRules.next(.message(.membership(Membership())), at: .joined)
                == .end(
                    send: WireError(.unexpectedMessage, "expected JOINED"),
                    reason: "refused: the frame after MEMBERSHIP was MEMBERSHIP, not JOINED"
                )
        )
    }

    @Test("a frame the decoder refused is answered with that ERROR, at every stage")
    func refusedFrame() {
        let flag = WireError(.malformedFrame, "MEMBERSHIP: join flag is 3; it must be 0, 1 or 2")
        #expect(
            HandshakeRules.next(.failed(flag), at: .membership)
                == .end(
                    send: flag,
                    reason: "handshake failed: malformed frame: MEMBERSHIP: join flag is 3; it must be 0, 1 or 2"
                )
        )
        let large = WireError(.frameTooLarge, "frame length 4294967295 exceeds the limit of 4194304 bytes")
        #expect(
            HandshakeRules.next(.failed(large), at: .hello)
                == .end(
                    send: large,
                    reason:
                        "handshake failed: frame too large: frame length 4294967295 exceeds the limit of 4194304 bytes"
                )
        )
        let version = WireError(.unsupportedVersion, "frame version 9 is not supported; this node speaks version 1")
        #expect(
            HandshakeRules.next(.failed(version), at: .joined)
                == .end(
                    send: version,
                    reason:
                        "handshake failed: unsupported version: frame version 9 is not supported; this node speaks version 1"
                )
        )
    }

    @Test("the peer's ERROR is not answered; a closed stream and a broken TLS handshake send none; a stop says so")
    func noAnswer() {
        let error = WireError(.notMember, "you are not a member")
        #expect(HandshakeRules.next(.message(.error(error)), at: .hello) == .peerRefused(error))
        #expect(HandshakeRules.next(.message(.error(error)), at: .membership) == .peerRefused(error))
        #expect(HandshakeRules.next(.message(.error(error)), at: .joined) == .peerRefused(error))
        #expect(
            HandshakeRules.next(.closed, at: .membership)
                == .end(send: nil, reason: "closed during the handshake (no MEMBERSHIP within the time limit)")
        )
        #expect(
            HandshakeRules.next(.failed(Broken()), at: .hello)
                == .end(send: nil, reason: "handshake failed: TLS handshake failed")
        )
        #expect(
            HandshakeRules.next(.failed(CancellationError()), at: .joined)
                == .end(
                    send: WireError(.shuttingDown, "the node is shutting down"),
                    reason: "this node is shutting down"
                )
        )
    }

    // MARK: Refusals after MEMBERSHIP

    @Test("a peer sharing no group is told what to do, or that this node is in none, with the claim that failed")
    func notMember() {
        #expect(
            HandshakeRules.notMember(nodeInNoGroup: false, problem: "you were removed from group Family")
                == WireError(
                    .notMember,
                    "you are not a member of any group this node belongs to: ask a member for an invite code "
                        + "(continuum-node invite) and run 'continuum-node join CODE' (you were removed from group Family)"
                )
        )
        #expect(
            HandshakeRules.notMember(nodeInNoGroup: true, problem: nil)
                == WireError(.notMember, "this node belongs to no group yet, so it shares nothing")
        )
    }

    @Test("a joiner refuses a node whose id does not start with the invite's node prefix")
    func inviter() {
        let peer = NodeID(unchecked: Data([1, 2, 3, 4, 5, 6, 7, 8] + [UInt8](repeating: 9, count: 24)))
        let secret = Data(repeating: 5, count: 10)
        let right = InviteCode(nodePrefix: Data([1, 2, 3, 4, 5, 6, 7, 8]), secret: secret, host: nil, port: nil)
        let wrong = InviteCode(nodePrefix: Data([1, 2, 3, 4, 5, 6, 7, 9]), secret: secret, host: nil, port: nil)
        #expect(HandshakeRules.inviterProblem(peer: peer, code: right) == nil)
        #expect(
            HandshakeRules.inviterProblem(peer: peer, code: wrong)
                == WireError(.inviteRefused, "this is not the node that made the invite")
        )
    }

    @Test("a JOINED is taken only with a valid add of this node and its new log, and not into a group held already")
    func joined() throws {
        let admin = NodeIdentity.generate()
        let me = NodeIdentity.generate()
        let log = NodeIdentity.generate()
        let group = GroupID(unchecked: Data(repeating: 0x33, count: 32))
        let add = { (node: NodeID, action: MemberAction) in
            try admin.sign(
                RecordContent(
                    author: admin.author,
                    sequence: 1,
                    previous: nil,
                    createdAt: Timestamp(milliseconds: 1_700_000_000_000),
                    body: .member(MemberChange(group: group, action: action, node: node, log: log.author))
                )
            ).bytes
        }
        let good = JoinedGroup(group: group, record: try add(me.node, .add))
        #expect(HandshakeRules.answer(toJoined: good, me: me.node, log: log.author, alreadyMember: false) == nil)
        #expect(
            HandshakeRules.answer(toJoined: good, me: me.node, log: log.author, alreadyMember: true)
                == WireError(.inviteRefused, "this node is already in group 333333333333; it joins nothing")
        )
        let notMe = JoinedGroup(group: group, record: try add(admin.node, .add))
        let otherGroup = JoinedGroup(group: GroupID(unchecked: Data(repeating: 0x44, count: 32)), record: good.record)
        let removal = JoinedGroup(group: group, record: try add(me.node, .remove))
        for wrong in [notMe, otherGroup, removal] {
            #expect(
                HandshakeRules.answer(toJoined: wrong, me: me.node, log: log.author, alreadyMember: false)
                    == WireError(.badRecord, "the record in JOINED does not add this node to the group")
            )
        }
        var forged = good.record
        forged[forged.count - 1] ^= 1
        #expect(
            HandshakeRules.answer(
                toJoined: JoinedGroup(group: group, record: forged),
                me: me.node,
                log: log.author,
                alreadyMember: true
            ) == WireError(.badRecord, "the record in JOINED is invalid")
        )
    }

    // MARK: Over a channel with the real frame handlers

    /// An in-memory connection with the node's frame decoder and encoder, wrapped as the node wraps a socket.
    private static func connection() async throws -> (NIOAsyncTestingChannel, WireChannel) {
        let channel = NIOAsyncTestingChannel()
        let wrapped = try await channel.testingEventLoop.executeInContext {
            try channel.pipeline.syncOperations.addHandler(WireDecodingHandler())
            try channel.pipeline.syncOperations.addHandler(WireEncodingHandler())
            return try WireChannel(wrappingChannelSynchronously: channel)
        }
        return (channel, wrapped)
    }

    /// The frames the node wrote, decoded.
    private static func written(_ channel: NIOAsyncTestingChannel) async throws -> [WireMessage] {
        var decoder = FrameDecoder()
        while let buffer = try await channel.readOutbound(as: ByteBuffer.self) {
            decoder.append(buffer.readableBytesView)
        }
        var messages: [WireMessage] = []
        while let message = try decoder.next() { messages.append(message) }
        return messages
    }

    @Test(
        "a MEMBERSHIP the decoder refuses in the pipeline is answered with its ERROR before the close",
        arguments: [
            // Length 5: version 1, MEMBERSHIP, no claims, no tags, join flag 3.
            ([0, 0, 0, 5, 1, 3, 0, 0, 3], "MEMBERSHIP: join flag is 3; it must be 0, 1 or 2"),
            // Length 3: version 1, MEMBERSHIP, 33 claims (the count is refused before any claim is read).
            ([0, 0, 0, 3, 1, 3, 33], "MEMBERSHIP: 33 claims; the limit is 32"),
        ] as [([UInt8], String)]
    )
    func refusedInPipeline(frame: [UInt8], message: String) async throws {
        let (channel, connection) = try await Self.connection()
        let error = WireError(.malformedFrame, message)
        try await connection.executeThenClose { inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            // The peer's HELLO and its bad MEMBERSHIP arrive in one read; the decoder's error goes down the pipeline
            // (where the test channel, at its end, reports it) and into the inbound stream.
            await #expect(throws: error) {
                try await channel.writeInbound(ByteBuffer(bytes: WireCodec.encode(.hello(Self.hello)) + frame))
            }
            #expect(await SyncNetwork.read(.hello, iterator: &iterator) == .proceed(Self.hello))
            let action = await SyncNetwork.read(.membership, iterator: &iterator)
            let reason = "handshake failed: malformed frame: \(message)"
            #expect(action == .end(send: error, reason: reason))
            guard case .end(let send, let why) = action else { return }
            #expect(await SyncNetwork.refuse(send, reason: why, outbound: outbound) == reason)
        }
        #expect(try await Self.written(channel) == [.error(error)])
        #expect(try await channel.testingEventLoop.executeInContext { !channel.isActive }, "closed after the ERROR")
    }

    @Test("a node stopping during the handshake still writes its ERROR shutting down from the cancelled task")
    func refusalWhenCancelled() async throws {
        let (channel, connection) = try await Self.connection()
        try await connection.executeThenClose { inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            // The connection's task is cancelled (the node stops) while it waits for the peer's HELLO.
            let waiting = Task {
                let action = await SyncNetwork.read(.hello, iterator: &iterator)
                #expect(action == .end(send: HandshakeRules.shuttingDown, reason: "this node is shutting down"))
                guard case .end(let send, let why) = action else { return }
                #expect(Task.isCancelled)
                await SyncNetwork.refuse(send, reason: why, outbound: outbound)
            }
            waiting.cancel()
            await waiting.value
        }
        #expect(try await Self.written(channel) == [.error(WireError(.shuttingDown, "the node is shutting down"))])
    }

    @Test("a first frame that is not HELLO is answered with unexpected message; a closed stream with nothing")
    func wrongOrderInPipeline() async throws {
        let (channel, connection) = try await Self.connection()
        try await connection.executeThenClose { inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            try await channel.writeInbound(ByteBuffer(bytes: WireCodec.encode(.ping(5))))
            let action = await SyncNetwork.read(.hello, iterator: &iterator)
            let error = WireError(.unexpectedMessage, "expected HELLO")
            #expect(action == .end(send: error, reason: "refused: the first frame was PING, not HELLO"))
            guard case .end(let send, let why) = action else { return }
            await SyncNetwork.refuse(send, reason: why, outbound: outbound)
        }
        #expect(try await Self.written(channel) == [.error(WireError(.unexpectedMessage, "expected HELLO"))])

        let (quiet, silent) = try await Self.connection()
        try await silent.executeThenClose { inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            try await quiet.close()
            let action = await SyncNetwork.read(.membership, iterator: &iterator)
            #expect(
                action == .end(send: nil, reason: "closed during the handshake (no MEMBERSHIP within the time limit)")
            )
            await SyncNetwork.refuse(nil, reason: "closed", outbound: outbound)
        }
        #expect(try await Self.written(quiet) == [])
    }
}
