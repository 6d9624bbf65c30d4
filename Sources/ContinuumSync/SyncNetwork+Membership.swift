import ContinuumCore
import ContinuumWire
import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// A join under way, by invite or by request: what the joiner proves, and where the outcome goes (the group joined,
/// or why not).
public final class JoinAttempt: Sendable {
    /// The invite, or nil for a request to join (which an admin of the peer approves).
    let code: InviteCode?
    /// The joiner's new log key for the group, which signs the join.
    let logKey: NodeIdentity
    public var log: AuthorID { logKey.author }
    /// Whether this asks to join rather than joins by invite.
    public var isRequest: Bool { code == nil }
    /// The node a request is for, when the asker knows its id: the connection must present that key.
    public let expected: AuthorID?
    private let result = NIOLockedValueBox<Bool?>(nil)

    /// Whether the join succeeded (false until it has).
    public var succeeded: Bool { result.withLockedValue { $0 } == true }
    private let continuation: AsyncStream<Result<GroupID, JoinFailure>>.Continuation
    /// The outcome, once: the group joined, or why the join failed.
    public let outcome: AsyncStream<Result<GroupID, JoinFailure>>

    /// A join with an invite code.
    public init(code: InviteCode, log: NodeIdentity) {
        self.code = code
        self.logKey = log
        expected = nil
        (outcome, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingOldest(1))
    }

    /// A request to join, to whichever group an admin of the peer approves it into.
    public init(asking log: NodeIdentity, of node: AuthorID? = nil) {
        self.code = nil
        self.logKey = log
        expected = node
        (outcome, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingOldest(1))
    }

    func finish(_ result: Result<GroupID, JoinFailure>) {
        self.result.withLockedValue { state in
            if state == nil, case .success = result { state = true }
            if state == nil { state = false }
        }
        continuation.yield(result)
        continuation.finish()
    }

    func fail(_ reason: String) { finish(.failure(JoinFailure(description: reason))) }
}

/// Why a join failed, for a person.
public struct JoinFailure: Error, Sendable, CustomStringConvertible {
    public let description: String
    /// A request to join that waits for an admin: asking again later may succeed.
    public let pending: Bool

    public init(description: String, pending: Bool = false) {
        self.description = description
        self.pending = pending
    }
}

extension SyncNetwork {
    enum MembershipOutcome {
        /// The groups the session shares; `joined`: a join by invite or request was completed on this connection
        /// (either side), so the session is kept whatever the overlay's bound.
        case accepted(Set<GroupID>, joined: Bool)
        /// Why the connection ends (the peer was told with an ERROR, where there is one to tell).
        case ended(String)
    }

    /// The two sides of a connection being admitted.
    struct Meeting {
        let theirs: Hello
        let ours: Hello
        let host: String
        var peer: NodeID { NodeID(unchecked: theirs.node.bytes) }
        var me: NodeID { NodeID(unchecked: ours.node.bytes) }
    }

