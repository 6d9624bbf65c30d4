import Crypto
import Foundation

/// The record format v2 of Docs/PROTOCOL.md §2: a signed header that commits to the content by length and
/// SHA-256, then the content, which can be erased while the header stays verifiable.
///
/// ```
/// record  = header || content        (content absent once erased; a delete has none)
/// header  = signed || signature      (the record id is SHA-256 of the header)
/// content = salt[16] || fields       (by kind)
/// ```
public enum RecordFormat {
    /// "CNTM": the first four bytes of every record.
    public static let magic: [UInt8] = [0x43, 0x4E, 0x54, 0x4D]
    /// The format version this code writes and reads.
    public static let version: UInt8 = 2
    /// Length of an Ed25519 signature.
    public static let signatureBytes = 64
    /// Length of the random salt that starts every content, so that its hash in the header does not give away a
    /// short text that was erased (a guess of "yes" could otherwise be checked against the hash).
    public static let saltBytes = 16
    /// SHA-256 of no bytes: the content hash of a delete. Computed, not stored: a `Data` of 32 bytes held by a static
    /// is reported as leaked by LeakSanitizer (Data's enum packs its storage pointer), which fails scripts/fuzz.sh.
    public static var emptyContentHash: Data { Data(SHA256.hash(data: [UInt8]())) }

    // MARK: Encoding

    /// The content bytes of a body with its salt; empty for a delete. Checks every field first.
    public static func encodeContent(_ content: RecordContent, salt: [UInt8]) throws(RecordError) -> [UInt8] {
        try validate(content)
        precondition(salt.count == saltBytes, "a content's salt is \(saltBytes) bytes")
        switch content.body {
        case .delete, .member: return []
        case .opaque(_, let payload) where payload.isEmpty: return []
        default: break
        }
        var writer = ByteWriter()
        writer.raw(salt)
        switch content.body {
        case .profile(let name):
            writer.string8(name)
        case .post(let caption, let photo, let location):
            writer.string16(caption)
            writePhoto(photo, &writer)
            writeLocation(location, &writer)
        case .comment(_, let text):
            writer.string16(text)
        case .edit(_, let change):
            var flags: UInt8 = 0
            if change.caption != nil { flags |= EditFlags.caption }
            if change.photo != nil { flags |= EditFlags.photo }
            switch change.location {
            case .unchanged: break
            case .set: flags |= EditFlags.locationSet
            case .removed: flags |= EditFlags.locationRemoved
            }
            writer.u8(flags)
            if let caption = change.caption { writer.string16(caption) }
            if let photo = change.photo { writePhoto(photo, &writer) }
            if case .set(let location) = change.location {
                writer.i32(location.latitudeE7)
                writer.i32(location.longitudeE7)
            }
        case .group(let founding):
            writer.string8(founding.name)
        case .opaque(_, let payload):
            writer.raw(payload)
        case .delete, .member:
            break
        }
        return writer.bytes
    }

    /// The header's signed bytes for a content and its encoded content bytes: exactly what gets signed.
    public static func encodeHeader(_ content: RecordContent, contentBytes: [UInt8]) throws(RecordError) -> [UInt8] {
        try validate(content)
        var writer = ByteWriter()
        writer.raw(magic)
        writer.u8(version)
        writer.u8(content.body.kindCode)
        writer.raw(content.author.bytes)
        writer.u64(content.sequence)
        if let previous = content.previous { writer.raw(previous.bytes) }
        writer.i64(content.createdAt.milliseconds)
        switch content.body.references {
        case .none: break
        case .post(let post): writer.raw(post.bytes)
        case .targets(let targets):
            writer.u16(UInt16(targets.count))
            for target in targets { writer.raw(target.bytes) }
        case .group(let node, let open):
            writer.raw(node.bytes)
            writer.u8(open ? GroupFlags.open : 0)
        case .member(let change):
            writer.raw(change.group.bytes)
            writer.u8(change.action.rawValue)
            writer.raw(change.node.bytes)
            writer.raw(change.log.bytes)
            writer.u64(change.through)
        case .opaque(let references):
            writer.raw(references.context?.bytes ?? Data(count: 32))
            writer.u16(UInt16(references.data.count))
            writer.raw(references.data)
        }
        writer.u32(UInt32(contentBytes.count))
        writer.raw(SHA256.hash(data: contentBytes))
        return writer.bytes
    }

