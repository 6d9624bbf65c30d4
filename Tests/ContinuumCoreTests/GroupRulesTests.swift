import ContinuumCore
import ContinuumTestSupport
import Foundation
import Testing

/// The member set of a group (GroupRules.members, PROTOCOL.md §2.7): every expected value below is worked out by hand
/// from the rules, not computed by the code under test, and every result must be the same whatever the order of the
/// records.
@Suite("Group members: GroupRules")
struct GroupRulesTests {
    typealias Member = GroupRules.Member

    /// A log key whose 32 bytes are all `byte`.
    static func log(_ byte: UInt8) -> AuthorID { AuthorID(unchecked: Data(repeating: byte, count: 32)) }
    /// A node whose 32 bytes are all `byte`.
    static func node(_ byte: UInt8) -> NodeID { NodeID(unchecked: Data(repeating: byte, count: 32)) }

    // The founder's log key is the group's id; logs a ... e are other members' log keys, x a stranger's.
    static let founder = Self.log(0x01)
    static let a = Self.log(0x02)
    static let b = Self.log(0x03)
    static let c = Self.log(0x04)
    static let d = Self.log(0x05)
    static let e = Self.log(0x06)
    static let x = Self.log(0x0F)
    static let group = GroupID(founder: Self.founder)
    static let otherGroup = GroupID(unchecked: Data(repeating: 0xEE, count: 32))

    /// The node of each log, unless a test says otherwise: the log's byte plus 0x80.
    static func node(of log: AuthorID) -> NodeID { Self.node(log.bytes.first! &+ 0x80) }

    static let closed = GroupRules.Origin.founded(node: Self.node(of: Self.founder), open: false)
    static let open = GroupRules.Origin.founded(node: Self.node(of: Self.founder), open: true)

    /// The founder alone, as every founded group has it.
    static let founderEntry = Member(node: Self.node(of: Self.founder), admin: true)

    /// A member record by `author` at `sequence`.
    static func record(
        _ author: AuthorID,
        _ sequence: UInt64,
        _ action: MemberAction,
        _ log: AuthorID,
        node: NodeID? = nil,
        through: UInt64 = 0,
        in group: GroupID = GroupRulesTests.group
    ) -> GroupRules.Record {
        GroupRules.Record(
            author: author,
            sequence: sequence,
            change: MemberChange(
                group: group,
                action: action,
                node: node ?? Self.node(of: log),
                log: log,
                through: through
            )
        )
    }

    /// The members of `group` from `records`, checked to be the same for the records reversed and shuffled 64 times.
    static func members(
        _ records: [GroupRules.Record],
        origin: GroupRules.Origin = GroupRulesTests.closed,
        of group: GroupID = GroupRulesTests.group,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> [AuthorID: Member] {
        let result = GroupRules.members(of: group, origin: origin, records: records)
        var orders = [Array(records.reversed())]
        var random = SplitMix64(seed: 13)
        for _ in 0..<64 { orders.append(records.shuffled(using: &random)) }
        for order in orders {
            let again = GroupRules.members(of: group, origin: origin, records: order)
            #expect(again == result, "another order of the records gives other members", sourceLocation: sourceLocation)
        }
        return result
    }

    @Test("a group with no member record: the founder alone, an admin")
    func founderAlone() {
        #expect(Self.members([]) == [Self.founder: Self.founderEntry])
        #expect(Self.members([], origin: Self.open) == [Self.founder: Self.founderEntry])
    }

    @Test("the founder adds a member")
    func addByFounder() {
        let result = Self.members([Self.record(Self.founder, 2, .add, Self.a)])
        #expect(result == [Self.founder: Self.founderEntry, Self.a: Member(node: Self.node(of: Self.a), admin: false)])
        #expect(result[Self.a]?.isMember == true)
    }

    @Test("an add by a member who is not an admin, or by a stranger, is ignored")
    func addByNonAdmin() {
        let records = [
            Self.record(Self.founder, 2, .add, Self.a),
            Self.record(Self.a, 1, .add, Self.b),  // a is a member, not an admin
            Self.record(Self.x, 1, .add, Self.c),  // x is not even a member
            Self.record(Self.a, 2, .admin, Self.d),  // nor may a non-admin make an admin
        ]
        #expect(
            Self.members(records) == [
                Self.founder: Self.founderEntry, Self.a: Member(node: Self.node(of: Self.a), admin: false),
            ]
        )
    }

