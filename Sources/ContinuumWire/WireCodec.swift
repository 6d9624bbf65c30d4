import ContinuumCore
import Crypto
import Foundation

/// The encoder and decoder of sync protocol v1 messages (Docs/PROTOCOL.md §7). Pure: no I/O, no state.
///
/// ``FrameDecoder`` cuts a byte stream into frames and calls ``decodePayload(type:payload:)`` for each.
public enum WireCodec {
    /// The bytes of the length prefix of a frame.
    public static let lengthPrefixBytes = 4
    /// The bytes of the frame header that the length counts: version and type.
    public static let headerBytes = 2

    /// Decodes the payload of a frame whose version has been checked: everything after the type byte.
    ///
    /// Refuses, with ``WireError/Code/malformedFrame``, an unknown type, a payload that ends early or has bytes
    /// left over, and every count, length or value out of its range. Record bytes are not parsed here: the
    /// receiver verifies them.
    public static func decodePayload(type: UInt8, payload: ArraySlice<UInt8>) throws(WireError) -> WireMessage {
        // The optional range: FOLLOWS, PHOTOS_WANT and PHOTOS are this version's types there; every other is a
        // message to read and ignore.
        if type >= WireMessage.firstOptionalType, !MessageKind.knownOptional.contains(type) {
            return .optional(type: type, payload: Array(payload))
        }
        guard let kind = MessageKind(rawValue: type) else { throw unknownType(type) }
        var reader = WireReader(payload, message: kind.name)
        let message: WireMessage
        switch kind {
        case .hello: message = .hello(try readHello(&reader))
        case .membership: message = .membership(try readMembership(&reader))
        case .joined: message = try readJoined(&reader)
        case .linking, .consent, .linked, .recovery: message = try readLink(kind, &reader)
        case .error: message = .error(try readError(&reader))
        case .clock:
            let round = try reader.u32("round")
            message = .clock(round: round, try readClock(&reader))
        case .clockSince:
            let round = try reader.u32("round")
            let base = ClockDigest(checked: Array(try reader.raw(32, "base")))
            message = .clockSince(round: round, base: base, try readClock(&reader))
        case .clockUnknown: message = .clockUnknown(round: try reader.u32("round"))
        case .offer:
            message = .offer(
                round: try reader.u32("round"),
                records: try reader.u64("records"),
                bytes: try reader.u64("bytes")
            )
        case .records:
            let liveByte = try reader.u8("live")
            guard liveByte <= 1 else { throw reader.malformed("live is \(liveByte); it must be 0 or 1") }
            message = .records(live: liveByte == 1, try readRecords(&reader))
        case .push: message = .push(try readRecords(&reader))
        case .interest: message = try readInterest(&reader)
        case .ack: message = .ack(try readClock(&reader))
        case .request: message = .request(try readRanges(&reader))
        case .have: message = .have(try readRanges(&reader))
        case .tree:
            let mode = try reader.u8("mode")
            guard mode <= 1 else { throw reader.malformed("mode is \(mode); it must be 0 (prune) or 1 (graft)") }
            message = .tree(eager: mode == 1)
        case .done: message = .done(round: try reader.u32("round"))
        case .follows: message = .follows(try readFollows(&reader))
        case .photosWant: message = .photosWant(try readPhotosWant(&reader))
        case .photos: message = .photos(try readPhotos(&reader))
        case .optional: message = .optional(type: type, payload: Array(payload))
        case .photoWant: message = try readPhotoWant(&reader)
        case .photoData: message = try readPhotoData(&reader)
        case .photoEnd: message = try readPhotoEnd(&reader)
        case .photoMissing: message = .photoMissing(try reader.id("hash"))
        case .thumbWant: message = .thumbWant(try reader.id("hash"))
        case .thumbMissing: message = .thumbMissing(try reader.id("hash"))
        case .thumbData: message = try readThumbData(&reader)
        case .ping: message = .ping(try reader.u64("nonce"))
        case .pong: message = .pong(try reader.u64("nonce"))
        }
        try reader.finish()
        return message
    }