    /// After both HELLOs: each side's MEMBERSHIP (claims, network tags, a join), then JOINED for an invite used;
    /// the session goes on only with groups shared (PROTOCOL.md §7.8.3).
    func exchangeMembership(
        theirs: Hello,
        ours: Hello,
        host: String,
        join: JoinAttempt?,
        iterator: inout NIOAsyncChannelInboundStream<WireMessage>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<WireMessage>
    ) async throws -> MembershipOutcome {
        let meeting = Meeting(theirs: theirs, ours: ours, host: host)
        let claims: Membership
        switch await ourMembership(meeting, join: join) {
        case .success(let membership): claims = membership
        case .failure(let refusal):
            try? await outbound.write(.error(refusal.error))
            return .ended(refusal.reason)
        }
        try await outbound.write(.membership(claims))
        let theirClaims: Membership
        switch try await iterator.next() {
        case .membership(let membership)?: theirClaims = membership
        case .error(let error)?: return await refusedByPeer(meeting, error)
        case let other:
            try? await outbound.write(.error(WireError(.unexpectedMessage, "expected MEMBERSHIP")))
            return .ended("refused: the frame after HELLO was \(other?.typeName ?? "nothing"), not MEMBERSHIP")
        }
        var admission: Admission
        do {
            admission = try await engine.admit(
                meeting.peer,
                contact: PeerContact(name: theirs.name, host: host, port: Int(theirs.listenPort)),
                theirs: theirClaims,
                ourNonce: ours.nonce,
                theirNonce: theirs.nonce
            )
        } catch {
            try? await outbound.write(.error(error))
            return .ended("refused: \(error.message)")
        }
        if let joined = admission.joined {
            try await outbound.write(.joined(group: joined.group, record: joined.record))
            await engine.session(for: theirs.node)?.scope.add(joined.group)
        }
        if let join {
            switch try await receiveJoined(meeting, join: join, iterator: &iterator, outbound: outbound) {
            case .success(let group): admission.groups.insert(group)
            case .failure(let ended): return ended.outcome
            }
        }
        guard !admission.groups.isEmpty else {
            return await refuseStranger(meeting, admission, iterator: &iterator, outbound: outbound)
        }
        return .accepted(admission.groups, joined: admission.joined != nil || join != nil)
    }

    /// Why this side ends the connection: what the peer is told, and what is logged.
    struct Refusal: Error {
        let error: WireError
        let reason: String
    }

    /// An outcome that ends the connection, as an error.
    struct Ended: Error {
        let outcome: MembershipOutcome
    }

    /// Our MEMBERSHIP: the claims and tags for this peer, and the join when this connection carries one (after
    /// checking that the peer is the node that made the invite).
    private func ourMembership(_ meeting: Meeting, join: JoinAttempt?) async -> Result<Membership, Refusal> {
        let peer = meeting.peer
        if let code = join?.code, Data(peer.bytes.prefix(InviteCode.nodePrefixBytes)) != code.nodePrefix {
            return .failure(
                Refusal(
                    error: WireError(.inviteRefused, "this is not the node that made the invite"),
                    reason: "the node at \(meeting.host) (\(peer.short)) is not the one that made the invite"
                )
            )
        }
        var claims: Membership
        do {
            claims = try await engine.membershipClaims(
                for: peer,
                ourNonce: meeting.ours.nonce,
                theirNonce: meeting.theirs.nonce
            )
        } catch {
            logger.failure("reading the groups failed", error)
            return .failure(
                Refusal(
                    error: WireError(.internal, "the node failed while reading its groups"),
                    reason: "reading the groups failed: \(error)"
                )
            )
        }
        if let join {
            let message = MembershipProofs.joinLogMessage(
                inviterNonce: meeting.theirs.nonce.bytes,
                joinerNonce: meeting.ours.nonce.bytes,
                joiner: meeting.me
            )
            guard let signature = try? join.logKey.privateKey.signature(for: message) else {
                return .failure(
                    Refusal(error: WireError(.internal, "signing the join failed"), reason: "signing the join failed")
                )
            }
            guard let code = join.code else {
                claims.request = Membership.Request(log: join.log, signature: Array(signature))
                return .success(claims)
            }
            claims.join = Membership.Join(
                invite: InviteCode.id(of: code.secret),
                log: join.log,
                mac: MembershipProofs.joinMAC(
                    secret: code.secret,
                    inviterNonce: meeting.theirs.nonce.bytes,
                    joinerNonce: meeting.ours.nonce.bytes,
                    inviter: peer,
                    joiner: meeting.me,
                    log: join.log
                ),
                signature: Array(signature)
            )
        }
        return .success(claims)
    }