    private enum GroupFlags {
        static let open: UInt8 = 0x01
    }

    private enum EditFlags {
        static let caption: UInt8 = 0x01
        static let photo: UInt8 = 0x02
        static let locationSet: UInt8 = 0x04
        static let locationRemoved: UInt8 = 0x08
        static let all: UInt8 = 0x0F
    }

    private static func writePhoto(_ photo: PhotoReference, _ writer: inout ByteWriter) {
        writer.raw(photo.sha256.bytes)
        writer.u64(photo.byteCount)
        writer.u8(photo.mediaType.rawValue)
        writer.u32(photo.width)
        writer.u32(photo.height)
        writer.u8((photo.takenAt == nil ? 0 : PhotoFlags.takenAt) | (photo.thumbnail == nil ? 0 : PhotoFlags.thumbnail))
        if let takenAt = photo.takenAt { writer.i64(takenAt.milliseconds) }
        if let thumbnail = photo.thumbnail {
            writer.raw(thumbnail.sha256.bytes)
            writer.u32(thumbnail.byteCount)
        }
    }

    /// The bits of a photo's flags byte (PROTOCOL.md §2.5).
    enum PhotoFlags {
        static let takenAt: UInt8 = 0x01
        static let thumbnail: UInt8 = 0x02
        static let all: UInt8 = 0x03
    }

    private static func writeLocation(_ location: Coordinate?, _ writer: inout ByteWriter) {
        if let location {
            writer.u8(1)
            writer.i32(location.latitudeE7)
            writer.i32(location.longitudeE7)
        } else {
            writer.u8(0)
        }
    }

    // MARK: Decoding

    /// A record's bytes parsed: its header, its body when the content is present, and where the header's signed
    /// bytes and the header end.
    public struct Decoded: Sendable {
        public var header: RecordHeader
        /// Nil when the record is a header alone (its content erased, or withheld).
        public var body: RecordBody?
        /// The header's signed bytes: `bytes[..<signedLength]`.
        public var signedLength: Int
        /// The header, signature included: `bytes[..<headerLength]`; the content follows.
        public var headerLength: Int
    }

    /// Parses record bytes (a header alone, or a header and its content) and checks every field; a content that
    /// does not match the header's length and SHA-256 is refused. The signature is parsed, not verified.
    public static func decode(_ bytes: [UInt8]) throws(RecordError) -> Decoded {
        guard bytes.count <= Limits.recordBytes else {
            throw .tooLong(field: "record", bytes: bytes.count, limit: Limits.recordBytes)
        }
        var reader = ByteReader(bytes)
        let header = try readHeader(&reader)
        let signedLength = reader.offset
        guard reader.remaining >= signatureBytes else { throw .malformed("truncated at signature") }
        let headerLength = signedLength + signatureBytes
        let contentBytes = bytes.count - headerLength
        var body: RecordBody?
        if contentBytes > 0 || !header.hasContent {
            guard contentBytes == Int(header.contentLength) else {
                throw .contentMismatch(
                    header.hasContent
                        ? "the content is \(contentBytes) bytes; the header says \(header.contentLength)"
                        : "a \(header.kind.name) has no content, but \(contentBytes) bytes follow its signature"
                )
            }
            let content = bytes[headerLength...]
            guard Data(SHA256.hash(data: content)) == header.contentHash else {
                throw .contentMismatch("its SHA-256 is not the one the header gives")
            }
            var contentReader = ByteReader(Array(content))
            body = try readContent(of: header, &contentReader)
            guard contentReader.remaining == 0 else {
                throw .malformed("\(contentReader.remaining) trailing bytes in the content")
            }
            try validate(
                RecordContent(
                    author: header.author,
                    sequence: header.sequence,
                    previous: header.previous,
                    createdAt: header.createdAt,
                    body: body!
                )
            )
        }
        return Decoded(header: header, body: body, signedLength: signedLength, headerLength: headerLength)
    }