    /// Checks a message against every rule the decoder applies, and throws the error a receiver would.
    ///
    /// Every message that ``decodePayload(type:payload:)`` returns passes; ``encode(_:)`` traps on one that does not.
    public static func validate(_ message: WireMessage) throws(WireError) {
        let reader = WireReader([], message: message.typeName)
        switch message {
        case .hello(let hello):
            if let name = hello.name,
                let problem = WireText.problem(name, limit: Limits.nameBytes, multiline: false, field: "name")
            {
                throw reader.malformed(problem)
            }
        case .error(let error):
            let problem = WireText.problem(
                error.message,
                limit: WireLimits.maxErrorMessageBytes,
                multiline: true,
                field: "message"
            )
            if let problem { throw reader.malformed(problem) }
        case .clock(_, let clock), .ack(let clock), .clockSince(_, _, let clock):
            try checkClock(clock, reader)
        case .follows(let entries):
            try checkFollows(entries, reader)
        case .photosWant(let hashes):
            try checkPhotosWant(hashes, reader)
        case .photos(let photos):
            try checkPhotos(photos, reader)
        case .offer, .done, .photoMissing, .ping, .pong, .clockUnknown, .thumbWant, .thumbMissing, .tree:
            break
        case .membership(let membership):
            try checkMembership(membership, reader)
        case .joined(_, let record):
            if record.count > Limits.recordBytes {
                throw reader.malformed("record is \(record.count) bytes; the limit is \(Limits.recordBytes)")
            }
        case .linking, .consent, .linked, .recovery:
            try checkLink(message, reader)
        case .thumbData(_, let bytes):
            try checkThumbnail(count: bytes.count, reader)
        case .interest(let replace, let entries):
            try checkInterestEntries(entries, replace: replace, reader)
        case .records(_, let records), .push(let records):
            try checkBatch(records, reader)
        case .request(let ranges), .have(let ranges):
            try checkRanges(ranges, reader)
        case .photoWant(_, let offset):
            try checkOffset(offset, reader)
        case .photoData(_, let offset, let chunk):
            try checkChunk(offset: offset, count: chunk.count, reader)
        case .photoEnd(_, let total):
            try checkTotalBytes(total, reader)
        case .optional(let type, let payload):
            guard type >= WireMessage.firstOptionalType else {
                throw reader.malformed("type 0x\(String(type, radix: 16)) is not in the optional range 0x80 ... 0xff")
            }
            guard payload.count <= WireLimits.maxFrameBytes - headerBytes else {
                throw reader.malformed("the payload is \(payload.count) bytes, over a frame's limit")
            }
        }
    }

    /// The encoding of a vector clock as CLOCK carries it (entry count, then entries in ascending order of author).
    public static func clockBytes(_ clock: VectorClock) -> [UInt8] {
        var writer = WireWriter(capacity: 4 + 40 * clock.heads.count)
        writeClock(clock, to: &writer)
        return writer.bytes
    }

    /// A clock from ``clockBytes(_:)``; refuses anything else.
    public static func clock(from bytes: [UInt8]) throws(WireError) -> VectorClock {
        var reader = WireReader(bytes[...], message: "clock")
        let clock = try readClock(&reader)
        try reader.finish()
        return clock
    }

    /// The SHA-256 of ``clockBytes(_:)``: how CLOCK_SINCE names the clock it changes.
    public static func clockDigest(_ clock: VectorClock) -> ClockDigest {
        ClockDigest(checked: Array(SHA256.hash(data: clockBytes(clock))))
    }

    /// JOINED: the group, then the record's `u16` length and bytes.
    private static func readJoined(_ reader: inout WireReader) throws(WireError) -> WireMessage {
        let group: GroupID = try reader.id("group")
        let length = Int(try reader.u16("record length"))
        guard length <= Limits.recordBytes else {
            throw reader.malformed("record is \(length) bytes; the limit is \(Limits.recordBytes)")
        }
        return .joined(group: group, record: Array(try reader.raw(length, "record")))
    }

    /// The error for a type byte that names no message.
    static func unknownType(_ type: UInt8) -> WireError {
        WireError(.malformedFrame, "unknown message type 0x\(String(type, radix: 16))")
    }

