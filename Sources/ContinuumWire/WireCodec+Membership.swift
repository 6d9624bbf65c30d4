import ContinuumCore

// MEMBERSHIP (PROTOCOL.md §7.4.21): its payload, written, read and checked.

extension WireCodec {
    /// Claims (count, then group, proof length and proof), network tags (count, then 16 bytes each), then the join
    /// flag: 1 is followed by the invite id, the log key, the MAC and the log key's signature; 2 (a request to join)
    /// by the log key and its signature; 3 (a link) by the ticket id and the MAC; 4 (a recovery) by the recovery key
    /// and its signature.
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
        } else if let link = membership.link {
            writer.u8(3)
            writer.raw(link.ticket)
            writer.raw(link.mac)
        } else if let recovery = membership.recovery {
            writer.u8(4)
            writer.raw(recovery.key.bytes)
            writer.raw(recovery.signature)
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
        case 3:
            let ticket = Array(try reader.raw(8, "link ticket"))
            membership.link = Membership.Link(ticket: ticket, mac: Array(try reader.raw(32, "mac")))
        case 4:
            let key: AuthorID = try reader.id("recovery key")
            membership.recovery = Membership.Recovery(key: key, signature: Array(try reader.raw(64, "signature")))
        case let flag: throw reader.malformed("join flag is \(flag); it must be 0 ... 4")
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
        if let link = membership.link {
            guard membership.join == nil, membership.request == nil else {
                throw reader.malformed("a link with a join or a request")
            }
            guard link.ticket.count == 8, link.mac.count == 32 else {
                throw reader.malformed("a link's ticket id is 8 bytes and its mac 32")
            }
        }
        if let recovery = membership.recovery {
            guard membership.join == nil, membership.request == nil, membership.link == nil else {
                throw reader.malformed("a recovery with a join, a request or a link")
            }
            guard recovery.signature.count == 64 else { throw reader.malformed("a recovery's signature is 64 bytes") }
        }
    }

    /// LINKING and RECOVERY: the count of records (1 … ``WireLimits/maxLinkRecords``), then each record's length and bytes.
    static func writeLinking(_ records: [[UInt8]], to writer: inout WireWriter) {
        writer.u8(UInt8(records.count))
        for record in records {
            writer.u16(UInt16(record.count))
            writer.raw(record)
        }
    }

    static func readLinking(_ reader: inout WireReader) throws(WireError) -> [[UInt8]] {
        let count = Int(try reader.u8("record count"))
        guard (1...WireLimits.maxLinkRecords).contains(count) else {
            throw reader.malformed("\(count) records; the limit is 1 ... \(WireLimits.maxLinkRecords)")
        }
        var records: [[UInt8]] = []
        for _ in 0..<count {
            let length = Int(try reader.u16("record length"))
            guard length <= Limits.recordBytes else {
                throw reader.malformed("record is \(length) bytes; the limit is \(Limits.recordBytes)")
            }
            records.append(Array(try reader.raw(length, "record")))
        }
        return records
    }

    /// LINKING, CONSENT (the 64-byte signature), LINKED or RECOVERY.
    static func writeLink(_ message: WireMessage, to writer: inout WireWriter) {
        switch message {
        case .linking(let records), .recovery(let records): writeLinking(records, to: &writer)
        case .consent(let signature): writer.raw(signature)
        case .linked(let record, let groups): writeLinked(record: record, groups: groups, to: &writer)
        default: preconditionFailure("\(message.typeName) is not a link message")
        }
    }

    /// LINKING, CONSENT, LINKED or RECOVERY, by the type's kind.
    static func readLink(_ kind: MessageKind, _ reader: inout WireReader) throws(WireError) -> WireMessage {
        switch kind {
        case .linking: .linking(try readLinking(&reader))
        case .recovery: .recovery(try readLinking(&reader))
        case .consent: .consent(Array(try reader.raw(64, "consent")))
        default: try readLinked(&reader)
        }
    }

    /// LINKED: the add record's length and bytes, then the count of groups (0 … ``WireLimits/maxClaims``) and their
    /// ids.
    static func writeLinked(record: [UInt8], groups: [GroupID], to writer: inout WireWriter) {
        writer.u16(UInt16(record.count))
        writer.raw(record)
        writer.u8(UInt8(groups.count))
        for group in groups { writer.raw(group.bytes) }
    }

    static func readLinked(_ reader: inout WireReader) throws(WireError) -> WireMessage {
        let length = Int(try reader.u16("record length"))
        guard length <= Limits.recordBytes else {
            throw reader.malformed("record is \(length) bytes; the limit is \(Limits.recordBytes)")
        }
        let record = Array(try reader.raw(length, "record"))
        let count = Int(try reader.u8("group count"))
        guard count <= WireLimits.maxClaims else {
            throw reader.malformed("\(count) groups; the limit is \(WireLimits.maxClaims)")
        }
        var groups: [GroupID] = []
        for _ in 0..<count { groups.append(try reader.id("group")) }
        return .linked(record: record, groups: groups)
    }

    /// The rules ``readLinking(_:)``, CONSENT and ``readLinked(_:)`` apply, for ``validate(_:)``.
    static func checkLink(_ message: WireMessage, _ reader: WireReader) throws(WireError) {
        switch message {
        case .linking(let records), .recovery(let records):
            guard (1...WireLimits.maxLinkRecords).contains(records.count),
                records.allSatisfy({ $0.count <= Limits.recordBytes })
            else {
                throw reader.malformed(
                    "a \(message.typeName) has 1 ... \(WireLimits.maxLinkRecords) records of a record's size"
                )
            }
        case .consent(let signature):
            guard signature.count == 64 else { throw reader.malformed("a consent is 64 bytes") }
        case .linked(let record, let groups):
            guard record.count <= Limits.recordBytes, groups.count <= WireLimits.maxClaims else {
                throw reader.malformed("a LINKED has one record and at most \(WireLimits.maxClaims) groups")
            }
        default:
            break
        }
    }
}