    private static func readHeader(_ reader: inout ByteReader) throws(RecordError) -> RecordHeader {
        guard try reader.raw(4, "magic").elementsEqual(magic) else { throw .malformed("not a continuum record") }
        let version = try reader.u8("version")
        guard version == Self.version else {
            throw .malformed(
                version == 1
                    ? "record format version 1 is not read any more; this node reads version \(Self.version)"
                    : "unknown record format version \(version)"
            )
        }
        let kindByte = try reader.u8("kind")
        // Codes 8 … 255 are kinds this node does not know: laid out alike, so verified and kept all the same (§2.8).
        guard kindByte != 0, let kind = RecordKind(rawValue: kindByte < 8 ? kindByte : 0) else {
            throw .malformed("record kind 0 is not defined; kinds are 1 ... 255")
        }
        let author = AuthorID(unchecked: try reader.raw(32, "author"))
        let sequence = try reader.u64("sequence")
        guard (1...Limits.maxSequence).contains(sequence) else {
            throw .outOfRange("sequence \(sequence) must be 1 ... \(Limits.maxSequence)")
        }
        let previous = sequence > 1 ? RecordID(unchecked: try reader.raw(32, "previous")) : nil
        let createdAt = Timestamp(milliseconds: try reader.i64("createdAt"))
        guard (0...Limits.latestTimestamp).contains(createdAt.milliseconds) else {
            throw .outOfRange("createdAt \(createdAt.milliseconds) is outside 1970 ... 9999")
        }
        let references = try readReferences(kind, code: kindByte, &reader)
        if kind == .group, sequence != 1 {
            // Checked here too, for a group record that travels as its header alone.
            throw .outOfRange("a group record founds its author's log: its sequence must be 1")
        }
        let contentLength = try reader.u32("content length")
        let contentHash = try reader.raw(32, "content hash")
        try checkContentLength(contentLength, hash: contentHash, of: kind)
        return RecordHeader(
            kind: kind,
            author: author,
            sequence: sequence,
            previous: previous,
            createdAt: createdAt,
            references: references,
            contentLength: contentLength,
            contentHash: contentHash
        )
    }

    /// The content length and hash a header may state for its kind (§2.5, §2.8).
    private static func checkContentLength(
        _ contentLength: UInt32,
        hash contentHash: Data,
        of kind: RecordKind
    ) throws(RecordError) {
        let limit = Limits.contentBytes(kind)
        if kind == .delete || kind == .member || (kind == .unknown && contentLength == 0) {
            guard contentLength == 0, contentHash == emptyContentHash else {
                throw .malformed(
                    "a \(kind.name) has no content: its content length must be 0 and its hash that of no bytes"
                )
            }
        } else {
            // The salt and at least a length prefix, or, for an edit, its flags: an edit that only removes the
            // location (flags 08) has no field after them.
            // A kind this node does not know has its salt and at least one byte.
            let smallest = saltBytes + (kind == .edit || kind == .unknown ? 1 : 2)
            guard (UInt32(smallest)...UInt32(limit)).contains(contentLength) else {
                throw .outOfRange("content length \(contentLength) of a \(kind.name) must be \(smallest) ... \(limit)")
            }
        }
    }

