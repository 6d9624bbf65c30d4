import ContinuumCore

// MEMBERSHIP (PROTOCOL.md §7.4.21): its payload, written, read and checked.

extension WireCodec {
    /// Claims (count, then group, proof length and proof), network tags (count, then 16 bytes each), then the join
    /// flag: 1 is followed by the invite id, the log key, the MAC and the log key's signature; 2 (a request to join)
    /// by the log key and its signature.
    static func writeMembership(_ membership: Membership, to writer: inout WireWriter) {
        writer.u8(UInt8(membership.claims.count))
        for claim in membership.claims {
            writer.raw(claim.group.bytes)
            writer.u16(UInt16(claim.proof.count))
            writer.raw(claim.proof)
        }
        writer.u8(UInt8(membership.networkTags.count))
        for tag in membership.networkTags { writer.raw(tag) }
        if let join = membership.join {
            writer.u8(1)
            writer.raw(join.invite)
            writer.raw(join.log.bytes)
            writer.raw(join.mac)
            writer.raw(join.signature)
        } else if let request = membership.request {
            writer.u8(2)
            writer.raw(request.log.bytes)
            writer.raw(request.signature)
        } else {
            writer.u8(0)
        }
    }

    static func readMembership(_ reader: inout WireReader) throws(WireError) -> Membership {
        var membership = Membership()
        let claims = Int(try reader.u8("claim count"))
        guard claims <= WireLimits.maxClaims else {
            throw reader.malformed("\(claims) claims; the limit is \(WireLimits.maxClaims)")
        }
        for _ in 0..<claims {
            let group: GroupID = try reader.id("group")
            let length = Int(try reader.u16("proof length"))
            guard length <= WireLimits.maxProofBytes else {
                throw reader.malformed("a proof is \(length) bytes; the limit is \(WireLimits.maxProofBytes)")
            }
            membership.claims.append(Membership.Claim(group: group, proof: Array(try reader.raw(length, "proof"))))
        }
        let tags = Int(try reader.u8("network tag count"))
        guard tags <= WireLimits.maxNetworkTags else {
            throw reader.malformed("\(tags) network tags; the limit is \(WireLimits.maxNetworkTags)")
        }
        for _ in 0..<tags { membership.networkTags.append(Array(try reader.raw(16, "network tag"))) }
        switch try reader.u8("join flag") {
        case 0: break
        case 1:
            let invite = Array(try reader.raw(8, "invite"))
            let log: AuthorID = try reader.id("log")
            let mac = Array(try reader.raw(32, "mac"))
            let signature = Array(try reader.raw(64, "signature"))
            membership.join = Membership.Join(invite: invite, log: log, mac: mac, signature: signature)
        case 2:
            let log: AuthorID = try reader.id("log")
            membership.request = Membership.Request(log: log, signature: Array(try reader.raw(64, "signature")))
        case let flag: throw reader.malformed("join flag is \(flag); it must be 0, 1 or 2")
        }
        return membership
    }

    static func checkMembership(_ membership: Membership, _ reader: WireReader) throws(WireError) {
        guard membership.claims.count <= WireLimits.maxClaims else {
            throw reader.malformed("\(membership.claims.count) claims; the limit is \(WireLimits.maxClaims)")
        }
        for claim in membership.claims where claim.proof.count > WireLimits.maxProofBytes {
            throw reader.malformed("a proof is \(claim.proof.count) bytes; the limit is \(WireLimits.maxProofBytes)")
        }
        guard membership.networkTags.count <= WireLimits.maxNetworkTags,
            membership.networkTags.allSatisfy({ $0.count == 16 })
        else { throw reader.malformed("at most \(WireLimits.maxNetworkTags) network tags of 16 bytes each") }
        if let join = membership.join, join.invite.count != 8 || join.mac.count != 32 || join.signature.count != 64 {
            throw reader.malformed("a join's invite id is 8 bytes, its mac 32 and its signature 64")
        }
        if let request = membership.request {
            guard membership.join == nil else { throw reader.malformed("a join by invite and a request, both") }
            guard request.signature.count == 64 else { throw reader.malformed("a request's signature is 64 bytes") }
        }
    }
}
