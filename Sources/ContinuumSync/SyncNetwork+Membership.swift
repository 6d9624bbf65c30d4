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
    ///
    /// Every refusal is an ERROR with its code, then the close: a MEMBERSHIP or JOINED that the decoder refused
    /// included (``read(_:iterator:)``).
    func exchangeMembership(
        _ meeting: Meeting,
        join: JoinAttempt?,
        iterator: inout NIOAsyncChannelInboundStream<WireMessage>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<WireMessage>
    ) async throws -> MembershipOutcome {
        let claims: Membership
        switch await ourMembership(meeting, join: join) {
        case .success(let membership): claims = membership
        case .failure(let refusal):
            return .ended(await Self.refuse(refusal.error, reason: refusal.reason, outbound: outbound))
        }
        try await outbound.write(.membership(claims))
        let theirClaims: Membership
        switch await Self.read(.membership, iterator: &iterator) {
        case .proceed(let membership): theirClaims = membership
        case .peerRefused(let error): return await refusedByPeer(meeting, error)
        case .end(let error, let reason): return .ended(await Self.refuse(error, reason: reason, outbound: outbound))
        }
        let theirs = meeting.theirs
        var admission: Admission
        do {
            admission = try await engine.admit(
                meeting.peer,
                contact: PeerContact(name: theirs.name, host: meeting.host, port: Int(theirs.listenPort)),
                theirs: theirClaims,
                ourNonce: meeting.ours.nonce,
                theirNonce: theirs.nonce
            )
        } catch {
            return .ended(await Self.refuse(error, reason: "refused: \(error.message)", outbound: outbound))
        }
        if let joined = admission.joined {
            try await outbound.write(.joined(group: joined.group, record: joined.record))
            await engine.session(for: theirs.node)?.scope.add(joined.group)
        }
        if let join {
            switch await receiveJoined(meeting, join: join, iterator: &iterator, outbound: outbound) {
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
        if let code = join?.code, let refusal = HandshakeRules.inviterProblem(peer: peer, code: code) {
            return .failure(
                Refusal(
                    error: refusal,
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
    ) async -> Result<GroupID, Ended> {
        switch await Self.read(.joined, iterator: &iterator) {
        case .proceed(let joined):
            return await takeJoined(joined, meeting, join: join, outbound: outbound)
        case .peerRefused(let error) where error.code == .requestPending:
            // Asked again every few seconds while it waits: not logged each time, nor remembered as a refusal.
            join.finish(.failure(JoinFailure(description: error.message, pending: true)))
            return .failure(Ended(outcome: .ended("the request to join waits for an admin: \(error.message)")))
        case .peerRefused(let error):
            return .failure(Ended(outcome: await refusedByPeer(meeting, error)))
        case .end(let error, let reason):
            return .failure(Ended(outcome: .ended(await Self.refuse(error, reason: reason, outbound: outbound))))
        }
    }

    /// A JOINED received: checked (``HandshakeRules/answer(toJoined:me:log:alreadyMember:)``), then the group joined
    /// is recorded, added to a session with the inviter that exists already, and reported.
    private func takeJoined(
        _ joined: JoinedGroup,
        _ meeting: Meeting,
        join: JoinAttempt,
        outbound: NIOAsyncChannelOutboundWriter<WireMessage>
    ) async -> Result<GroupID, Ended> {
        let whose = join.isRequest ? "the node's" : "the inviter's"
        let ended = { (error: WireError, reason: String) in
            Ended(outcome: .ended(await Self.refuse(error, reason: reason, outbound: outbound)))
        }
        let alreadyMember: Bool
        do {
            alreadyMember = try await engine.currentMembership().groups[joined.group] != nil
        } catch {
            logger.failure("reading the groups failed", error)
            let refusal = WireError(.internal, "the node failed while reading its groups")
            return .failure(await ended(refusal, "reading the groups failed: \(error)"))
        }
        if let refusal = HandshakeRules.answer(
            toJoined: joined,
            me: meeting.me,
            log: join.log,
            alreadyMember: alreadyMember
        ) {
            if refusal.code == .inviteRefused { join.fail("already a member of group \(joined.group.short)") }
            return .failure(await ended(refusal, "refused \(whose) JOINED: \(refusal.message)"))
        }
        do {
            try await engine.store.completeJoin(log: join.log, group: joined.group)
        } catch {
            logger.failure("recording the group joined failed", error)
            let refusal = WireError(.internal, "the joining node failed while recording the group joined")
            return .failure(await ended(refusal, "recording the group joined failed: \(error)"))
        }
        await engine.refreshMembership()
        // A session with the inviter that already exists keeps this connection from becoming one: it takes the
        // group instead.
        await engine.session(for: meeting.theirs.node)?.scope.add(joined.group)
        join.finish(.success(joined.group))
        return .success(joined.group)
    }

    /// No group shared: the peer is told why, and the refusal is logged and remembered. A node in no group reports
    /// the peer's verdict instead (usually on its way), which says what to do.
    private func refuseStranger(
        _ meeting: Meeting,
        _ admission: Admission,
        iterator: inout NIOAsyncChannelInboundStream<WireMessage>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<WireMessage>
    ) async -> MembershipOutcome {
        // Whether this node is in no group at all only changes which message the peer reads; the refusal itself was
        // decided by admission. A failed read is logged and the peer gets the plain "not a member" message, which
        // admission found true, rather than a guess that this node has no groups.
        let mine: Bool
        do {
            mine = try await engine.currentMembership().groups.isEmpty
        } catch {
            logger.failure("reading this node's groups for a refusal failed", error)
            mine = false
        }
        let reason = "refused \(meeting.peer.short): it shares no group with this node"
        let refusal = HandshakeRules.notMember(nodeInNoGroup: mine, problem: admission.problems.first)
        await Self.refuse(refusal, reason: reason, outbound: outbound)
        // A read that fails here only means that the peer's verdict does not come: the refusal stands as this
        // node's own, which is what a node with groups reports anyway.
        if mine, case .error(let error)? = try? await iterator.next() {
            return await refusedByPeer(meeting, error)
        }
        let theirs = meeting.theirs
        await engine.refusedStranger(meeting.peer, name: theirs.name, host: meeting.host, port: Int(theirs.listenPort))
        return .ended(reason)
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
}
