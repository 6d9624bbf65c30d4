import ContinuumCore
import ContinuumWire

/// The decisions of admission, as pure functions of their inputs: which groups a peer's MEMBERSHIP proves it
/// shares (``SyncEngine/admit(_:contact:theirs:ourNonce:theirNonce:)``), whether a new session finds room under the
/// overlay's bound, which sessions stay outside that bound (``pinned(_:caughtUp:)``), and which of two sessions with
/// one peer is kept (``SyncEngine/register(_:)``).
enum AdmissionRules {
    /// A claim of membership that did not hold, and why.
    struct FailedClaim: Hashable, Sendable {
        let group: GroupID
        let reason: String
    }

    /// The groups `peer` shares with this node (`us`) by `view` and by what its MEMBERSHIP proves: the groups this
    /// node knows it in (not those it was removed from), the claims whose proofs hold, and the network groups whose
    /// tags it computed for this connection's nonces. The admission's problems speak only of groups this node is in
    /// (a stranger must not learn which groups it belongs to); every failed claim is returned for the log.
    static func claimedGroups(
        peer: NodeID,
        us: NodeID,
        view: MembershipView,
        theirs: Membership,
        nonces: (ours: SessionNonce, theirs: SessionNonce)
    ) -> (admission: Admission, failed: [FailedClaim]) {
        var groups = view.groupsShared(with: peer)
        var problems: [String] = []
        var failed: [FailedClaim] = []
        for claim in theirs.claims where !groups.contains(claim.group) {
            if let problem = MembershipProofs.problem(
                withClaim: claim.proof,
                group: claim.group,
                peer: peer,
                view: view
            ) {
                if view.groups[claim.group] != nil { problems.append(problem) }
                failed.append(FailedClaim(group: claim.group, reason: problem))
            } else {
                groups.insert(claim.group)
            }
        }
        for group in view.groups.values where group.network {
            let expected = MembershipProofs.networkTag(
                group.id,
                senderNonce: nonces.theirs.bytes,
                receiverNonce: nonces.ours.bytes,
                sender: peer,
                receiver: us
            )
            if theirs.networkTags.contains(expected) { groups.insert(group.id) }
        }
        return (Admission(groups: groups, problems: problems), failed)
    }

    /// Why a session is kept whatever the overlay's bound, and not counted in it.
    enum Pin: Hashable, Sendable {
        /// Not pinned: the session counts in the bound.
        case none
        /// Dialled to keep an address connected (`--peer HOST:PORT`): a person asked for it, so it stays pinned for as
        /// long as it lasts.
        case address
        /// A join by invite or by request completed on it: pinned until the joiner holds the group's history
        /// (``caughtUp(ourRoundFinished:theirRoundAnswered:unacknowledged:)``), then counted like any other.
        case join
    }

    /// Whether a session pinned by `pin` is still outside the bound, with `caughtUp` whether the first anti-entropy
    /// exchange with its peer is complete both ways: an address's always, a join's until then, no other.
    static func pinned(_ pin: Pin, caughtUp: Bool) -> Bool {
        switch pin {
        case .none: false
        case .address: true
        case .join: !caughtUp
        }
    }

    /// Whether the first anti-entropy exchange with a peer is complete both ways: the peer's DONE of one of this
    /// node's rounds came (this node holds what the peer held, stored), this node sent its DONE for one of the peer's
    /// rounds, and every RECORDS frame it sent is acknowledged (the peer stored what this node held).
    static func caughtUp(ourRoundFinished: Bool, theirRoundAnswered: Bool, unacknowledged: Int) -> Bool {
        ourRoundFinished && theirRoundAnswered && unacknowledged == 0
    }

    /// A session as registration sees it.
    struct Standing: Hashable, Sendable {
        let peer: AuthorID
        /// Whether this node dialled the connection.
        let initiator: Bool
        /// Kept whatever the overlay's bound, and not counted in it (``pinned(_:caughtUp:)``).
        let pinned: Bool
    }

    /// Whether a new session fits under the overlay's bound.
    enum Room: Hashable, Sendable {
        /// It fits (or does not count).
        case free
        /// It takes the place of the session with this peer, which is not a neighbour.
        case evict(AuthorID)
        /// It is refused with this ERROR.
        case refuse(WireError)
    }

    /// Whether `new` fits beside the sessions up (`existing`) when this node keeps `maxPeers` (0: no bound): a
    /// pinned session, or one with a peer that has a session already, always does; under the bound, any does; at
    /// it, a neighbour takes the place of the first non-neighbour (by id), and anyone else is refused as busy.
    static func room(
        for new: Standing,
        existing: [AuthorID: Standing],
        neighbours: Set<AuthorID>,
        maxPeers: Int
    ) -> Room {
        let bounded = existing.filter { !$0.value.pinned }
        guard maxPeers > 0, !new.pinned, existing[new.peer] == nil, bounded.count >= maxPeers else { return .free }
        guard neighbours.contains(new.peer),
            let other = bounded.keys.filter({ !neighbours.contains($0) }).sorted().first
        else {
            return .refuse(
                WireError(
                    .busy,
                    "this node keeps \(maxPeers) sessions (--max-peers) and you are not one of its neighbours in the "
                        + "overlay; it dials its neighbours itself"
                )
            )
        }
        return .evict(other)
    }

    /// What becomes of a new session when one with the same peer is up.
    enum Duplicate: Hashable, Sendable {
        /// No other session with the peer.
        case none
        /// The new session replaces the one up, which is closed with this ERROR.
        case replace(WireError)
        /// The new session is refused with this ERROR.
        case refuse(WireError)
    }

    /// One session per peer: when both nodes dialled each other, the connection dialled by the node with the
    /// smaller id wins, on both sides (`us`: this node).
    static func duplicate(_ new: Standing, existing: Standing?, us: AuthorID) -> Duplicate {
        guard let existing else { return .none }
        if keeps(existing, us: us) || !keeps(new, us: us) {
            return .refuse(WireError(.duplicateSession, "a session with this node already exists"))
        }
        return .replace(WireError(.duplicateSession, "a newer session with this node replaces this one"))
    }

    /// Whether the connection of `session` is the one to keep: the one dialled by the node with the smaller id.
    private static func keeps(_ session: Standing, us: AuthorID) -> Bool {
        let dialer = session.initiator ? us : session.peer
        let other = session.initiator ? session.peer : us
        return dialer < other
    }
}