    /// The references of a header: a comment's or edit's post, a delete's targets; for a kind this node does not know
    /// (`code` 8 … 255), the post it goes with and the kind's own bytes.
    private static func readReferences(
        _ kind: RecordKind,
        code: UInt8,
        _ reader: inout ByteReader
    ) throws(RecordError)
        -> RecordReferences
    {
        switch kind {
        case .unknown:
            let context = try reader.raw(32, "context")
            let length = Int(try reader.u16("data length"))
            guard length <= Limits.opaqueDataBytes else {
                throw .tooLong(field: "references of kind \(code)", bytes: length, limit: Limits.opaqueDataBytes)
            }
            let data = try reader.raw(length, "data")
            return .opaque(
                OpaqueReferences(
                    code: code,
                    context: context.allSatisfy { $0 == 0 } ? nil : PostID(unchecked: context),
                    data: Array(data)
                )
            )
        case .profile, .post:
            return .none
        case .comment, .edit:
            return .post(PostID(unchecked: try reader.raw(32, "post")))
        case .delete:
            let count = Int(try reader.u16("target count"))
            guard count <= Limits.deleteTargets else {
                throw .tooLong(field: "delete targets", bytes: count, limit: Limits.deleteTargets)
            }
            var targets: [RecordID] = []
            targets.reserveCapacity(count)
            for _ in 0..<count { targets.append(RecordID(unchecked: try reader.raw(32, "target"))) }
            try checkTargets(targets)
            return .targets(targets)
        case .group:
            let node = NodeID(unchecked: try reader.raw(32, "node"))
            let flags = try reader.u8("group flags")
            guard flags & ~GroupFlags.open == 0 else { throw .malformed("group flags \(flags) set an unknown bit") }
            return .group(node: node, open: flags & GroupFlags.open != 0)
        case .member:
            let group = GroupID(unchecked: try reader.raw(32, "group"))
            let actionByte = try reader.u8("action")
            guard let action = MemberAction(rawValue: actionByte) else {
                throw .outOfRange("unknown member action \(actionByte)")
            }
            let node = NodeID(unchecked: try reader.raw(32, "node"))
            let log = AuthorID(unchecked: try reader.raw(32, "log"))
            let through = try reader.u64("through")
            return .member(MemberChange(group: group, action: action, node: node, log: log, through: through))
        }
    }

    /// The content fields, after the salt, as the header's kind lays them out.
    private static func readContent(
        of header: RecordHeader,
        _ reader: inout ByteReader
    ) throws(RecordError)
        -> RecordBody
    {
        if header.kind == .delete, case .targets(let targets) = header.references { return .delete(targets: targets) }
        if header.kind == .member, case .member(let change) = header.references { return .member(change) }
        if case .opaque(let references) = header.references {
            guard header.contentLength > 0 else { return .opaque(references, payload: []) }
            _ = try reader.raw(saltBytes, "salt")
            return .opaque(references, payload: Array(try reader.raw(reader.remaining, "payload")))
        }
        _ = try reader.raw(saltBytes, "salt")
        switch (header.kind, header.references) {
        case (.profile, _):
            return .profile(name: try reader.string8("name", limit: Limits.nameBytes))
        case (.post, _):
            let caption = try reader.string16("caption", limit: Limits.captionBytes)
            let photo = try readPhoto(&reader)
            return .post(caption: caption, photo: photo, location: try readLocation(&reader))
        case (.comment, .post(let post)):
            return .comment(post: post, text: try reader.string16("text", limit: Limits.commentBytes))
        case (.group, .group(let node, let open)):
            let name = try reader.string8("name", limit: Limits.nameBytes)
            return .group(GroupFounding(node: node, name: name, open: open))
        case (.edit, .post(let post)):
            let flags = try reader.u8("edit flags")
            guard flags & ~EditFlags.all == 0 else { throw .malformed("edit flags \(flags) set an unknown bit") }
            guard flags & EditFlags.locationSet == 0 || flags & EditFlags.locationRemoved == 0 else {
                throw .malformed("an edit cannot both set and remove the location")
            }
            var change = PostChange()
            if flags & EditFlags.caption != 0 {
                change.caption = try reader.string16("caption", limit: Limits.captionBytes)
            }
            if flags & EditFlags.photo != 0 { change.photo = try readPhoto(&reader) }
            if flags & EditFlags.locationSet != 0 {
                change.location = .set(
                    Coordinate(latitudeE7: try reader.i32("latitude"), longitudeE7: try reader.i32("longitude"))
                )
            } else if flags & EditFlags.locationRemoved != 0 {
                change.location = .removed
            }
            return .edit(post: post, change: change)
        default:
            throw .malformed("a \(header.kind.name) has no content")
        }
    }

