import ContinuumCore
import ContinuumWire
import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// A join by invite under way: what the joiner proves, and where the outcome goes (the group joined, or why not).
public final class JoinAttempt: Sendable {
    let code: InviteCode
    /// The joiner's new log key for the group.
    public let log: AuthorID
    private let result = NIOLockedValueBox<Bool?>(nil)

    /// Whether the join succeeded (false until it has).
    public var succeeded: Bool { result.withLockedValue { $0 } == true }
    private let continuation: AsyncStream<Result<GroupID, JoinFailure>>.Continuation
    /// The outcome, once: the group joined, or why the join failed.
    public let outcome: AsyncStream<Result<GroupID, JoinFailure>>

    public init(code: InviteCode, log: AuthorID) {
        self.code = code
        self.log = log
        (outcome, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingOldest(1))
    }

    var inviteID: [UInt8] { InviteCode.id(of: code.secret) }

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

    public init(description: String) { self.description = description }
}

extension SyncNetwork {
    enum MembershipOutcome {
        /// The groups the session shares.
        case accepted(Set<GroupID>)
        /// Why the connection ends (the peer was told with an ERROR, where there is one to tell).
        case ended(String)
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
        let peer = NodeID(unchecked: theirs.node.bytes)
        let me = NodeID(unchecked: ours.node.bytes)
        if let join, Data(peer.bytes.prefix(InviteCode.nodePrefixBytes)) != join.code.nodePrefix {
            try? await outbound.write(.error(WireError(.inviteRefused, "this is not the node that made the invite")))
            return .ended("the node at \(host) (\(peer.short)) is not the one that made the invite")
        }
        var claims: Membership
        do {
            claims = try await engine.membershipClaims(for: peer, ourNonce: ours.nonce, theirNonce: theirs.nonce)
        } catch {
            logger.failure("reading the groups failed", error)
            try? await outbound.write(.error(WireError(.internal, "the node failed while reading its groups")))
            return .ended("reading the groups failed: \(error)")
        }
        if let join {
            claims.join = Membership.Join(
                invite: join.inviteID,
                log: join.log,
                mac: MembershipProofs.joinMAC(
                    secret: join.code.secret,
                    inviterNonce: theirs.nonce.bytes,
                    joinerNonce: ours.nonce.bytes,
                    inviter: peer,
                    joiner: me,
                    log: join.log
                )
            )
        }
        try await outbound.write(.membership(claims))
        let theirClaims: Membership
        switch try await iterator.next() {
        case .membership(let membership)?: theirClaims = membership
        case .error(let error)?: return await refusedByPeer(peer, theirs, host: host, error)
        case let other:
            let name = other?.typeName ?? "nothing"
            try? await outbound.write(.error(WireError(.unexpectedMessage, "expected MEMBERSHIP")))
            return .ended("refused: the frame after HELLO was \(name), not MEMBERSHIP")
        }
        var admission: Admission
        do {
            admission = try await engine.admit(
                peer,
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
            switch try await iterator.next() {
            case .joined(let group, let record)?:
                if let problem = Self.problem(withJoined: record, group: group, me: me, log: join.log) {
                    try? await outbound.write(.error(WireError(.badRecord, problem)))
                    return .ended("refused the inviter's JOINED: \(problem)")
                }
                do {
                    try await engine.store.completeJoin(log: join.log, group: group)
                } catch {
                    logger.failure("recording the group joined failed", error)
                    return .ended("recording the group joined failed: \(error)")
                }
                await engine.refreshMembership()
                admission.groups.insert(group)
                // A session with the inviter that already exists keeps this connection from becoming one: it takes
                // the group instead.
                await engine.session(for: theirs.node)?.scope.add(group)
                join.finish(.success(group))
            case .error(let error)?:
                return await refusedByPeer(peer, theirs, host: host, error)
            case let other:
                let name = other?.typeName ?? "nothing"
                try? await outbound.write(.error(WireError(.unexpectedMessage, "expected JOINED")))
                return .ended("refused: the frame after MEMBERSHIP was \(name), not JOINED")
            }
        }
        guard !admission.groups.isEmpty else {
            let mine = (try? await engine.currentMembership().groups.isEmpty) ?? true
            var message =
                mine
                ? "this node belongs to no group yet, so it shares nothing"
                : "you are not a member of any group this node belongs to: ask a member for an invite code "
                    + "(continuum-node invite) and run 'continuum-node join CODE'"
            if let problem = admission.problems.first { message += " (\(problem))" }
            try? await outbound.write(.error(WireError(.notMember, message)))
            // The peer's own verdict is usually on its way: a node that is in no group reports the member's
            // refusal, which says what to do, rather than its own.
            if mine, case .error(let error)? = try? await iterator.next() {
                return await refusedByPeer(peer, theirs, host: host, error)
            }
            await engine.refusedStranger(peer, name: theirs.name, host: host, port: Int(theirs.listenPort))
            return .ended("refused \(peer.short): it shares no group with this node")
        }
        return .accepted(admission.groups)
    }

    /// The peer refused this node: logged where a person sees it, and remembered for `peers`.
    private func refusedByPeer(
        _ peer: NodeID,
        _ theirs: Hello,
        host: String,
        _ error: WireError
    ) async
        -> MembershipOutcome
    {
        logger.warning(
            "refused by the peer",
            metadata: ["peer.id": "\(peer.short)", "peer.host": "\(host)", "error": "\(error.code): \(error.message)"]
        )
        await engine.refusedBy(
            peer,
            name: theirs.name,
            host: host,
            port: Int(theirs.listenPort),
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
