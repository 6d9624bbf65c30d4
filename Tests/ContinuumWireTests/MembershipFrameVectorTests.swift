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

    @Test("a link (join flag 3): the ticket and the mac bound to this connection")
    func link() throws {
        let secret = Data(Hex.decode("a0a1a2a3a4a5a6a7a8a9")!)
        let mac = MembershipProofs.linkMAC(
            secret: secret,
            linkerNonce: Self.inviterNonce,
            deviceNonce: Self.joinerNonce,
            linker: Self.inviter,
            device: Self.joiner
        )
        #expect(Hex.encode(InviteCode.id(of: secret)) == "6e033b148a513e36")
        #expect(Hex.encode(mac) == "07e2fa38dd442bb0639df62dacbf586cbd5a7622990eed2e3d039673533de359")
        try Self.roundTrip(
            Membership(link: Membership.Link(ticket: InviteCode.id(of: secret), mac: mac)),
            "0000002d01030000036e033b148a513e3607e2fa38dd442bb0639df62dacbf586cbd5a7622990eed2e3d039673533de359"
        )
    }

    @Test("a recovery (join flag 4): the recovery key of §2.10's code and its signature bound to this connection")
    func recovery() throws {
        let key = RecoveryCode(entropy: Data((0xe0...0xef).map { UInt8($0) })).key
        #expect(key.author.hex == "de38b8f020ffbd82ec7f4afa39cd697b94029aa2d3093cf164349c651454bc09")
        let signature = Self.bytes(
            "57d5784fc651ae8002941dcc863d0a8bba8a490483d92c5398c189c4287b6eb8d83e45645facadd702db094a26e3c1b6270357de75b4961203cea5e662ddef0b"
        )
        let message = MembershipProofs.recoveryMessage(
            receiverNonce: Self.inviterNonce,
            deviceNonce: Self.joinerNonce,
            receiver: Self.inviter,
            device: Self.joiner
        )
        #expect(message.count == 148)
        let bound = (Self.inviterNonce, Self.joinerNonce, Self.inviter, Self.joiner)
        #expect(
            MembershipProofs.isRecoverySignature(
                signature,
                key: key.author,
                receiverNonce: bound.0,
                deviceNonce: bound.1,
                receiver: bound.2,
                device: bound.3
            )
        )
        // Bound to this connection: with the nonces swapped it does not verify.
        #expect(
            !MembershipProofs.isRecoverySignature(
                signature,
                key: key.author,
                receiverNonce: bound.1,
                deviceNonce: bound.0,
                receiver: bound.2,
                device: bound.3
            )
        )
        try Self.roundTrip(
            Membership(recovery: Membership.Recovery(key: key.author, signature: signature)),
            "000000650103000004de38b8f020ffbd82ec7f4afa39cd697b94029aa2d3093cf164349c651454bc0957d5784fc651ae8002941dcc863d0a8bba8a490483d92c5398c189c4287b6eb8d83e45645facadd702db094a26e3c1b6270357de75b4961203cea5e662ddef0b"
        )
    }

    @Test("LINKING and RECOVERY: the same layout (vectors 20 and 21 of §8 as the records), their type apart")
    func linkingAndRecovery() throws {
        let payload = Self.bytes(
            ""
                + "0200fd434e544d0208bafc71bead3ac5e4b63e9c8216ee71a34aaec65722eedbca728b4e9b3ccce39600000000000000010000018bcfe5"
                + "b2380000000000000000000000000000000000000000000000000000000000000000004100000000000000000000000000000000000000"
                + "000000000000000000000000000174e2a944eb640ccefef4d301cb282d8ee31bdfa99527ecb6b7c809b1d255037a00000000e3b0c44298"
                + "fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855768da46a873a84490481507a2986923e2cd1465a6a3e75c3acf54c50"
                + "e7be7ce96bb8f7273ecf01abb87f361bcc592c92b53cc4d5f521882d7d5e1622709dcc0600dd434e544d0208414d91063323ba7b23cdf3"
                + "b4409aeaceb4c928424d14e3b87211ccc80748454500000000000000010000018bcfe5b620000000000000000000000000000000000000"
                + "0000000000000000000000000000002162720b0796d907da13e3e0b51c4805b9614b105e73486b68da6737967fb1afc40000000000e3b0"
                + "c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85527d6702fe6caff3a2426a4e8c842bd2ee853e0b80b4f46890e"
                + "95225771d2b82633af897c03f057268e20ee21faff938ef379fc7114bc0c674ee5c037032d8b09"
        )
        // The count, then each record's u16 length and bytes: 253 bytes, then 221.
        #expect(payload[0] == 2)
        let records = [Array(payload[3..<256]), Array(payload[258..<479])]
        #expect(payload.count == 479)
        for (message, type) in [(WireMessage.linking(records), "05"), (.recovery(records), "08")] {
            let frame = WireCodec.encode(message)
            #expect(Hex.encode(frame) == "000001e101" + type + Hex.encode(payload))
            #expect(try WireCodec.decodePayload(type: frame[5], payload: frame[6...]) == message)
        }
    }

    @Test("FOLLOWS (§7.4.25): one entry, three, none")
    func follows() throws {
        func post(_ byte: UInt8) -> PostID { PostID(unchecked: Data(repeating: byte, count: 32)) }
        let cases: [([FollowEntry], String)] = [
            (
                [FollowEntry(post: post(0x5c), following: true, changedAt: Timestamp(milliseconds: 1_700_000_000_000))],
                "0000002d018800015c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c010000018bcfe56800"
            ),
            (
                [
                    FollowEntry(post: post(1), following: true, changedAt: Timestamp(milliseconds: 1)),
                    FollowEntry(post: post(2), following: false, changedAt: Timestamp(milliseconds: 1_700_000_000_000)),
                    FollowEntry(post: post(3), following: true, changedAt: Timestamp(milliseconds: (1 << 53) - 1)),
                ],
                "0000007f0188000301010101010101010101010101010101010101010101010101010101010101010100000000000000010202"
                    + "020202020202020202020202020202020202020202020202020202020202000000018bcfe5680003030303030303030303"
                    + "0303030303030303030303030303030303030303030301001fffffffffffff"
            ),
            ([], "0000000401880000"),
        ]
        for (entries, hex) in cases {
            let frame = WireCodec.encode(.follows(entries))
            #expect(Hex.encode(frame) == hex)
            #expect(try WireCodec.decodePayload(type: frame[5], payload: frame[6...]) == .follows(entries))
        }
    }
}
