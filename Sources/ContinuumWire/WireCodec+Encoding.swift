import ContinuumCore

/// Encoding: a message into its frame, field by field as Docs/PROTOCOL.md §7 lays it out.
extension WireCodec {
    /// The complete frame of a message: length prefix, version, type and payload.
    ///
    /// The text fields are made to fit first (see ``Hello/name`` and ``WireError/message``). Every other limit of
    /// ``WireLimits`` is the caller's to respect, as ``validate(_:)`` checks: a message that breaks one is a
    /// programming error. A debug build stops on it (an assertion); a release build encodes it as it is, and the
    /// peer refuses the frame and closes the connection, which is better than bringing the node down. Call
    /// ``validate(_:)`` first where a value comes from outside the program, such as a file's size.
    public static func encode(_ message: WireMessage) -> [UInt8] {
        let message = fitted(message)
        assert(isEncodable(message))
        var writer = WireWriter(capacity: lengthPrefixBytes + headerBytes + estimatedPayloadBytes(message))
        writer.u32(0)  // the length, patched below
        writer.u8(WireLimits.frameVersion)
        writer.u8(message.typeCode)
        writePayload(message, to: &writer)
        writer.patch(UInt32(writer.bytes.count - lengthPrefixBytes), at: 0)
        return writer.bytes
    }

    /// True when the message passes ``validate(_:)``; stops with the reason otherwise. Only called from `assert`.
    private static func isEncodable(_ message: WireMessage) -> Bool {
        do throws(WireError) {
            try validate(message)
            return true
        } catch {
            assertionFailure("cannot encode \(message.typeName): \(error.message)")
            return false
        }
    }

    /// The message with its text fields made to fit the wire.
    private static func fitted(_ message: WireMessage) -> WireMessage {
        switch message {
        case .hello(var hello):
            if let name = hello.name {
                let fitted = WireText.fitted(name, limit: Limits.nameBytes, multiline: false)
                hello.name = TextRules.isBlank(fitted) ? nil : fitted
            }
            return .hello(hello)
        case .error(var error):
            error.message = WireText.fitted(error.message, limit: WireLimits.maxErrorMessageBytes, multiline: true)
            return .error(error)
        default:
            return message
        }
    }

    /// Everything after the type byte, field by field as Docs/PROTOCOL.md §7 lays it out.
    private static func writePayload(_ message: WireMessage, to writer: inout WireWriter) {
        switch message {
        case .hello(let hello):
            writeHello(hello, to: &writer)
        case .error(let error):
            writeError(error, to: &writer)
        case .clock(let round, let clock):
            writer.u32(round)
            writeClock(clock, to: &writer)
        case .clockSince(let round, let base, let clock):
            writer.u32(round)
            writer.raw(base.bytes)
            writeClock(clock, to: &writer)
        case .clockUnknown(let round):
            writer.u32(round)
        case .offer(let round, let records, let bytes):
            writer.u32(round)
            writer.u64(records)
            writer.u64(bytes)
        case .records(let live, let records):
            writer.u8(live ? 1 : 0)
            writeRecords(records, to: &writer)
        case .ack(let clock):
            writeClock(clock, to: &writer)
        case .request(let ranges), .have(let ranges):
            writeRanges(ranges, to: &writer)
        case .tree(let eager):
            writer.u8(eager ? 1 : 0)
        case .follows, .photosWant, .photos:
            writeOptionalKind(message, to: &writer)
        case .optional(_, let payload):
            writer.raw(payload)
        case .done(let round):
            writer.u32(round)
        case .photoWant(let hash, let offset):
            writer.raw(hash.bytes)
            writer.u64(offset)
        case .photoData(let hash, let offset, let chunk):
            writePhotoData(hash, offset: offset, chunk: chunk, to: &writer)
        case .photoEnd(let hash, let totalBytes):
            writer.raw(hash.bytes)
            writer.u64(totalBytes)
        case .photoMissing(let hash), .thumbWant(let hash), .thumbMissing(let hash):
            writer.raw(hash.bytes)
        case .thumbData(let hash, let bytes):
            writeThumbData(hash, bytes, to: &writer)
        case .ping(let nonce), .pong(let nonce):
            writer.u64(nonce)
        case .interest(let replace, let entries):
            writeInterest(replace: replace, entries, to: &writer)
        case .push(let records):
            writeRecords(records, to: &writer)
        case .membership(let membership):
            writeMembership(membership, to: &writer)
        case .joined(let group, let record):
            writeJoined(group, record: record, to: &writer)
        case .linking, .consent, .linked, .recovery:
            writeLink(message, to: &writer)
        }
    }