    private static func readPhoto(_ reader: inout ByteReader) throws(RecordError) -> PhotoReference {
        let hash = AssetHash(unchecked: try reader.raw(32, "photo.sha256"))
        let byteCount = try reader.u64("photo.bytes")
        let mediaByte = try reader.u8("photo.mediaType")
        guard let mediaType = MediaType(rawValue: mediaByte) else {
            throw .outOfRange("unknown media type code \(mediaByte)")
        }
        let width = try reader.u32("photo.width")
        let height = try reader.u32("photo.height")
        let flags = try reader.u8("photo flags")
        guard flags & ~PhotoFlags.all == 0 else {
            throw .malformed("photo flags are \(String(format: "0x%02x", flags)); only bits 0 and 1 may be set")
        }
        let takenAt =
            flags & PhotoFlags.takenAt == 0 ? nil : Timestamp(milliseconds: try reader.i64("takenAt"))
        let thumbnail =
            flags & PhotoFlags.thumbnail == 0
            ? nil
            : ThumbnailReference(
                sha256: AssetHash(unchecked: try reader.raw(32, "thumbnail.sha256")),
                byteCount: try reader.u32("thumbnail.bytes")
            )
        return PhotoReference(
            sha256: hash,
            byteCount: byteCount,
            mediaType: mediaType,
            width: width,
            height: height,
            takenAt: takenAt,
            thumbnail: thumbnail
        )
    }

    private static func readLocation(_ reader: inout ByteReader) throws(RecordError) -> Coordinate? {
        switch try reader.u8("location flag") {
        case 0: return nil
        case 1: return Coordinate(latitudeE7: try reader.i32("latitude"), longitudeE7: try reader.i32("longitude"))
        case let flag: throw .malformed("location flag is \(flag); it must be 0 or 1")
        }
    }

    // MARK: Field rules

    /// The checks that do not need any other record: ranges, lengths, text rules.
    public static func validate(_ content: RecordContent) throws(RecordError) {
        guard (1...Limits.maxSequence).contains(content.sequence) else {
            throw .outOfRange("sequence \(content.sequence) must be 1 ... \(Limits.maxSequence)")
        }
        guard (content.sequence == 1) == (content.previous == nil) else {
            throw .malformed("previous must be present exactly when sequence > 1")
        }
        guard (0...Limits.latestTimestamp).contains(content.createdAt.milliseconds) else {
            throw .outOfRange("createdAt \(content.createdAt.milliseconds) is outside 1970 ... 9999")
        }
        switch content.body {
        case .profile(let name):
            try checkText(name, field: "name", limit: Limits.nameBytes, multiline: false)
        case .post(let caption, let photo, let location):
            try checkText(caption, field: "caption", limit: Limits.captionBytes, multiline: true)
            try checkPhoto(photo)
            if let location { try checkLocation(location) }
        case .comment(_, let text):
            try checkText(text, field: "text", limit: Limits.commentBytes, multiline: true)
        case .edit(_, let change):
            guard !change.isEmpty else { throw .outOfRange("an edit must change the caption, photo or location") }
            if let caption = change.caption {
                try checkText(caption, field: "caption", limit: Limits.captionBytes, multiline: true)
            }
            if let photo = change.photo { try checkPhoto(photo) }
            if case .set(let location) = change.location { try checkLocation(location) }
        case .delete(let targets):
            try checkTargets(targets)
        case .group(let founding):
            guard content.sequence == 1 else {
                throw .outOfRange("a group record founds its author's log: its sequence must be 1")
            }
            try checkText(founding.name, field: "group name", limit: Limits.nameBytes, multiline: false)
        case .member(let change):
            try checkMember(change, author: content.author, sequence: content.sequence)
        case .opaque(let references, let payload):
            guard references.code >= 8 else {
                throw .outOfRange("kind \(references.code) is defined; an unknown kind's code is 8 ... 255")
            }
            guard references.data.count <= Limits.opaqueDataBytes else {
                throw .tooLong(field: "references", bytes: references.data.count, limit: Limits.opaqueDataBytes)
            }
            guard payload.count <= Limits.opaqueContentBytes - saltBytes else {
                throw .tooLong(field: "content", bytes: payload.count, limit: Limits.opaqueContentBytes - saltBytes)
            }
        }
    }

