import ContinuumCore
import Foundation
import Testing

/// The invite code, invite id, join mac and network tag of Docs/PROTOCOL.md §7.8.16, whose expected values were
/// computed with Python's hashlib and hmac (not by this code).
@Suite("Membership proofs: the vectors of PROTOCOL.md §7.8.16")
struct MembershipVectorTests {
    static let inviter = NodeID(hex: "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8")!
    static let joiner = NodeID(hex: "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025")!
    static let secret = Data(Hex.decode("00112233445566778899")!)
    static let inviterNonce = Array(UInt8(0)...UInt8(31))
    static let joinerNonce = Array(UInt8(32)...UInt8(63))

    @Test("an invite code encodes and parses as the vector says")
    func inviteCode() throws {
        let code = InviteCode(
            nodePrefix: Data(Self.inviter.bytes.prefix(8)),
            secret: Self.secret,
            host: "192.168.1.20",
            port: 7420
        )
        #expect(code.text == "041T2-1XZYF-711FG-024H3-6H2NC-SVRH6-E0N00-H877W")
        let parsed = try InviteCode(parsing: "041t2 1xzyf-7iifg-024h3-6h2nc-svrh6-eOn00-h877w")
        #expect(parsed == code)
        #expect(Hex.encode(InviteCode.id(of: Self.secret)) == "e2520247f46874a3")
        let short = InviteCode(
            nodePrefix: Data(Self.inviter.bytes.prefix(8)),
            secret: Self.secret,
            host: nil,
            port: nil
        )
        #expect(short.text.filter { $0 != "-" }.count == 31)
        #expect(try InviteCode(parsing: short.text) == short)
    }

    @Test("a mistyped code is refused with the reason")
    func badCodes() {
        for text in ["", "041T2", "041T2-1XZYF-711FG-024H3-6H2NC-SVRH6-E0N00-H877", "041T2-1XZYF-711FG-024H3-6H2NU"] {
            #expect(throws: InviteCodeError.self) { try InviteCode(parsing: text) }
        }
    }

    @Test("the join mac and the network tag are the vectors'")
    func proofs() {
        let mac = MembershipProofs.joinMAC(
            secret: Self.secret,
            inviterNonce: Self.inviterNonce,
            joinerNonce: Self.joinerNonce,
            inviter: Self.inviter,
            joiner: Self.joiner,
            log: AuthorID(unchecked: Data(repeating: 0xAB, count: 32))
        )
        #expect(Hex.encode(mac) == "61fa5684bb02bac85f794b6e6b5f81d3ad23da33c03c9db753a76465f315bd22")
        let network = GroupID(hex: "29921cf93384b2b494c18ad8cb4a8fc781e6767ededa4ffe8afc1ed31e054977")!
        let tag = MembershipProofs.networkTag(
            network,
            senderNonce: Self.joinerNonce,
            receiverNonce: Self.inviterNonce,
            sender: Self.joiner,
            receiver: Self.inviter
        )
        #expect(Hex.encode(tag) == "501e395ed9e042c982ede3eef82576ce")
    }
}
