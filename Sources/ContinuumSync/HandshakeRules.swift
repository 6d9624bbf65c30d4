import ContinuumCore
import ContinuumWire
import Foundation

// The handshake's decisions (PROTOCOL.md §7.8.3), apart from its sockets: what a node does with each thing the
// inbound stream gives it, and which ERROR refuses what. ``SyncNetwork`` reads and writes; these say what to write.

/// A point of the handshake where the node waits for one message from the peer, and how to take that message's
/// payload out of a frame.
struct HandshakeStage<Payload: Sendable>: Sendable {
    /// The message waited for, as PROTOCOL.md names it: `HELLO`.
    let name: String
    /// Which frame of the connection it is, for the log: `the first frame`.
    let position: String
    /// The payload of the message waited for; nil for any other message.
    let payload: @Sendable (WireMessage) -> Payload?
}

extension HandshakeStage where Payload == Hello {
    /// The peer's first frame, which must be its HELLO.
    static var hello: Self {
        Self(name: "HELLO", position: "the first frame") { if case .hello(let hello) = $0 { hello } else { nil } }
    }
}

extension HandshakeStage where Payload == Membership {
    /// The frame after the HELLOs, which must be the peer's MEMBERSHIP.
    static var membership: Self {
        Self(name: "MEMBERSHIP", position: "the frame after HELLO") {
            if case .membership(let membership) = $0 { membership } else { nil }
        }
    }
}

extension HandshakeStage where Payload == JoinedGroup {
    /// A joiner's frame after the MEMBERSHIPs, which must be the inviter's JOINED (or an ERROR refusing the join).
    static var joined: Self {
        Self(name: "JOINED", position: "the frame after MEMBERSHIP") {
            if case .joined(let group, let record) = $0 { JoinedGroup(group: group, record: record) } else { nil }
        }
    }
}

/// The payload of a JOINED: the group joined and the member record that adds the joiner.
struct JoinedGroup: Hashable, Sendable {
    let group: GroupID
    let record: [UInt8]
}

/// What one read of the inbound stream gave during the handshake.
enum HandshakeInput: Sendable {
    /// A whole, well-formed message.
    case message(WireMessage)
    /// The stream ended: the peer closed the connection, or the handshake's time limit closed it.
    case closed
    /// The stream threw: a frame the decoder refused (a ``WireError``), a TLS handshake that failed, or the
    /// cancellation of the connection's task (the node is stopping).
    case failed(any Error)
}

/// What the handshake does after one read.
enum HandshakeAction<Payload: Sendable>: Sendable {
    /// The message waited for came: go on with its payload.
    case proceed(Payload)
    /// The peer sent ERROR: it refused this node, and the connection ends without an answer (§7.8.12).
    case peerRefused(WireError)
    /// The connection ends: `send` goes to the peer first when there is one (nil when the connection is gone or
    /// no ERROR can cross it), and `reason` is logged.
    case end(send: WireError?, reason: String)
}

extension HandshakeAction: Equatable where Payload: Equatable {}

/// The handshake's decisions, pure: no socket, no store, no clock.
enum HandshakeRules {
    /// What the handshake does with what the inbound stream gave while it waits at `stage`. Every refusal carries
    /// its ERROR (§7.4.2: an ERROR, then the close); only a closed stream, a peer's own ERROR and a failure below the
    /// frames (TLS) end the connection without one.
    static func next<Payload>(_ input: HandshakeInput, at stage: HandshakeStage<Payload>) -> HandshakeAction<Payload> {
        switch input {
        case .message(let message):
            if let payload = stage.payload(message) { return .proceed(payload) }
            // Never answer an ERROR with an ERROR.
            if case .error(let error) = message { return .peerRefused(error) }
            return .end(
                send: WireError(.unexpectedMessage, "expected \(stage.name)"),
                reason: "refused: \(stage.position) was \(message.typeName), not \(stage.name)"
            )
        case .closed:
            return .end(send: nil, reason: "closed during the handshake (no \(stage.name) within the time limit)")
        case .failed(let error as WireError):
            // A frame the decoder refused: too large, malformed, an unknown version or type, TLS bytes at a
            // plaintext node. §7.1 and §7.6: its ERROR, then the close.
            return .end(send: error, reason: "handshake failed: \(error.code): \(error.message)")
        case .failed(is CancellationError):
            return .end(send: shuttingDown, reason: "this node is shutting down")
        case .failed(let error):
            // Below the frames (the TLS handshake failed, the socket broke): no ERROR can cross the connection.
            return .end(send: nil, reason: "handshake failed: \(error)")
        }
    }

    /// The ERROR a stopping node sends on a connection it ends (§7.8.12).
    static let shuttingDown = WireError(.shuttingDown, "the node is shutting down")

    /// A TLS peer whose certificate holds no Ed25519 key. TLS refuses such a certificate before any frame (§7.8.1), so
    /// this is a guard against a TLS layer that let one through.
    static let noEd25519Certificate = WireError(
        .identityMismatch,
        "the peer's TLS certificate holds no Ed25519 key, so it cannot name the node in HELLO"
    )

    /// The ERROR that refuses a peer sharing no group with this node (§7.8.3 step 7): what to do about it, or that
    /// this node is in no group at all, with the first claim that did not hold.
    static func notMember(nodeInNoGroup: Bool, problem: String?) -> WireError {
        var message =
            nodeInNoGroup
            ? "this node belongs to no group yet, so it shares nothing"
            : "you are not a member of any group this node belongs to: ask a member for an invite code "
                + "(continuum-node invite) and run 'continuum-node join CODE'"
        if let problem { message += " (\(problem))" }
        return WireError(.notMember, message)
    }

    /// A joiner's check of the peer before it sends its join: the node that made the invite is the one whose id
    /// starts with the code's node prefix (§7.8.3 step 4). Nil when the peer is that node.
    static func inviterProblem(peer: NodeID, code: InviteCode) -> WireError? {
        guard Data(peer.bytes.prefix(InviteCode.nodePrefixBytes)) != code.nodePrefix else { return nil }
        return WireError(.inviteRefused, "this is not the node that made the invite")
    }

    /// A joiner's answer to JOINED: nil to take the group, or the ERROR that refuses it. The record must add this
    /// node with its new log to the group (else *bad record*); a group this node is in already joins nothing (else
    /// the session would carry the group's records to a node this one does not know as a member).
    static func answer(
        toJoined joined: JoinedGroup,
        me: NodeID,
        log: AuthorID,
        alreadyMember: Bool
    ) -> WireError? {
        if let problem = problem(withJoined: joined.record, group: joined.group, me: me, log: log) {
            return WireError(.badRecord, problem)
        }
        if alreadyMember {
            return WireError(.inviteRefused, "this node is already in group \(joined.group.short); it joins nothing")
        }
        return nil
    }

    /// Why a JOINED's record is not the record that adds this node with its new log to the group; nil when it is.
    static func problem(withJoined bytes: [UInt8], group: GroupID, me: NodeID, log: AuthorID) -> String? {
        guard let record = try? SignedRecord(bytes: bytes).verify() else { return "the record in JOINED is invalid" }
        guard case .member(let change) = record.header.references, change.action == .add, change.group == group,
            change.node == me, change.log == log
        else { return "the record in JOINED does not add this node to the group" }
        return nil
    }
}
