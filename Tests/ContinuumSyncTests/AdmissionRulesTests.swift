import ContinuumCore
import ContinuumWire
import Foundation
import Testing

@testable import ContinuumSync

/// Ids made from small numbers: `n` repeated 32 times (so that their order is the numbers' order).
private func author(_ n: UInt8) -> AuthorID { AuthorID(unchecked: Data(repeating: n, count: 32)) }
private func node(_ n: UInt8) -> NodeID { NodeID(unchecked: Data(repeating: n, count: 32)) }
private func group(_ n: UInt8) -> GroupID { GroupID(unchecked: Data(repeating: n, count: 32)) }

/// Admission's decisions, from hand-written inputs: which groups a peer shares, whether its session finds room under
/// the overlay's bound, and which of two sessions with one peer is kept.
@Suite("Admission rules: groups shared, room under the bound, duplicate sessions")
struct AdmissionRulesTests {
    private static let us = node(1)
    private static let nonces = (ours: SessionNonce.random(), theirs: SessionNonce.random())

    /// Group 10, of which this node (1) is a member; node 2 with log 20, removed through 5 when `removed`.
    private static func view(peerRemoved removed: Bool) -> MembershipView {
        MembershipView(
            groups: [group(10): .init(id: group(10), name: "g", open: false, network: false, log: author(11))],
            logs: [
                author(11): .init(group: group(10), node: us, admin: true, removedThrough: nil),
                author(20): .init(group: group(10), node: node(2), admin: false, removedThrough: removed ? 5 : nil),
            ]
        )
    }

    @Test("a member shares its group; a stranger and a removed member share none")
    func groupsShared() {
        let member = AdmissionRules.claimedGroups(
            peer: node(2),
            us: Self.us,
            view: Self.view(peerRemoved: false),
            theirs: Membership(),
            nonces: Self.nonces
        )
        #expect(member.admission.groups == [group(10)])
        let stranger = AdmissionRules.claimedGroups(
            peer: node(3),
            us: Self.us,
            view: Self.view(peerRemoved: false),
            theirs: Membership(),
            nonces: Self.nonces
        )
        #expect(stranger.admission.groups == [], "not a member")
        let revoked = AdmissionRules.claimedGroups(
            peer: node(2),
            us: Self.us,
            view: Self.view(peerRemoved: true),
            theirs: Membership(),
            nonces: Self.nonces
        )
        #expect(revoked.admission.groups == [], "removed from its only group")
    }

    @Test("a claim that does not hold admits nothing; its problem is told only for a group this node is in")
    func failedClaims() {
        var theirs = Membership()
        theirs.claims = [
            Membership.Claim(group: group(10), proof: [1, 2, 3]),
            Membership.Claim(group: group(99), proof: [1, 2, 3]),
        ]
        let result = AdmissionRules.claimedGroups(
            peer: node(3),
            us: Self.us,
            view: Self.view(peerRemoved: false),
            theirs: theirs,
            nonces: Self.nonces
        )
        #expect(result.admission.groups == [])
        #expect(result.failed.map(\.group) == [group(10), group(99)])
        #expect(result.admission.problems.count == 1, "a stranger learns nothing of group 99")
    }

    private static func standing(_ n: UInt8, initiator: Bool = false, pinned: Bool = false) -> AdmissionRules.Standing {
        AdmissionRules.Standing(peer: author(n), initiator: initiator, pinned: pinned)
    }

    private static let busy = WireError(
        .busy,
        "this node keeps 2 sessions (--max-peers) and you are not one of its neighbours in the overlay; it dials its "
            + "neighbours itself"
    )

    @Test("under the bound any session fits; at it a stranger is busy, a neighbour evicts the first non-neighbour")
    func room() {
        let two = [author(5): Self.standing(5), author(4): Self.standing(4)]
        let one = [author(5): Self.standing(5)]
        #expect(AdmissionRules.room(for: Self.standing(7), existing: one, neighbours: [], maxPeers: 2) == .free)
        #expect(
            AdmissionRules.room(for: Self.standing(7), existing: two, neighbours: [], maxPeers: 2) == .refuse(Self.busy)
        )
        #expect(
            AdmissionRules.room(for: Self.standing(7), existing: two, neighbours: [author(7)], maxPeers: 2)
                == .evict(author(4)),
            "over the bound: the non-neighbour with the smaller id makes room"
        )
        #expect(
            AdmissionRules.room(for: Self.standing(7), existing: two, neighbours: [author(7), author(4)], maxPeers: 2)
                == .evict(author(5))
        )
        #expect(
            AdmissionRules.room(
                for: Self.standing(7),
                existing: two,
                neighbours: [author(7), author(4), author(5)],
                maxPeers: 2
            ) == .refuse(Self.busy),
            "every session up is a neighbour's"
        )
        #expect(
            AdmissionRules.room(for: Self.standing(7, pinned: true), existing: two, neighbours: [], maxPeers: 2)
                == .free
        )
        let pinnedTwo = [author(5): Self.standing(5, pinned: true), author(4): Self.standing(4, pinned: true)]
        #expect(AdmissionRules.room(for: Self.standing(7), existing: pinnedTwo, neighbours: [], maxPeers: 2) == .free)
        #expect(AdmissionRules.room(for: Self.standing(7), existing: two, neighbours: [], maxPeers: 0) == .free)
    }

    @Test("of two sessions with one peer, the one dialled by the node with the smaller id is kept")
    func duplicate() {
        let us = author(3)
        let refused = WireError(.duplicateSession, "a session with this node already exists")
        let replaced = WireError(.duplicateSession, "a newer session with this node replaces this one")
        #expect(AdmissionRules.duplicate(Self.standing(7), existing: nil, us: us) == .none)
        // Peer 7 > us (3): our dial is the one to keep.
        #expect(
            AdmissionRules.duplicate(
                Self.standing(7, initiator: true),
                existing: Self.standing(7, initiator: false),
                us: us
            ) == .replace(replaced)
        )
        #expect(
            AdmissionRules.duplicate(
                Self.standing(7, initiator: false),
                existing: Self.standing(7, initiator: true),
                us: us
            ) == .refuse(refused)
        )
        // Peer 2 < us (3): its dial is the one to keep.
        #expect(
            AdmissionRules.duplicate(
                Self.standing(2, initiator: false),
                existing: Self.standing(2, initiator: true),
                us: us
            ) == .replace(replaced)
        )
        #expect(
            AdmissionRules.duplicate(
                Self.standing(2, initiator: false),
                existing: Self.standing(2, initiator: false),
                us: us
            ) == .refuse(refused),
            "the same way twice: the first stays"
        )
    }
}
