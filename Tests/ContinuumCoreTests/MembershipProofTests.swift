import ContinuumCore
import Foundation
import Testing

/// Whether a peer's claim of membership holds in this node's view (``MembershipProofs/problem(withClaim:group:peer:view:)``,
/// PROTOCOL.md §7.8.3): the proof is the member record that adds the peer's node, signed by an admin, or by an admin
/// the founder removed since, within what the removal kept (§5.1).
@Suite("Membership proofs: who may have added the peer")
struct MembershipProofTests {
    static func identity(_ n: UInt8) -> NodeIdentity { try! NodeIdentity(seed: [UInt8](repeating: n, count: 32)) }

    static let founder = identity(1)
    static let admin = identity(2)
    static let exAdmin = identity(3)
    static let plain = identity(4)
    static let peerLog = identity(5)
    static let peer = identity(6).node
    static let group = GroupID(founder: founder.author)

    static let view = MembershipView(
        groups: [group: .init(id: group, name: "Family", open: false, network: false, log: identity(9).author)],
        logs: [
            founder.author: .init(group: group, node: identity(11).node, admin: true, removedThrough: nil),
            admin.author: .init(group: group, node: identity(12).node, admin: true, removedThrough: nil),
            exAdmin.author: .init(
                group: group,
                node: identity(13).node,
                admin: false,
                wasAdmin: true,
                removedThrough: 2
            ),
            plain.author: .init(group: group, node: identity(14).node, admin: false, removedThrough: nil),
        ]
    )

    /// The header of `signer`'s record at `sequence` adding the peer's log and node to the group.
    static func proof(by signer: NodeIdentity, at sequence: UInt64, node: NodeID = peer) throws -> [UInt8] {
        try signer.sign(
            RecordContent(
                author: signer.author,
                sequence: sequence,
                previous: sequence > 1 ? RecordID(unchecked: Data(repeating: 7, count: 32)) : nil,
                createdAt: Timestamp(milliseconds: 1_700_000_000_000),
                body: .member(MemberChange(group: group, action: .add, node: node, log: peerLog.author))
            )
        ).bytes
    }

    static func problem(_ proof: [UInt8]) -> String? {
        MembershipProofs.problem(withClaim: proof, group: group, peer: peer, view: view)
    }

    @Test("an admin's add holds; so does one by an admin the founder removed since, within what the removal kept")
    func admins() throws {
        #expect(Self.problem(try Self.proof(by: Self.admin, at: 5)) == nil)
        #expect(Self.problem(try Self.proof(by: Self.founder, at: 3)) == nil)
        #expect(Self.problem(try Self.proof(by: Self.exAdmin, at: 2)) == nil)
    }

    @Test("an add by the removed admin after what its removal kept, or by a member who never was one, does not")
    func notAdmins() throws {
        let expected = "the member record is not signed by an admin of the group"
        #expect(Self.problem(try Self.proof(by: Self.exAdmin, at: 3)) == expected)
        #expect(Self.problem(try Self.proof(by: Self.plain, at: 2)) == expected)
        #expect(Self.problem(try Self.proof(by: Self.identity(30), at: 1)) == expected)
        #expect(
            Self.problem(try Self.proof(by: Self.admin, at: 5, node: Self.identity(31).node))
                == "the member record does not add this node to the group"
        )
    }
}