    /// Protocol version, network, node, flags, listen port, then the name's length and UTF-8 bytes.
    private static func writeHello(_ hello: Hello, to writer: inout WireWriter) {
        writer.u16(hello.protocolVersion)
        writer.raw(hello.nonce.bytes)
        writer.raw(hello.node.bytes)
        writer.u8(hello.plaintext ? 1 : 0)
        writer.u16(hello.listenPort)
        let name = Array((hello.name ?? "").utf8)
        writer.u8(UInt8(name.count))
        writer.raw(name)
    }

    /// The error code, then the message's length and UTF-8 bytes.
    private static func writeError(_ error: WireError, to writer: inout WireWriter) {
        let text = Array(error.message.utf8)
        writer.u16(error.code.rawValue)
        writer.u16(UInt16(text.count))
        writer.raw(text)
    }

    /// Record count, then each record's length and bytes (RECORDS after its `live` byte, and PUSH).
    private static func writeRecords(_ records: [[UInt8]], to writer: inout WireWriter) {
        writer.u16(UInt16(records.count))
        for record in records {
            writer.u32(UInt32(record.count))
            writer.raw(record)
        }
    }

    /// Range count, then each range's author, first and last sequence.
    private static func writeRanges(_ ranges: [LogRange], to writer: inout WireWriter) {
        writer.u32(UInt32(ranges.count))
        for range in ranges {
            writer.raw(range.author.bytes)
            writer.u64(range.range.lowerBound)
            writer.u64(range.range.upperBound)
        }
    }

    /// Hash, offset, then the chunk's length and bytes (no checksum of its own: §7.4.10).
    private static func writePhotoData(_ hash: AssetHash, offset: UInt64, chunk: [UInt8], to writer: inout WireWriter) {
        writer.raw(hash.bytes)
        writer.u64(offset)
        writer.u32(UInt32(chunk.count))
        writer.raw(chunk)
    }

    /// Hash, then the thumbnail's length and bytes.
    private static func writeThumbData(_ hash: AssetHash, _ bytes: [UInt8], to writer: inout WireWriter) {
        writer.raw(hash.bytes)
        writer.u32(UInt32(bytes.count))
        writer.raw(bytes)
    }

    /// Group id, then the length and bytes of the member record that adds the joiner.
    private static func writeJoined(_ group: GroupID, record: [UInt8], to writer: inout WireWriter) {
        writer.raw(group.bytes)
        writer.u16(UInt16(record.count))
        writer.raw(record)
    }

    /// Flags (bit 0: replace), entry count, then entries in ascending order of post, hops 255 for a withdrawal.
    private static func writeInterest(replace: Bool, _ entries: [PostInterest], to writer: inout WireWriter) {
        writer.u8(replace ? 1 : 0)
        writer.u16(UInt16(entries.count))
        for entry in entries.sorted(by: { $0.post < $1.post }) {
            writer.raw(entry.post.bytes)
            writer.u8(entry.hops ?? 0xFF)
        }
    }

    /// Entry count, then entries in ascending order of author.
    static func writeClock(_ clock: VectorClock, to writer: inout WireWriter) {
        writer.u32(UInt32(clock.heads.count))
        for (author, sequence) in clock.heads.sorted(by: { $0.key < $1.key }) {
            writer.raw(author.bytes)
            writer.u64(sequence)
        }
    }

    /// About how many bytes the payload takes, to size the writer's buffer once.
    private static func estimatedPayloadBytes(_ message: WireMessage) -> Int {
        switch message {
        case .hello: 70 + Limits.nameBytes
        case .error(let error): 4 + error.message.utf8.count
        case .clock(_, let clock), .ack(let clock): 8 + 40 * clock.heads.count
        case .clockSince(_, _, let clock): 40 + 40 * clock.heads.count
        case .records(_, let records), .push(let records): 3 + records.reduce(0) { $0 + 4 + $1.count }
        case .interest(_, let entries): 3 + 33 * entries.count
        case .request(let ranges): 4 + 48 * ranges.count
        case .photoData(_, _, let chunk): 44 + chunk.count
        case .thumbData(_, let bytes): 36 + bytes.count
        case .optional(_, let payload): payload.count
        case .follows(let entries): 2 + 41 * entries.count
        case .photosWant(let hashes): 1 + 32 * hashes.count
        case .photos(let photos): 1 + photos.reduce(0) { $0 + 36 + ($1.bytes?.count ?? 0) }
        default: 48
        }
    }
}
