import ContinuumCore
import ContinuumWire
import Foundation

// Groups in the engine: which groups a connecting peer shares with this node, settled by the MEMBERSHIP exchange
// right after HELLO (PROTOCOL.md §7.8.3), and the sessions' scopes kept in step with the member records.

/// What a peer's HELLO and connection say about it: what a request to join records.
struct PeerContact: Sendable {
    let name: String?
    let host: String
    let port: Int
}

/// What the MEMBERSHIP exchange settled with one peer.
struct Admission: Sendable {
    /// The groups the session shares.
    var groups: Set<GroupID>
    /// A join by invite that this node accepted: the group, and the record that adds the joiner (JOINED).
    var joined: (group: GroupID, record: [UInt8])?
    /// Why the peer's claims that did not hold failed (for the refusal's message).
    var problems: [String] = []
    /// A link or a recovery this node accepted: the records of the account, for LINKING.
    var linking: [[UInt8]]?
    /// Whether `linking` answers a recovery.
    var recovering = false
}

extension SyncEngine {
    /// Reads who belongs to which group again, and brings every session's scope in step: a session whose peer was
    /// removed from every group it shared ends with ERROR *not a member*; the others ask again for the records they
    /// held back, whose logs may be known now (``PeerSession/membersChanged()``).
    public func refreshMembership() async {
        let view: MembershipView
        do {
            view = try await store.membershipView()
        } catch {
            logger.failure("reading the groups failed", error)
            return
        }
        membership = view
        for session in sessions.values {
            let before = session.scope.groups
            let left = session.scope.update(view)
            guard left.isEmpty, !before.isEmpty else {
                await session.membersChanged()
                continue
            }
            logger.notice(
                "the peer was removed from every group this node shares with it; ending the session",
                metadata: ["peer.id": "\(session.peer.short)"]
            )
            await session.close(
                reporting: WireError(
                    .notMember,
                    "this node shares no group with you any more: you were removed from "
                        + before.map(\.short).sorted().joined(separator: ", ")
                )
            )
        }
    }

    /// The membership view, read from the store the first time.
    func currentMembership() async throws -> MembershipView {
        if let membership { return membership }
        let view = try await store.membershipView()
        membership = view
        return view
    }

    /// Our MEMBERSHIP for `peer`: a claim, with its proof, for each group in which this node knows the peer as a
    /// member and for each open group, and a tag for each network group (which tells a peer that does not know the network nothing).
    func membershipClaims(
        for peer: NodeID,
        ourNonce: SessionNonce,
        theirNonce: SessionNonce
    ) async throws
        -> Membership
    {
        let view = try await currentMembership()
        var membership = Membership()
        // Open groups are claimed to every peer: anyone may join them, and they are announced on the LAN anyway, so
        // a node that just joined one is admitted by members that do not know it yet, and admits them.
        let open = view.groups.values.filter { $0.open && !$0.network }.map(\.id)
        let claimed = view.groupsShared(with: peer).union(open)
        for group in claimed.sorted() where membership.claims.count < WireLimits.maxClaims {
            guard view.groups[group]?.network == false, let proof = try await store.membershipProof(in: group)
            else { continue }
            membership.claims.append(Membership.Claim(group: group, proof: proof))
        }
        for group in view.groups.values where group.network {
            guard membership.networkTags.count < WireLimits.maxNetworkTags else { break }
            membership.networkTags.append(
                MembershipProofs.networkTag(
                    group.id,
                    senderNonce: ourNonce.bytes,
                    receiverNonce: theirNonce.bytes,
                    sender: identity.node,
                    receiver: peer
                )
            )
        }
        return membership
    }

    /// Settles which groups a session with `peer` shares: those this node knows the peer in, those the peer proved
    /// (claims checked against this node's view, network tags: ``AdmissionRules/claimedGroups(peer:us:view:theirs:nonces:)``),
    /// and the group of an invite it used, which this node accepts once and signs the peer's membership of. Throws
    /// the ERROR that refuses the peer.
    func admit(
        _ peer: NodeID,
        contact: PeerContact,
        theirs: Membership,
        ourNonce: SessionNonce,
        theirNonce: SessionNonce
    ) async throws(WireError) -> Admission {
        let view: MembershipView
        do {
            view = try await currentMembership()
        } catch {
            logger.failure("reading the groups failed", error)
            throw WireError(.internal, "the node failed while reading its groups")
        }
        let nonces = (ours: ourNonce, theirs: theirNonce)
        var (admission, failed) = AdmissionRules.claimedGroups(
            peer: peer,
            us: identity.node,
            view: view,
            theirs: theirs,
            nonces: nonces
        )
        for claim in failed {
            logger.debug(
                "a claim of membership does not hold",
                metadata: ["peer.id": "\(peer.short)", "group": "\(claim.group.short)", "reason": "\(claim.reason)"]
            )
        }
        if let request = theirs.request {
            let (group, record) = try await answer(request, from: peer, contact: contact, nonces: nonces)
            admission.groups.insert(group)
            admission.joined = (group, record)
        }
        if let join = theirs.join {
            let (group, record) = try await redeem(join, from: peer, nonces: nonces)
            admission.groups.insert(group)
            admission.joined = (group, record)
        }
        if let link = theirs.link {
            admission.linking = try await checkLink(link, from: peer, nonces: nonces)
        }
        if let recovery = theirs.recovery {
            admission.linking = try await checkRecovery(recovery, from: peer, nonces: nonces)
            admission.recovering = true
        }
        return admission
    }

