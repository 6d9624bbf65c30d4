import ContinuumCore
import ContinuumWire

// The handshake's refusals that take more than a message to decide (PROTOCOL.md §7.8.3), pure: the ERROR a
// stranger gets, a joiner's checks of the inviter and of JOINED.

extension HandshakeMachine {
    /// The ERROR a stopping node sends on a connection it ends (§7.8.12).
    public static let shuttingDown = WireError(.shuttingDown, "the node is shutting down")

    /// A TLS peer whose certificate holds no Ed25519 key. TLS refuses such a certificate before any frame (§7.8.1), so
    /// this is a guard against a TLS layer that let one through.
    public static let noEd25519Certificate = WireError(
        .identityMismatch,
        "the peer's TLS certificate holds no Ed25519 key, so it cannot name the node in HELLO"
    )

    /// The ERROR that refuses a peer sharing no group with this node (§7.8.3 step 7): what to do about it, or that
    /// this node is in no group at all, with the first claim that did not hold.
    public static func notMember(nodeInNoGroup: Bool, problem: String?) -> WireError {
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
    public static func inviterProblem(peer: NodeID, nodePrefix: [UInt8]) -> WireError? {
        guard !peer.bytes.prefix(InviteCode.nodePrefixBytes).elementsEqual(nodePrefix) else { return nil }
        return WireError(.inviteRefused, "this is not the node that made the invite")
    }

    /// A joiner's answer to JOINED: nil to take the group, or the ERROR that refuses it. The record must add this
    /// node with its new log to the group (else *bad record*); a group this node is in already joins nothing (else
    /// the session would carry the group's records to a node this one does not know as a member).
    public static func answer(
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
        let record: VerifiedRecord
        do throws(RecordError) {
            record = try SignedRecord(bytes: bytes).verify()
        } catch {
            return "the record in JOINED is invalid"
        }
        guard case .member(let change) = record.header.references, change.action == .add, change.group == group,
            change.node == me, change.log == log
        else { return "the record in JOINED does not add this node to the group" }
        return nil
    }
}