    /// The joiner's side: the inviter's JOINED (or its refusal); the group joined is recorded and reported.
    private func receiveJoined(
        _ meeting: Meeting,
        join: JoinAttempt,
        iterator: inout NIOAsyncChannelInboundStream<WireMessage>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<WireMessage>
    ) async throws -> Result<GroupID, Ended> {
        switch try await iterator.next() {
        case .joined(let group, let record)?:
            let whose = join.isRequest ? "the node's" : "the inviter's"
            if let problem = Self.problem(withJoined: record, group: group, me: meeting.me, log: join.log) {
                try? await outbound.write(.error(WireError(.badRecord, problem)))
                return .failure(Ended(outcome: .ended("refused \(whose) JOINED: \(problem)")))
            }
            // A group this node is in already: a JOINED must not add it to a session with a node this node does
            // not know as a member (it would be sent the group's records).
            if (try? await engine.currentMembership().groups[group]) != nil {
                let problem = "this node is already in group \(group.short); it joins nothing"
                try? await outbound.write(.error(WireError(.inviteRefused, problem)))
                join.fail("already a member of group \(group.short)")
                return .failure(Ended(outcome: .ended("refused \(whose) JOINED: \(problem)")))
            }
            do {
                try await engine.store.completeJoin(log: join.log, group: group)
            } catch {
                logger.failure("recording the group joined failed", error)
                return .failure(Ended(outcome: .ended("recording the group joined failed: \(error)")))
            }
            await engine.refreshMembership()
            // A session with the inviter that already exists keeps this connection from becoming one: it takes the
            // group instead.
            await engine.session(for: meeting.theirs.node)?.scope.add(group)
            join.finish(.success(group))
            return .success(group)
        case .error(let error)? where error.code == .requestPending:
            // Asked again every few seconds while it waits: not logged each time, nor remembered as a refusal.
            join.finish(.failure(JoinFailure(description: error.message, pending: true)))
            return .failure(Ended(outcome: .ended("the request to join waits for an admin: \(error.message)")))
        case .error(let error)?:
            return .failure(Ended(outcome: await refusedByPeer(meeting, error)))
        case let other:
            try? await outbound.write(.error(WireError(.unexpectedMessage, "expected JOINED")))
            return .failure(
                Ended(
                    outcome: .ended(
                        "refused: the frame after MEMBERSHIP was \(other?.typeName ?? "nothing"), not JOINED"
                    )
                )
            )
        }
    }

    /// No group shared: the peer is told why, and the refusal is logged and remembered. A node in no group reports
    /// the peer's verdict instead (usually on its way), which says what to do.
    private func refuseStranger(
        _ meeting: Meeting,
        _ admission: Admission,
        iterator: inout NIOAsyncChannelInboundStream<WireMessage>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<WireMessage>
    ) async -> MembershipOutcome {
        let mine = (try? await engine.currentMembership().groups.isEmpty) ?? true
        var message =
            mine
            ? "this node belongs to no group yet, so it shares nothing"
            : "you are not a member of any group this node belongs to: ask a member for an invite code "
                + "(continuum-node invite) and run 'continuum-node join CODE'"
        if let problem = admission.problems.first { message += " (\(problem))" }
        try? await outbound.write(.error(WireError(.notMember, message)))
        if mine, case .error(let error)? = try? await iterator.next() {
            return await refusedByPeer(meeting, error)
        }
        let theirs = meeting.theirs
        await engine.refusedStranger(meeting.peer, name: theirs.name, host: meeting.host, port: Int(theirs.listenPort))
        return .ended("refused \(meeting.peer.short): it shares no group with this node")
    }

    /// The peer refused this node: logged where a person sees it, and remembered for `peers`.
    private func refusedByPeer(_ meeting: Meeting, _ error: WireError) async -> MembershipOutcome {
        logger.warning(
            "refused by the peer",
            metadata: [
                "peer.id": "\(meeting.peer.short)", "peer.host": "\(meeting.host)",
                "error": "\(error.code): \(error.message)",
            ]
        )
        await engine.refusedBy(
            meeting.peer,
            name: meeting.theirs.name,
            host: meeting.host,
            port: Int(meeting.theirs.listenPort),
            reason: "\(error.code): \(error.message)"
        )
        return .ended("the peer refused: \(error.code): \(error.message)")
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
