import ContinuumCore
import Foundation
import Testing

@testable import ContinuumSync

/// How a batch from a peer is sorted (``SessionScope/sort(_:groups:view:)``), from hand-written views and records.
@Suite("Session scope: a batch sorted by the groups shared")
struct SessionScopeSortTests {
    private static func identity(_ n: UInt8) -> NodeIdentity {
        try! NodeIdentity(seed: [UInt8](repeating: n, count: 32))
    }

    private static let peer = identity(2).node
    /// Logs: `shared` (admin) and `plain` in group A, which the session shares; `other` in group B, which it does
    /// not; `removed` in group A, removed through 1; `fresh` known nowhere yet.
    private static let shared = identity(10)
    private static let plain = identity(11)
    private static let other = identity(12)
    private static let removed = identity(13)
    private static let fresh = identity(14)
    private static let groupA = GroupID(founder: shared.author)
    private static let groupB = GroupID(founder: other.author)

    private static let view = MembershipView(
        groups: [
            groupA: .init(id: groupA, name: "a", open: false, network: false, log: identity(1).author),
            groupB: .init(id: groupB, name: "b", open: false, network: false, log: identity(3).author),
        ],
        logs: [
            shared.author: .init(group: groupA, node: peer, admin: true, removedThrough: nil),
            plain.author: .init(group: groupA, node: identity(4).node, admin: false, removedThrough: nil),
            other.author: .init(group: groupB, node: identity(5).node, admin: true, removedThrough: nil),
            removed.author: .init(group: groupA, node: identity(6).node, admin: false, removedThrough: 1),
        ]
    )

    /// A record of `by`'s log at `sequence` (after a made-up previous record, past the first).
    private static func record(_ by: NodeIdentity, _ sequence: UInt64, _ body: RecordBody) throws -> VerifiedRecord {
        try by.sign(
            RecordContent(
                author: by.author,
                sequence: sequence,
                previous: sequence > 1 ? RecordID(unchecked: Data(repeating: 9, count: 32)) : nil,
                createdAt: Timestamp(milliseconds: 1_700_000_000_000),
                body: body
            )
        )
    }

    @Test("records of a group the peer is not in are filtered out; members' records of shared groups are kept")
    func outOfScope() throws {
        let ours = try Self.record(Self.shared, 1, .profile(name: "a"))
        let theirs = try Self.record(Self.other, 1, .profile(name: "b"))
        let sorting = SessionScope.sort([ours, theirs], groups: [Self.groupA], view: Self.view)
        #expect(sorting.keep == [ours.id])
        #expect(sorting.outOfScope.count == 1)
        #expect((sorting.heldBack, sorting.removed, sorting.notAdmin) == (0, 0, []))
        // With both groups shared, both are kept.
        let both = SessionScope.sort([ours, theirs], groups: [Self.groupA, Self.groupB], view: Self.view)
        #expect(both.keep == [ours.id, theirs.id])
        #expect(both.outOfScope.isEmpty)
    }

    @Test("unknown logs wait, removed logs past their removal are refused, only admins' member records are kept")
    func membershipRules() throws {
        let unknown = try Self.record(Self.fresh, 1, .profile(name: "f"))
        let keptBeforeRemoval = try Self.record(Self.removed, 1, .profile(name: "r"))
        let afterRemoval = try Self.record(Self.removed, 2, .profile(name: "r2"))
        let byNonAdmin = try Self.record(
            Self.plain,
            1,
            .member(MemberChange(group: Self.groupA, action: .add, node: Self.identity(7).node, log: Self.fresh.author))
        )
        let sorting = SessionScope.sort(
            [unknown, keptBeforeRemoval, afterRemoval, byNonAdmin],
            groups: [Self.groupA],
            view: Self.view
        )
        #expect(sorting.keep == [keptBeforeRemoval.id])
        #expect(sorting.heldBack == 1)
        #expect(sorting.removed == 1)
        #expect(sorting.notAdmin == [Self.plain.author])
        #expect(sorting.outOfScope.isEmpty)
    }

    @Test("an admin the founder removed: its member records up to the removal's through are kept, later ones are not")
    func removedAdminsGrants() throws {
        let exAdmin = Self.identity(15)
        let view = MembershipView(
            groups: Self.view.groups,
            logs: Self.view.logs.merging([
                exAdmin.author: .init(
                    group: Self.groupA,
                    node: Self.identity(8).node,
                    admin: false,
                    wasAdmin: true,
                    removedThrough: 2
                )
            ]) { $1 }
        )
        let add = { (log: NodeIdentity) in
            RecordBody.member(
                MemberChange(group: Self.groupA, action: .add, node: Self.identity(9).node, log: log.author)
            )
        }
        let within = try Self.record(exAdmin, 2, add(Self.fresh))
        let after = try Self.record(exAdmin, 3, add(Self.identity(16)))
        let sorting = SessionScope.sort([within, after], groups: [Self.groupA], view: view)
        // Stored whatever the order the removal and the grant came in: GroupRules counts it (PROTOCOL.md §5.1).
        #expect(sorting.keep == [within.id])
        #expect(sorting.removed == 1)
        #expect(sorting.notAdmin.isEmpty)
    }

