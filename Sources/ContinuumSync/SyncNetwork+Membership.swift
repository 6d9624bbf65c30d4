import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// A join under way, by invite or by request, or a link into an account: what the joiner proves, and where the
/// outcome goes (the group joined, or why not).
public final class JoinAttempt: Sendable {
    /// The invite or link code, or nil for a request to join (which an admin of the peer approves).
    let code: InviteCode?
    /// The key that signs: the joiner's new log key for the group, or for a link the node's own key (its consent).
    let logKey: NodeIdentity
    public var log: AuthorID { logKey.author }
    /// Whether this asks to join rather than joins by invite.
    public var isRequest: Bool { code == nil && recovery == nil }
    /// Whether this recovers an account with its recovery key.
    public var isRecovery: Bool { recovery != nil }
    /// Whether this links the node into the account of the code's maker.
    public var isLink: Bool { code?.isLink == true }
    /// A link's LINKING records, kept from the consent to the LINKED.
    let linking = NIOLockedValueBox<[[UInt8]]>([])
    /// The node a request is for, when the asker knows its id: the connection must present that key.
    public let expected: AuthorID?
    /// A recovery of the account whose recovery key this is (PROTOCOL.md §7.8.20), and the name this device takes.
    let recovery: NodeIdentity?
    let name: String?
    private let result = NIOLockedValueBox<Bool?>(nil)

    /// Whether the join succeeded (false until it has).
    public var succeeded: Bool { result.withLockedValue { $0 } == true }
    private let continuation: AsyncStream<Result<GroupID?, JoinFailure>>.Continuation
    /// The outcome, once: the group joined (nil: linked into the account), or why the join failed.
    public let outcome: AsyncStream<Result<GroupID?, JoinFailure>>

    /// A join with an invite code.
    public init(code: InviteCode, log: NodeIdentity) {
        self.code = code
        self.logKey = log
        expected = nil
        recovery = nil
        name = nil
        (outcome, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingOldest(1))
    }

    /// A recovery: the recovery key adds this node (`device`) to its account; the device takes `name` when given.
    public init(recovering key: NodeIdentity, device: NodeIdentity, name: String?) {
        code = nil
        logKey = device
        expected = nil
        recovery = key
        self.name = name
        (outcome, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingOldest(1))
    }

    /// A request to join, to whichever group an admin of the peer approves it into.
    public init(asking log: NodeIdentity, of node: AuthorID? = nil) {
        self.code = nil
        self.logKey = log
        expected = node
        recovery = nil
        name = nil
        (outcome, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingOldest(1))
    }

    func finish(_ result: Result<GroupID?, JoinFailure>) {
        self.result.withLockedValue { state in
            if state == nil, case .success = result { state = true }
            if state == nil { state = false }
        }
        continuation.yield(result)
        continuation.finish()
    }

    func fail(_ reason: String) { finish(.failure(JoinFailure(description: reason))) }

    /// The join as the handshake machine sees it.
    var handshakeJoin: HandshakeJoin {
        if recovery != nil { return .recover }
        guard let code else { return .request(log: log) }
        return code.isLink
            ? .link(nodePrefix: Array(code.nodePrefix)) : .invite(nodePrefix: Array(code.nodePrefix), log: log)
    }
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
    /// Why this side ends the connection: what the peer is told, and what is logged.
    struct Refusal: Error {
        let error: WireError
        let reason: String
    }