    /// Whether a frame of this type can exist; ``FrameDecoder`` refuses the others as soon as it sees the type byte.
    static func isKnown(type: UInt8) -> Bool {
        type >= WireMessage.firstOptionalType || MessageKind(rawValue: type) != nil
    }

    // MARK: - Decoding

    private static func readHello(_ reader: inout WireReader) throws(WireError) -> Hello {
        let version = try reader.u16("protocol version")
        let nonce = SessionNonce(checked: Array(try reader.raw(32, "nonce")))
        let node: AuthorID = try reader.id("node")
        let flags = try reader.u8("flags")
        guard flags & ~1 == 0 else {
            throw reader.malformed("flags 0x\(String(flags, radix: 16)) have unknown bits set; only bit 0 is defined")
        }
        let port = try reader.u16("listen port")
        let length = Int(try reader.u8("name length"))
        var name: String?
        if length > 0 {
            let text = try reader.utf8(length: length, "name")
            if let problem = WireText.problem(text, limit: Limits.nameBytes, multiline: false, field: "name") {
                throw reader.malformed(problem)
            }
            name = text
        }
        return Hello(
            protocolVersion: version,
            nonce: nonce,
            node: node,
            name: name,
            listenPort: port,
            plaintext: flags & 1 == 1
        )
    }

    /// Code, then the message's length and UTF-8 text.
    private static func readError(_ reader: inout WireReader) throws(WireError) -> WireError {
        let code = WireError.Code(rawValue: try reader.u16("code"))
        let length = Int(try reader.u16("message length"))
        guard length <= WireLimits.maxErrorMessageBytes else {
            throw reader.malformed("message is \(length) bytes; the limit is \(WireLimits.maxErrorMessageBytes)")
        }
        let text = try reader.utf8(length: length, "message")
        if let problem = WireText.problem(text, limit: .max, multiline: true, field: "message") {
            throw reader.malformed(problem)
        }
        return WireError(code, text)
    }

    /// Entry count, then entries of 32-byte author and sequence, authors strictly ascending.
    private static func readClock(_ reader: inout WireReader) throws(WireError) -> VectorClock {
        let count = Int(try reader.u32("entry count"))
        guard count <= WireLimits.maxClockEntries else {
            throw reader.malformed("\(count) clock entries; the limit is \(WireLimits.maxClockEntries)")
        }
        try reader.need(count * 40, "clock entries")
        var heads: [AuthorID: UInt64] = [:]
        heads.reserveCapacity(count)
        var previous: ArraySlice<UInt8> = []
        for index in 0..<count {
            let author = try reader.raw(32, "author")
            let sequence = try reader.u64("sequence")
            guard index == 0 || previous.lexicographicallyPrecedes(author) else {
                throw reader.malformed("clock entry \(index): authors must be in strictly ascending order")
            }
            guard (1...Limits.maxSequence).contains(sequence) else {
                throw reader.malformed("clock entry \(index): sequence \(sequence) must be 1 ... \(Limits.maxSequence)")
            }
            heads[AuthorID(unchecked: Data(author))] = sequence
            previous = author
        }
        return VectorClock(heads)
    }

    /// Record count, then each record's length and bytes (RECORDS after its `live` byte, and PUSH).
    private static func readRecords(_ reader: inout WireReader) throws(WireError) -> [[UInt8]] {
        let count = Int(try reader.u16("record count"))
        guard (1...WireLimits.maxRecordsPerBatch).contains(count) else {
            throw reader.malformed("\(count) records; a batch holds 1 ... \(WireLimits.maxRecordsPerBatch)")
        }
        var records: [[UInt8]] = []
        records.reserveCapacity(count)
        var total = 0
        for index in 0..<count {
            let length = Int(try reader.u32("record length"))
            guard (1...Limits.recordBytes).contains(length) else {
                throw reader.malformed("record \(index) is \(length) bytes; it must be 1 ... \(Limits.recordBytes)")
            }
            total += length
            guard total <= WireLimits.maxBatchBytes else {
                throw reader.malformed("the records add up to more than \(WireLimits.maxBatchBytes) bytes")
            }
            records.append(Array(try reader.raw(length, "record")))
        }
        return records
    }