    /// A join by invite: the joiner's proof of its log key checked, then the invite used (once). Returns the group
    /// and the record that adds the joiner; throws the ERROR that refuses it.
    private func redeem(
        _ join: Membership.Join,
        from peer: NodeID,
        nonces: (ours: SessionNonce, theirs: SessionNonce)
    ) async throws(WireError) -> (GroupID, [UInt8]) {
        let inviter = identity.node
        guard
            MembershipProofs.isLogSignature(
                join.signature,
                log: join.log,
                inviterNonce: nonces.ours.bytes,
                joinerNonce: nonces.theirs.bytes,
                joiner: peer
            )
        else {
            logger.notice("refused a join without proof of its log key", metadata: ["peer.id": "\(peer.short)"])
            throw WireError(.inviteRefused, "the joiner does not prove that it holds the log key it asks to have added")
        }
        let proves: @Sendable (Data) -> Bool = { secret in
            let expected = MembershipProofs.joinMAC(
                secret: secret,
                inviterNonce: nonces.ours.bytes,
                joinerNonce: nonces.theirs.bytes,
                inviter: inviter,
                joiner: peer,
                log: join.log
            )
            return expected == join.mac
        }
        let redeemed: (GroupID, [UInt8])
        do {
            redeemed = try await store.redeemInvite(id: join.invite, node: peer, log: join.log, proves: proves)
            logger.notice(
                "a node joined a group with an invite",
                metadata: ["peer.id": "\(peer.short)", "group": "\(redeemed.0.short)"]
            )
        } catch {
            let reason = "\(error)"
            logger.notice("refused an invite", metadata: ["peer.id": "\(peer.short)", "reason": "\(reason)"])
            throw WireError(.inviteRefused, reason)
        }
        await refreshMembership()
        return redeemed
    }

    /// A request to join: recorded for an admin here, or answered (approved since, or denied). Returns the group and
    /// the record that adds the asker once approved; else throws the ERROR that tells it where its request stands.
    private func answer(
        _ request: Membership.Request,
        from peer: NodeID,
        contact: PeerContact,
        nonces: (ours: SessionNonce, theirs: SessionNonce)
    ) async throws(WireError) -> (GroupID, [UInt8]) {
        guard
            MembershipProofs.isLogSignature(
                request.signature,
                log: request.log,
                inviterNonce: nonces.ours.bytes,
                joinerNonce: nonces.theirs.bytes,
                joiner: peer
            )
        else {
            logger.notice("refused a request without proof of its log key", metadata: ["peer.id": "\(peer.short)"])
            throw WireError(
                .inviteRefused,
                "the request does not prove that it holds the log key it asks to have added"
            )
        }
        let answer: JoinRequestAnswer
        do {
            answer = try await store.askToJoin(
                node: peer,
                log: request.log,
                name: contact.name,
                host: contact.host,
                port: contact.port
            )
        } catch {
            logger.failure("recording a request to join failed", error)
            throw WireError(.internal, "the node failed while recording the request")
        }
        return try reply(to: answer, from: peer, contact: contact)
    }

    /// What a request's answer means for the asker: the group and its record once approved, else the ERROR that
    /// tells it where its request stands (a first request is announced to `watch`).
    private func reply(
        to answer: JoinRequestAnswer,
        from peer: NodeID,
        contact: PeerContact
    ) throws(WireError) -> (GroupID, [UInt8]) {
        switch answer {
        case .approved(let group, let record):
            logger.notice(
                "a node whose request to join was approved came for its record",
                metadata: ["peer.id": "\(peer.short)", "group": "\(group.short)"]
            )
            return (group, record)
        case .pending(let first):
            if first {
                logger.notice(
                    "a node asks to join; approve it with 'continuum-node approve' or deny it with 'deny'",
                    metadata: [
                        "peer.id": "\(peer.short)", "peer.name": "\(contact.name ?? "")",
                        "peer.host": "\(contact.host)",
                    ]
                )
                emit(.joinRequested(AuthorID(unchecked: peer.bytes), name: contact.name))
            }
            throw WireError(
                .requestPending,
                "your request to join is recorded; it waits for an admin of this node to approve it "
                    + "(there: 'continuum-node requests', then 'continuum-node approve \(peer.short)')"
            )
        case .denied:
            throw WireError(.requestDenied, "an admin of this node denied your request to join")
        case .noAdmin:
            throw WireError(
                .notMember,
                "this node is an admin of no group, so it cannot let you in: ask a node that is an admin"
            )
        }
    }

    /// A peer that shares no group was refused: remembered for `peers`, and logged with its id.
    func refusedStranger(_ peer: NodeID, name: String?, host: String, port: Int) async {
        logger.notice(
            "refused a node that shares no group with this node",
            metadata: ["peer.id": "\(peer.short)", "peer.host": "\(host)"]
        )
        await remember(peer, name: name, host: host, port: port, state: "refused: not a member")
    }

    /// This node was refused by a peer (it shares no group with it, or its invite was refused): remembered for
    /// `peers`.
    func refusedBy(_ peer: NodeID, name: String?, host: String, port: Int, reason: String) async {
        await remember(peer, name: name, host: host, port: port, state: "refused us: \(reason)")
    }

    /// Remembers a refusal, either way, for `peers`. A failure is logged: only `peers` misses the refusal, and the
    /// connection has ended either way.
    private func remember(_ peer: NodeID, name: String?, host: String, port: Int, state: String) async {
        do {
            try await store.rememberPeer(
                AuthorID(unchecked: peer.bytes),
                name: name,
                host: host,
                port: port,
                state: state
            )
        } catch {
            logger.failure("remembering a refused peer (\(state)) failed", error)
        }
    }
}