    /// Our MEMBERSHIP (§7.8.3 step 4): the claims and tags for this peer, and the join or request when this
    /// connection carries one.
    func ourMembership(_ meeting: HandshakeMeeting, join: JoinAttempt?) async -> Result<Membership, Refusal> {
        let peer = meeting.peer
        var claims: Membership
        do {
            claims = try await engine.membershipClaims(
                for: peer,
                ourNonce: meeting.ours.nonce,
                theirNonce: meeting.theirs.nonce
            )
        } catch {
            return .failure(Refusal(error: readingGroupsFailed(error), reason: "reading the groups failed: \(error)"))
        }
        guard let join else { return .success(claims) }
        if let recovery = join.recovery {
            // A signing failure is not thrown on: it is the refusal, which says what failed.
            guard let proof = Self.recoveryProof(recovery, meeting) else {
                let error = WireError(.internal, "signing the recovery failed")
                return .failure(Refusal(error: error, reason: "signing the recovery failed"))
            }
            claims.recovery = proof
            return .success(claims)
        }
        if let code = join.code, code.isLink {
            claims.link = Self.linkProof(code, meeting)
            return .success(claims)
        }
        let message = MembershipProofs.joinLogMessage(
            inviterNonce: meeting.theirs.nonce.bytes,
            joinerNonce: meeting.ours.nonce.bytes,
            joiner: meeting.me
        )
        // A signing failure is not thrown on: it is the refusal, which says what failed.
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
        return .success(claims)
    }

    /// A link code's proof for MEMBERSHIP, bound to this connection (PROTOCOL.md §7.8.19).
    static func linkProof(_ code: InviteCode, _ meeting: HandshakeMeeting) -> Membership.Link {
        Membership.Link(
            ticket: InviteCode.id(of: code.secret),
            mac: MembershipProofs.linkMAC(
                secret: code.secret,
                linkerNonce: meeting.theirs.nonce.bytes,
                deviceNonce: meeting.ours.nonce.bytes,
                linker: meeting.peer,
                device: meeting.me
            )
        )
    }

    /// The recovery key's proof for MEMBERSHIP, bound to this connection (PROTOCOL.md §7.8.20); nil when signing
    /// failed.
    static func recoveryProof(_ key: NodeIdentity, _ meeting: HandshakeMeeting) -> Membership.Recovery? {
        let message = MembershipProofs.recoveryMessage(
            receiverNonce: meeting.theirs.nonce.bytes,
            deviceNonce: meeting.ours.nonce.bytes,
            receiver: meeting.peer,
            device: meeting.me
        )
        guard let signature = try? key.privateKey.signature(for: message) else { return nil }
        return Membership.Recovery(key: key.author, signature: Array(signature))
    }

    /// The engine's admission of the peer on its MEMBERSHIP (``SyncEngine/admit(_:contact:theirs:ourNonce:theirNonce:)``),
    /// and, when it shares nothing and joins nothing, whether this node is in no group at all (which only changes
    /// the message of the refusal).
    func admit(
        _ meeting: HandshakeMeeting,
        _ theirClaims: Membership,
        joining: Bool
    ) async -> Result<HandshakeAdmission, WireError> {
        let theirs = meeting.theirs
        let admission: Admission
        do {
            admission = try await engine.admit(
                meeting.peer,
                contact: PeerContact(name: theirs.name, host: meeting.host, port: Int(theirs.listenPort)),
                theirs: theirClaims,
                ourNonce: meeting.ours.nonce,
                theirNonce: theirs.nonce
            )
        } catch {
            return .failure(error)
        }
        var answer = HandshakeAdmission(
            groups: admission.groups,
            joined: admission.joined.map { JoinedGroup(group: $0.group, record: $0.record) },
            problem: admission.problems.first,
            linking: admission.linking,
            recovering: admission.recovering
        )
        if answer.groups.isEmpty, answer.joined == nil, !joining {
            // The refusal itself was decided by admission. A failed read is logged and the peer gets the plain "not
            // a member" message, which admission found true, rather than a guess that this node has no groups.
            do {
                answer.nodeInNoGroup = try await engine.currentMembership().groups.isEmpty
            } catch {
                logger.failure("reading this node's groups for a refusal failed", error)
            }
        }
        return .success(answer)
    }

    /// The peer refused this node: logged where a person sees it, and remembered for `peers`.
    func refusedByPeer(_ meeting: HandshakeMeeting, _ error: WireError) async {
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
    }
}