    private static func readInterest(_ reader: inout WireReader) throws(WireError) -> WireMessage {
        let flags = try reader.u8("flags")
        guard flags & ~1 == 0 else {
            throw reader.malformed("flags 0x\(String(flags, radix: 16)) have unknown bits set; only bit 0 is defined")
        }
        let count = Int(try reader.u16("entry count"))
        guard count <= WireLimits.maxInterestEntries else {
            throw reader.malformed("\(count) entries; the limit is \(WireLimits.maxInterestEntries)")
        }
        try reader.need(count * 33, "entries")
        var entries: [PostInterest] = []
        entries.reserveCapacity(count)
        var previous: ArraySlice<UInt8> = []
        for index in 0..<count {
            let post = try reader.raw(32, "post")
            let hops = try reader.u8("hops")
            guard index == 0 || previous.lexicographicallyPrecedes(post) else {
                throw reader.malformed("entry \(index): posts must be in strictly ascending order")
            }
            let entry = PostInterest(post: PostID(unchecked: Data(post)), hops: hops == 0xFF ? nil : hops)
            try checkInterest(entry, index: index, replace: flags == 1, reader)
            entries.append(entry)
            previous = post
        }
        return .interest(replace: flags == 1, entries)
    }

    private static func readRanges(_ reader: inout WireReader) throws(WireError) -> [LogRange] {
        let count = Int(try reader.u32("range count"))
        guard (1...WireLimits.maxRanges).contains(count) else {
            throw reader.malformed("\(count) ranges; a frame holds 1 ... \(WireLimits.maxRanges)")
        }
        try reader.need(count * 48, "ranges")
        var ranges: [LogRange] = []
        ranges.reserveCapacity(count)
        for index in 0..<count {
            let author: AuthorID = try reader.id("author")
            let from = try reader.u64("from")
            let through = try reader.u64("through")
            try checkRange(from, through, index: index, reader)
            ranges.append(LogRange(author: author, range: from...through))
        }
        return ranges
    }

    private static func readPhotoWant(_ reader: inout WireReader) throws(WireError) -> WireMessage {
        let hash: AssetHash = try reader.id("hash")
        let offset = try reader.u64("offset")
        try checkOffset(offset, reader)
        return .photoWant(hash, offset: offset)
    }

    private static func readPhotoData(_ reader: inout WireReader) throws(WireError) -> WireMessage {
        let hash: AssetHash = try reader.id("hash")
        let offset = try reader.u64("offset")
        let length = Int(try reader.u32("chunk length"))
        try checkChunk(offset: offset, count: length, reader)
        let chunk = try reader.raw(length, "chunk")
        return .photoData(hash, offset: offset, chunk: Array(chunk))
    }

    private static func readPhotoEnd(_ reader: inout WireReader) throws(WireError) -> WireMessage {
        let hash: AssetHash = try reader.id("hash")
        let total = try reader.u64("total bytes")
        try checkTotalBytes(total, reader)
        return .photoEnd(hash, totalBytes: total)
    }

    private static func readThumbData(_ reader: inout WireReader) throws(WireError) -> WireMessage {
        let hash: AssetHash = try reader.id("hash")
        let length = Int(try reader.u32("thumbnail length"))
        try checkThumbnail(count: length, reader)
        return .thumbData(hash, Array(try reader.raw(length, "thumbnail")))
    }

    // MARK: - Shared checks

    private static func checkClock(_ clock: VectorClock, _ reader: WireReader) throws(WireError) {
        guard clock.heads.count <= WireLimits.maxClockEntries else {
            throw reader.malformed("\(clock.heads.count) clock entries; the limit is \(WireLimits.maxClockEntries)")
        }
        for (author, sequence) in clock.heads where sequence > Limits.maxSequence {
            throw reader.malformed(
                "clock entry \(author.short): sequence \(sequence) must be 1 ... \(Limits.maxSequence)"
            )
        }
    }

    /// The entry count, each post once, and each entry as ``checkInterest(_:index:replace:_:)`` checks it.
    private static func checkInterestEntries(
        _ entries: [PostInterest],
        replace: Bool,
        _ reader: WireReader
    ) throws(WireError) {
        guard entries.count <= WireLimits.maxInterestEntries else {
            throw reader.malformed("\(entries.count) entries; the limit is \(WireLimits.maxInterestEntries)")
        }
        guard Set(entries.map(\.post)).count == entries.count else {
            throw reader.malformed("a post appears twice")
        }
        for (index, entry) in entries.enumerated() {
            try checkInterest(entry, index: index, replace: replace, reader)
        }
    }