    @Test("a kind to come from a member of a shared group is stored, as any record of its log (version 3 on)")
    func kindsToCome() throws {
        let future = try Self.record(
            Self.plain,
            2,
            .opaque(OpaqueReferences(code: 200, context: nil, data: [1]), payload: Array("later".utf8))
        )
        let profile = try Self.record(Self.plain, 3, .profile(name: "p"))
        let stranger = try Self.record(
            Self.identity(30),
            1,
            .opaque(OpaqueReferences(code: 200, context: nil), payload: [])
        )
        let sorting = SessionScope.sort([future, profile, stranger], groups: [Self.groupA], view: Self.view)
        #expect(sorting.keep == [future.id, profile.id])
        // Of a log not known as a member's: held back, as any record of it.
        #expect(sorting.heldBack == 1)
        #expect(sorting.outOfScope.isEmpty && sorting.removed == 0)
    }

    @Test("an admin's member record makes its log known for the rest of the batch")
    func learnedInBatch() throws {
        let adds = try Self.record(
            Self.shared,
            1,
            .member(MemberChange(group: Self.groupA, action: .add, node: Self.identity(7).node, log: Self.fresh.author))
        )
        let byNew = try Self.record(Self.fresh, 1, .profile(name: "f"))
        let sorting = SessionScope.sort([adds, byNew], groups: [Self.groupA], view: Self.view)
        #expect(sorting.keep == [adds.id, byNew.id])
        #expect(sorting.heldBack == 0)
        // In the other order, the log is not known yet when its record comes.
        let reversed = SessionScope.sort([byNew, adds], groups: [Self.groupA], view: Self.view)
        #expect(reversed.keep == [adds.id])
        #expect(reversed.heldBack == 1)
    }

    @Test("account logs: a node of a shared group's records of kinds 8 on are kept; a stranger's, or a comment, wait")
    func accountLogs() throws {
        // Identity 4 is the node of `plain` (group A, shared); identity 5 the node of `other` (group B, not shared).
        let member = Self.identity(4)
        let founding = try Self.record(member, 1, AccountRecord.founding(recovery: nil).body)
        let comment = try Self.record(
            member,
            2,
            .comment(post: PostID(unchecked: Data(count: 32)), text: "by a node key")
        )
        let outsider = try Self.record(Self.identity(5), 1, AccountRecord.founding(recovery: nil).body)
        let stranger = try Self.record(Self.identity(8), 1, AccountRecord.founding(recovery: nil).body)
        let sorting = SessionScope.sort(
            [founding, comment, outsider, stranger],
            groups: [Self.groupA],
            view: Self.view
        )
        #expect(sorting.keep == [founding.id])
        #expect(sorting.heldBack == 3)
        #expect(Self.view.carriesAccountLog(member.author, in: [Self.groupA]))
        #expect(!Self.view.carriesAccountLog(Self.identity(5).author, in: [Self.groupA]))
        #expect(!Self.view.carriesAccountLog(Self.plain.author, in: [Self.groupA]), "a group log is no account log")
        // A node made known earlier in the same batch, by an admin's add of its log: its account log is kept too.
        let newcomer = Self.identity(9)
        let add = try Self.record(
            Self.shared,
            2,
            .member(MemberChange(group: Self.groupA, action: .add, node: newcomer.node, log: Self.fresh.author))
        )
        let itsAccount = try Self.record(newcomer, 1, AccountRecord.founding(recovery: nil).body)
        #expect(
            SessionScope.sort([add, itsAccount], groups: [Self.groupA], view: Self.view).keep == [
                add.id, itsAccount.id,
            ]
        )
        #expect(
            SessionScope.sort([itsAccount], groups: [Self.groupA], view: Self.view).heldBack == 1,
            "alone, it waits"
        )
        // The peer's clock shows the member's account log, not the outsider's.
        let scope = SessionScope(peer: Self.peer, groups: [Self.groupA], view: Self.view)
        let clock = VectorClock([member.author: 1, Self.identity(5).author: 1, Self.plain.author: 3])
        #expect(scope.filter(clock) == VectorClock([member.author: 1, Self.plain.author: 3]))
    }
}
