import ContinuumCore
import ContinuumWire
import Foundation
import Testing

/// The MEMBERSHIP frames of Docs/PROTOCOL.md §7.4.21, computed by an independent Python encoder
/// (scripts/membership_vectors.py, hashlib, hmac and RFC 8032 Ed25519 of its own): each is built here from its
/// inputs, encoded and compared byte for byte, decoded back, and its proofs checked with this code's own functions.
@Suite("MEMBERSHIP frames: the Python vectors of PROTOCOL.md §7.4.21")
struct MembershipFrameVectorTests {
    static let inviter = NodeID(hex: "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8")!
    static let joiner = NodeID(hex: "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025")!
    static let nodeB = NodeID(hex: "29acbae141bccaf0b22e1a94d34d0bc7361e526d0bfe12c89794bc9322966dd7")!
    static let inviterNonce = Array(UInt8(0)...UInt8(31))
    static let joinerNonce = Array(UInt8(32)...UInt8(63))

    static func bytes(_ hex: String) -> [UInt8] { Array(Hex.decode(hex)!) }

    static func roundTrip(_ membership: Membership, _ frameHex: String) throws {
        let frame = WireCodec.encode(.membership(membership))
        #expect(Hex.encode(frame) == frameHex)
        let decoded = try WireCodec.decodePayload(type: frame[5], payload: frame[6...])
        #expect(decoded == .membership(membership))
    }

    @Test("a claim (vector 11's header as proof) and a network tag")
    func claimAndTag() throws {
        let proof = Self.bytes(
            "434e544d02072543b92ff1095511476adc8369db6ddc933665a11978dda1404ee1066ca9559d00000000000000025b70961f2225ea3ec3a078d5d8f159d6235f949a56a543af0d509c6de221148c0000018bcfe58f102543b92ff1095511476adc8369db6ddc933665a11978dda1404ee1066ca9559d0129acbae141bccaf0b22e1a94d34d0bc7361e526d0bfe12c89794bc9322966dd7174553b456dddfc6908ecab1c101fe6ab21e2baa0617795b7d43a63482993fd5000000000000000000000000e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855528c661fd4f3e39ffec0749af1104f39d82f7d5428500811be6197dcd86cf01c76a55c39c7e261691104e31fb4bb08ed47be7f49b64a0d336e2c6102d8834808"
        )
        let group = GroupID(hex: "2543b92ff1095511476adc8369db6ddc933665a11978dda1404ee1066ca9559d")!
        let network = GroupID(unchecked: Data(NetworkID.named("lab").bytes))
        #expect(network.hex == "29921cf93384b2b494c18ad8cb4a8fc781e6767ededa4ffe8afc1ed31e054977")
        let tag = MembershipProofs.networkTag(
            network,
            senderNonce: Self.joinerNonce,
            receiverNonce: Self.inviterNonce,
            sender: Self.nodeB,
            receiver: Self.inviter
        )
        #expect(Hex.encode(tag) == "67e1865964ca7d9247a4f22b47b03bec")
        try Self.roundTrip(
            Membership(claims: [Membership.Claim(group: group, proof: proof)], networkTags: [tag]),
            "0000015a0103012543b92ff1095511476adc8369db6ddc933665a11978dda1404ee1066ca9559d0123"
                + Hex.encode(proof) + "0167e1865964ca7d9247a4f22b47b03bec00"
        )
    }

    @Test("a join by invite: invite id, log key, mac and the log key's signature")
    func joinByInvite() throws {
        let secret = Data(Hex.decode("00112233445566778899")!)
        let log = AuthorID(hex: "dde3bccec7f3a66a1115f45d720f4dc135c3ae7c4e22dca38fdb1efd6a495ff8")!
        let signature = Self.bytes(
            "328838143e53e5a077243d633f866c49ea44b318a024f9463d641b28813708f2f2f61f9ab37e62fc7fc0b4fd4a18da34d64b8819395acd7a861ef58b00b54c05"
        )
        let mac = MembershipProofs.joinMAC(
            secret: secret,
            inviterNonce: Self.inviterNonce,
            joinerNonce: Self.joinerNonce,
            inviter: Self.inviter,
            joiner: Self.joiner,
            log: log
        )
        #expect(Hex.encode(mac) == "2dfae1ae9b0e0af0cc923c7a6a4a4f02a97be7bb016d9ca4e068d8122533fb2f")
        #expect(
            MembershipProofs.isLogSignature(
                signature,
                log: log,
                inviterNonce: Self.inviterNonce,
                joinerNonce: Self.joinerNonce,
                joiner: Self.joiner
            )
        )
        let join = Membership.Join(invite: InviteCode.id(of: secret), log: log, mac: mac, signature: signature)
        try Self.roundTrip(
            Membership(join: join),
            "0000008d0103000001e2520247f46874a3dde3bccec7f3a66a1115f45d720f4dc135c3ae7c4e22dca38fdb1efd6a495ff82dfae1ae9b0e0af0cc923c7a6a4a4f02a97be7bb016d9ca4e068d8122533fb2f328838143e53e5a077243d633f866c49ea44b318a024f9463d641b28813708f2f2f61f9ab37e62fc7fc0b4fd4a18da34d64b8819395acd7a861ef58b00b54c05"
        )
    }

    @Test("a request to join: the log key and its signature, bound to the receiver's and the asker's nonces")
    func requestToJoin() throws {
        let log = AuthorID(hex: "13d9908a70925992ed546007d27f50da68ba7217ef62ac3cca784529ff10471c")!
        let signature = Self.bytes(
            "a29c9af583f3f8daac3be0c1994901080bd18793713cb11cd30b7372e719e3669afdf0fdaa988d444bf08a28d83127dd3916b6e71f761c3803afeb6a4ce03f0b"
        )
        #expect(
            MembershipProofs.isLogSignature(
                signature,
                log: log,
                inviterNonce: Self.inviterNonce,
                joinerNonce: Self.joinerNonce,
                joiner: Self.joiner
            )
        )
        // Bound to this connection: the same signature with the nonces swapped does not verify.
        #expect(
            !MembershipProofs.isLogSignature(
                signature,
                log: log,
                inviterNonce: Self.joinerNonce,
                joinerNonce: Self.inviterNonce,
                joiner: Self.joiner
            )
        )
        try Self.roundTrip(
            Membership(request: Membership.Request(log: log, signature: signature)),
            "00000065010300000213d9908a70925992ed546007d27f50da68ba7217ef62ac3cca784529ff10471ca29c9af583f3f8daac3be0c1994901080bd18793713cb11cd30b7372e719e3669afdf0fdaa988d444bf08a28d83127dd3916b6e71f761c3803afeb6a4ce03f0b"
        )
    }
}