    private static func checkInterest(
        _ entry: PostInterest,
        index: Int,
        replace: Bool,
        _ reader: WireReader
    ) throws(WireError) {
        if let hops = entry.hops {
            guard hops <= WireLimits.maxInterestHops else {
                throw reader.malformed(
                    "entry \(index): hops \(hops) must be 0 ... \(WireLimits.maxInterestHops), or 255 to withdraw"
                )
            }
        } else if replace {
            throw reader.malformed("entry \(index): a replacing INTEREST cannot withdraw (hops 255)")
        }
    }

    /// The records of a RECORDS or PUSH: their count, each one's length, and their total.
    private static func checkBatch(_ records: [[UInt8]], _ reader: WireReader) throws(WireError) {
        guard (1...WireLimits.maxRecordsPerBatch).contains(records.count) else {
            throw reader.malformed("\(records.count) records; a batch holds 1 ... \(WireLimits.maxRecordsPerBatch)")
        }
        var total = 0
        for (index, record) in records.enumerated() {
            guard (1...Limits.recordBytes).contains(record.count) else {
                throw reader.malformed(
                    "record \(index) is \(record.count) bytes; it must be 1 ... \(Limits.recordBytes)"
                )
            }
            total += record.count
        }
        guard total <= WireLimits.maxBatchBytes else {
            throw reader.malformed("the records add up to \(total) bytes; the limit is \(WireLimits.maxBatchBytes)")
        }
    }

    private static func checkRanges(_ ranges: [LogRange], _ reader: WireReader) throws(WireError) {
        guard (1...WireLimits.maxRanges).contains(ranges.count) else {
            throw reader.malformed("\(ranges.count) ranges; a frame holds 1 ... \(WireLimits.maxRanges)")
        }
        for (index, range) in ranges.enumerated() {
            try checkRange(range.range.lowerBound, range.range.upperBound, index: index, reader)
        }
    }

    private static func checkRange(
        _ from: UInt64,
        _ through: UInt64,
        index: Int,
        _ reader: WireReader
    ) throws(WireError) {
        guard 1 <= from, from <= through, through <= Limits.maxSequence else {
            throw reader.malformed(
                "range \(index) is \(from) ... \(through); it must satisfy 1 <= from <= through <= \(Limits.maxSequence)"
            )
        }
    }

    private static func checkThumbnail(count: Int, _ reader: WireReader) throws(WireError) {
        guard (1...WireLimits.maxThumbnailBytes).contains(count) else {
            throw reader.malformed("thumbnail is \(count) bytes; it must be 1 ... \(WireLimits.maxThumbnailBytes)")
        }
    }

    /// A PHOTO_WANT's offset: within the largest photo.
    private static func checkOffset(_ offset: UInt64, _ reader: WireReader) throws(WireError) {
        guard offset <= Limits.photoBytes else {
            throw reader.malformed("offset \(offset) is beyond the largest photo (\(Limits.photoBytes) bytes)")
        }
    }

    /// A PHOTO_END's size: a photo of 1 byte up to the largest.
    private static func checkTotalBytes(_ total: UInt64, _ reader: WireReader) throws(WireError) {
        guard (1...Limits.photoBytes).contains(total) else {
            throw reader.malformed("total bytes \(total) must be 1 ... \(Limits.photoBytes)")
        }
    }

    private static func checkChunk(offset: UInt64, count: Int, _ reader: WireReader) throws(WireError) {
        guard (1...WireLimits.photoChunkBytes).contains(count) else {
            throw reader.malformed("chunk is \(count) bytes; it must be 1 ... \(WireLimits.photoChunkBytes)")
        }
        guard offset <= Limits.photoBytes, UInt64(count) <= Limits.photoBytes - offset else {
            throw reader.malformed(
                "chunk of \(count) bytes at offset \(offset) ends beyond the largest photo (\(Limits.photoBytes) bytes)"
            )
        }
    }
}