    /// A member record's own rules (PROTOCOL.md §2.7); who may sign it is a rule of the group's records (§5.1).
    private static func checkMember(_ change: MemberChange, author: AuthorID, sequence: UInt64) throws(RecordError) {
        guard change.log.bytes != change.group.bytes else {
            throw .outOfRange("a member record cannot name the group's founder, who is always a member")
        }
        if change.log == author {
            guard change.action == .add, sequence == 1 else {
                throw .outOfRange("a member record about its own author must add it, as the first record of its log")
            }
        }
        if change.action == .remove {
            guard change.through <= Limits.maxSequence else {
                throw .outOfRange("through \(change.through) must be 0 ... \(Limits.maxSequence)")
            }
        } else if change.through != 0 {
            throw .outOfRange("through is for a removal; an \(change.action.name) must have 0")
        }
    }

    private static func checkPhoto(_ photo: PhotoReference) throws(RecordError) {
        guard (1...Limits.photoBytes).contains(photo.byteCount) else {
            throw .outOfRange("photo size \(photo.byteCount) must be 1 ... \(Limits.photoBytes) bytes")
        }
        guard (1...Limits.photoDimension).contains(photo.width), (1...Limits.photoDimension).contains(photo.height)
        else {
            throw .outOfRange(
                "photo is \(photo.width)x\(photo.height); each side must be 1 ... \(Limits.photoDimension)"
            )
        }
        if let takenAt = photo.takenAt, !(0...Limits.latestTimestamp).contains(takenAt.milliseconds) {
            throw .outOfRange("takenAt \(takenAt.milliseconds) is outside 1970 ... 9999")
        }
        if let thumbnail = photo.thumbnail, !(1...Limits.thumbnailBytes).contains(thumbnail.byteCount) {
            throw .outOfRange("thumbnail size \(thumbnail.byteCount) must be 1 ... \(Limits.thumbnailBytes) bytes")
        }
    }

    private static func checkLocation(_ location: Coordinate) throws(RecordError) {
        guard location.isInRange else {
            throw .outOfRange("location \(location.latitudeE7),\(location.longitudeE7) is not on Earth")
        }
    }

    private static func checkTargets(_ targets: [RecordID]) throws(RecordError) {
        guard !targets.isEmpty else { throw .outOfRange("a delete needs at least one target") }
        guard targets.count <= Limits.deleteTargets else {
            throw .tooLong(field: "delete targets", bytes: targets.count, limit: Limits.deleteTargets)
        }
        for index in targets.indices.dropFirst() where !(targets[index - 1] < targets[index]) {
            throw .malformed("delete targets must be in strictly ascending order, without repeats")
        }
    }

    /// Text must be non-blank and free of control characters other than tab and, where allowed, newline.
    static func checkText(_ text: String, field: String, limit: Int, multiline: Bool) throws(RecordError) {
        let length = text.utf8.count
        guard length <= limit else { throw .tooLong(field: field, bytes: length, limit: limit) }
        guard !TextRules.isBlank(text) else { throw .outOfRange("\(field) is blank") }
        for scalar in text.unicodeScalars {
            let value = scalar.value
            let allowed = value == 0x09 || (multiline && value == 0x0A)
            if (value < 0x20 || value == 0x7F) && !allowed {
                let hex = String(value, radix: 16, uppercase: true)
                throw .outOfRange(
                    "\(field) contains control character U+\(String(repeating: "0", count: 4 - hex.count) + hex)"
                )
            }
        }
    }
}