    @Test("an admin made by the founder adds members and makes admins, who add in turn")
    func adminGrantThenAdd() {
        let records = [
            Self.record(Self.c, 1, .add, Self.d),  // c is made an admin by a, who is made one by the founder
            Self.record(Self.a, 2, .admin, Self.c),
            Self.record(Self.a, 1, .add, Self.b),
            Self.record(Self.founder, 2, .admin, Self.a),
        ]
        #expect(
            Self.members(records) == [
                Self.founder: Self.founderEntry,
                Self.a: Member(node: Self.node(of: Self.a), admin: true),
                Self.b: Member(node: Self.node(of: Self.b), admin: false),
                // An admin record makes a member too: admins are members.
                Self.c: Member(node: Self.node(of: Self.c), admin: true),
                Self.d: Member(node: Self.node(of: Self.d), admin: false),
            ]
        )
    }

    @Test("removal wins over an add, concurrent or later, in either order of the records")
    func removalWins() {
        let add = Self.record(Self.b, 1, .add, Self.c)  // by admin b
        let remove = Self.record(Self.founder, 3, .remove, Self.c)  // by the founder, concurrently
        let grant = Self.record(Self.founder, 2, .admin, Self.b)
        let expected = [
            Self.founder: Self.founderEntry,
            Self.b: Member(node: Self.node(of: Self.b), admin: true),
            Self.c: Member(node: Self.node(of: Self.c), admin: false, removedThrough: 0),
        ]
        #expect(GroupRules.members(of: Self.group, origin: Self.closed, records: [grant, add, remove]) == expected)
        #expect(GroupRules.members(of: Self.group, origin: Self.closed, records: [remove, add, grant]) == expected)
        // An add after the removal, by the founder or an admin, does not bring the log back.
        let readd = [Self.record(Self.founder, 4, .add, Self.c), Self.record(Self.b, 2, .add, Self.c)]
        #expect(Self.members([grant, add, remove] + readd) == expected)
        #expect(Self.members([grant, add, remove] + readd, origin: Self.open) == expected)
        #expect(expected[Self.c]?.isMember == false)
    }

    @Test("of several removals of one log, the smallest through is kept")
    func smallestThrough() {
        let records = [
            Self.record(Self.founder, 2, .admin, Self.b),
            Self.record(Self.founder, 3, .add, Self.c),
            Self.record(Self.founder, 4, .remove, Self.c, through: 5),
            Self.record(Self.b, 1, .remove, Self.c, through: 3),
            Self.record(Self.b, 2, .remove, Self.c, through: 9),
        ]
        #expect(Self.members(records)[Self.c] == Member(node: Self.node(of: Self.c), admin: false, removedThrough: 3))
    }

    @Test("only the founder removes an admin; an admin removes members who are not admins")
    func removingAdmins() {
        var records = [
            Self.record(Self.founder, 2, .admin, Self.a),
            Self.record(Self.founder, 3, .admin, Self.b),
            Self.record(Self.a, 1, .remove, Self.b, through: 8),  // an admin removing an admin: ignored
            Self.record(Self.founder, 4, .add, Self.c),
            Self.record(Self.a, 2, .remove, Self.c, through: 4),  // an admin removing a member: stands
        ]
        #expect(
            Self.members(records) == [
                Self.founder: Self.founderEntry,
                Self.a: Member(node: Self.node(of: Self.a), admin: true),
                Self.b: Member(node: Self.node(of: Self.b), admin: true),
                Self.c: Member(node: Self.node(of: Self.c), admin: false, removedThrough: 4),
            ]
        )
        records.append(Self.record(Self.founder, 5, .remove, Self.b, through: 6))
        #expect(
            Self.members(records) == [
                Self.founder: Self.founderEntry,
                Self.a: Member(node: Self.node(of: Self.a), admin: true),
                Self.b: Member(node: Self.node(of: Self.b), admin: false, wasAdmin: true, removedThrough: 6),
                Self.c: Member(node: Self.node(of: Self.c), admin: false, removedThrough: 4),
            ]
        )
    }

    @Test("the records of an admin the founder removed count up to the removal's through, and no further")
    func removedAdminThrough() {
        let records = [
            Self.record(Self.founder, 2, .admin, Self.a),
            Self.record(Self.a, 1, .add, Self.b),  // within through: stands
            Self.record(Self.a, 2, .admin, Self.e),  // within through: e stays an admin
            Self.record(Self.a, 3, .add, Self.c),  // after through: ignored
            Self.record(Self.a, 4, .admin, Self.d),  // after through: ignored
            Self.record(Self.a, 5, .remove, Self.b),  // after through: ignored
            Self.record(Self.founder, 3, .remove, Self.a, through: 2),
        ]
        #expect(
            Self.members(records) == [
                Self.founder: Self.founderEntry,
                // No admin now, but one once: its member records up to 2 stand, on every node (Appendix A 19).
                Self.a: Member(node: Self.node(of: Self.a), admin: false, wasAdmin: true, removedThrough: 2),
                Self.b: Member(node: Self.node(of: Self.b), admin: false),
                Self.e: Member(node: Self.node(of: Self.e), admin: true),
            ]
        )
    }

    @Test("a removed log accepts its records up to through and refuses the later ones; a member accepts all")
    func accepts() throws {
        let result = Self.members([
            Self.record(Self.founder, 2, .add, Self.a),
            Self.record(Self.founder, 3, .remove, Self.a, through: 3),
            Self.record(Self.founder, 4, .add, Self.b),
            Self.record(Self.founder, 5, .remove, Self.c, through: 0),  // never added here: removed all the same
        ])
        let removed = try #require(result[Self.a])
        #expect(!removed.isMember && removed.removedThrough == 3)
        #expect(removed.accepts(sequence: 1) && removed.accepts(sequence: 3))
        #expect(!removed.accepts(sequence: 4) && !removed.accepts(sequence: Limits.maxSequence))
        let member = try #require(result[Self.b])
        #expect(member.isMember && member.accepts(sequence: 1) && member.accepts(sequence: Limits.maxSequence))
        #expect(result[Self.founder]?.accepts(sequence: Limits.maxSequence) == true)
        #expect(result[Self.c] == Member(node: Self.node(of: Self.c), admin: false, removedThrough: 0))
        #expect(result[Self.c]?.accepts(sequence: 1) == false)
    }

    @Test("a self-add counts in an open group, not in a closed one")
    func selfAdd() {
        let records = [
            Self.record(Self.a, 1, .add, Self.a), Self.record(Self.b, 1, .add, Self.b, node: Self.node(0x70)),
        ]
        #expect(
            Self.members(records, origin: Self.open) == [
                Self.founder: Self.founderEntry,
                Self.a: Member(node: Self.node(of: Self.a), admin: false),
                Self.b: Member(node: Self.node(0x70), admin: false),
            ]
        )
        #expect(Self.members(records, origin: Self.closed) == [Self.founder: Self.founderEntry])
        // In an open group too, a self-add does not outlive a removal.
        let removal = Self.record(Self.founder, 2, .remove, Self.a, through: 1)
        #expect(
            Self.members(records + [removal], origin: Self.open)[Self.a]
                == Member(node: Self.node(of: Self.a), admin: false, removedThrough: 1)
        )
    }

    @Test("a network group: self-adds only, no founder, no admins, nobody removed")
    func networkGroup() {
        let network = GroupID(unchecked: Data(repeating: 0x77, count: 32))
        let records = [
            Self.record(Self.a, 1, .add, Self.a, in: network),
            Self.record(Self.b, 1, .add, Self.b, in: network),
            Self.record(Self.a, 2, .add, Self.c, in: network),  // adding another: ignored
            Self.record(Self.a, 3, .admin, Self.b, in: network),  // no admins
            Self.record(Self.b, 2, .remove, Self.a, through: 0, in: network),  // nobody is removed
            Self.record(Self.d, 1, .add, Self.d),  // a self-add in another group
        ]
        #expect(
            Self.members(records, origin: .network, of: network) == [
                Self.a: Member(node: Self.node(of: Self.a), admin: false),
                Self.b: Member(node: Self.node(of: Self.b), admin: false),
            ]
        )
    }

    @Test("two standing records tying one log to two nodes: the smaller node wins; ignored records do not count")
    func smallerNodeWins() {
        let records = [
            Self.record(Self.founder, 2, .admin, Self.b),
            Self.record(Self.founder, 3, .add, Self.a, node: Self.node(0x90)),
            Self.record(Self.b, 1, .add, Self.a, node: Self.node(0x50)),
            Self.record(Self.x, 1, .add, Self.a, node: Self.node(0x10)),  // by a stranger: ignored
        ]
        #expect(Self.members(records)[Self.a] == Member(node: Self.node(0x50), admin: false))
        // The node an admin record names counts like an add's.
        let grant = Self.record(Self.founder, 4, .admin, Self.a, node: Self.node(0x40))
        #expect(Self.members(records + [grant])[Self.a] == Member(node: Self.node(0x40), admin: true))
    }

    @Test("a log removed before any add arrived takes the smaller node of its removals, in any order")
    func removedOnlyNode() {
        let records = [
            Self.record(Self.founder, 2, .remove, Self.a, node: Self.node(0x90), through: 5),
            Self.record(Self.founder, 3, .remove, Self.a, node: Self.node(0x50), through: 7),
        ]
        #expect(Self.members(records)[Self.a] == Member(node: Self.node(0x50), admin: false, removedThrough: 5))
    }

    @Test("records of another group are ignored")
    func otherGroup() {
        // Signed with the founder's key and a self-add, so that only the group they name keeps them out.
        let records = [
            Self.record(Self.founder, 2, .add, Self.b),
            Self.record(Self.founder, 3, .add, Self.a, in: Self.otherGroup),
            Self.record(Self.founder, 4, .remove, Self.b, in: Self.otherGroup),
            Self.record(Self.founder, 5, .admin, Self.c, in: Self.otherGroup),
            Self.record(Self.d, 1, .add, Self.d, in: Self.otherGroup),
        ]
        let expected = [Self.founder: Self.founderEntry, Self.b: Member(node: Self.node(of: Self.b), admin: false)]
        #expect(Self.members(records) == expected)
        #expect(Self.members(records, origin: Self.open) == expected)
    }
}
