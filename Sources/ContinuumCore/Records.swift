import Crypto
import Foundation

/// The kind byte of a record.
public enum RecordKind: UInt8, Sendable, CaseIterable, Codable {
    case profile = 1
    case post = 2
    case comment = 3
    case edit = 4
    case delete = 5

    /// The name used in JSON and in messages.
    public var name: String {
        switch self {
        case .profile: "profile"
        case .post: "post"
        case .comment: "comment"
        case .edit: "edit"
        case .delete: "delete"
        }
    }
}

/// The image formats a Post may reference, with their one-byte codes in the encoding.
public enum MediaType: UInt8, Sendable, CaseIterable, Codable {
    case jpeg = 1
    case png = 2
    case heic = 3
    case webp = 4
    case gif = 5

    /// The MIME type, as in `Content-Type`.
    public var mimeType: String {
        switch self {
        case .jpeg: "image/jpeg"
        case .png: "image/png"
        case .heic: "image/heic"
        case .webp: "image/webp"
        case .gif: "image/gif"
        }
    }

    /// The format's common name: JPEG, PNG, HEIC, WebP, GIF.
    public var formatName: String {
        switch self {
        case .jpeg: "JPEG"
        case .png: "PNG"
        case .heic: "HEIC"
        case .webp: "WebP"
        case .gif: "GIF"
        }
    }

    /// The usual file extension, without the dot.
    public var fileExtension: String {
        switch self {
        case .jpeg: "jpg"
        case .png: "png"
        case .heic: "heic"
        case .webp: "webp"
        case .gif: "gif"
        }
    }

    /// The media type of a MIME type, or nil.
    public init?(mimeType: String) {
        guard let match = Self.allCases.first(where: { $0.mimeType == mimeType.lowercased() }) else { return nil }
        self = match
    }
}

/// Milliseconds since 1970-01-01T00:00:00Z, UTC. Records carry time in this form only.
public struct Timestamp: Sendable, Hashable, Comparable, Codable {
    public var milliseconds: Int64

    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    /// The timestamp of a date, rounded down to the millisecond.
    public init(_ date: Date) {
        milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    /// Now, to the millisecond.
    public static func now() -> Timestamp { Timestamp(Date()) }

    public var date: Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }

    /// RFC 3339 in UTC with milliseconds, such as `2024-07-14T16:20:00.000Z`.
    public var rfc3339: String {
        let seconds = milliseconds.floorDivided(by: 1000)
        let millis = milliseconds - seconds * 1000
        let days = seconds.floorDivided(by: 86_400)
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = Self.civil(fromDays: days)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):"
            + "\(pad(secondOfDay % 3600 / 60, 2)):\(pad(secondOfDay % 60, 2)).\(pad(millis, 3))Z"
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.milliseconds < rhs.milliseconds }

    public init(from decoder: any Decoder) throws {
        milliseconds = try decoder.singleValueContainer().decode(Int64.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(milliseconds)
    }

    /// Howard Hinnant's days-to-civil algorithm: proleptic Gregorian, no Foundation calendar involved.
    private static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = z.floorDivided(by: 146_097)
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

extension Int64 {
    fileprivate func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}

/// A position on Earth in fixed point: degrees times 10^7, as signed 32-bit integers (about 1 cm of precision).
public struct Coordinate: Sendable, Hashable, Codable {
    /// Latitude in 1e-7 degrees, -900000000 ... 900000000.
    public var latitudeE7: Int32
    /// Longitude in 1e-7 degrees, -1800000000 ... 1800000000.
    public var longitudeE7: Int32

    public init(latitudeE7: Int32, longitudeE7: Int32) {
        self.latitudeE7 = latitudeE7
        self.longitudeE7 = longitudeE7
    }

    /// A coordinate from degrees, or nil when either is out of range or not finite.
    public init?(latitude: Double, longitude: Double) {
        guard latitude.isFinite, longitude.isFinite, abs(latitude) <= 90, abs(longitude) <= 180 else { return nil }
        latitudeE7 = Int32((latitude * 1e7).rounded())
        longitudeE7 = Int32((longitude * 1e7).rounded())
    }

    public var latitude: Double { Double(latitudeE7) / 1e7 }
    public var longitude: Double { Double(longitudeE7) / 1e7 }

    var isInRange: Bool { abs(Int64(latitudeE7)) <= 900_000_000 && abs(Int64(longitudeE7)) <= 1_800_000_000 }

    /// Great-circle distance in kilometres (haversine, mean Earth radius 6371.0088 km).
    public static func distanceKm(
        latitude1: Double,
        longitude1: Double,
        latitude2: Double,
        longitude2: Double
    )
        -> Double
    {
        let radians = Double.pi / 180
        let dLat = (latitude2 - latitude1) * radians
        let dLon = (longitude2 - longitude1) * radians
        let a =
            sin(dLat / 2) * sin(dLat / 2)
            + cos(latitude1 * radians) * cos(latitude2 * radians) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * 6371.0088 * asin(min(1, a.squareRoot()))
    }

    /// Distance to another coordinate in kilometres.
    public func distanceKm(to other: Coordinate) -> Double {
        Self.distanceKm(
            latitude1: latitude,
            longitude1: longitude,
            latitude2: other.latitude,
            longitude2: other.longitude
        )
    }

    enum CodingKeys: String, CodingKey {
        case latitude, longitude
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let lat = try container.decode(Double.self, forKey: .latitude)
        let lon = try container.decode(Double.self, forKey: .longitude)
        guard let value = Coordinate(latitude: lat, longitude: lon) else {
            throw DecodingError.dataCorruptedError(
                forKey: .latitude,
                in: container,
                debugDescription: "coordinate out of range"
            )
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(latitude, forKey: .latitude)
        try container.encode(longitude, forKey: .longitude)
    }
}

/// What a Post says about its photo. The photo itself travels separately and is checked against `sha256`.
public struct PhotoReference: Sendable, Hashable {
    public var sha256: AssetHash
    public var byteCount: UInt64
    public var mediaType: MediaType
    public var width: UInt32
    public var height: UInt32

    public init(sha256: AssetHash, byteCount: UInt64, mediaType: MediaType, width: UInt32, height: UInt32) {
        self.sha256 = sha256
        self.byteCount = byteCount
        self.mediaType = mediaType
        self.width = width
        self.height = height
    }
}

/// The kind-specific part of a record.
public enum RecordBody: Sendable, Hashable {
    /// The author's display name.
    case profile(name: String)
    /// A photo and its caption.
    case post(caption: String, photo: PhotoReference, location: Coordinate?)
    /// A comment on a post.
    case comment(post: PostID, text: String)
    /// A new caption for one of the author's own posts.
    case edit(post: PostID, caption: String)
    /// Tombstones for some of the author's own posts or comments, ids in strictly ascending byte order.
    case delete(targets: [RecordID])

    public var kind: RecordKind {
        switch self {
        case .profile: .profile
        case .post: .post
        case .comment: .comment
        case .edit: .edit
        case .delete: .delete
        }
    }
}

/// Everything in a record but its signature: what the author signs.
public struct RecordContent: Sendable, Hashable {
    public var author: AuthorID
    /// Position in the author's log: 1, 2, 3, …
    public var sequence: UInt64
    /// The id of the author's record at `sequence - 1`; nil exactly when `sequence` is 1.
    public var previous: RecordID?
    public var createdAt: Timestamp
    public var body: RecordBody

    public init(author: AuthorID, sequence: UInt64, previous: RecordID?, createdAt: Timestamp, body: RecordBody) {
        self.author = author
        self.sequence = sequence
        self.previous = previous
        self.createdAt = createdAt
        self.body = body
    }

    public var kind: RecordKind { body.kind }
}

/// Why a record was refused. The message says which field and which limit.
public enum RecordError: Error, Sendable, Hashable, CustomStringConvertible {
    case malformed(String)
    case tooLong(field: String, bytes: Int, limit: Int)
    case outOfRange(String)
    case badSignature
    case notOwner(kind: RecordKind, target: RecordID)

    public var description: String {
        switch self {
        case .malformed(let why): "malformed record: \(why)"
        case .tooLong(let field, let bytes, let limit): "\(field) is \(bytes) bytes; the limit is \(limit)"
        case .outOfRange(let why): "out of range: \(why)"
        case .badSignature: "the signature does not match the record's author and bytes"
        case .notOwner(let kind, let target):
            "\(kind == .edit ? "an" : "a") \(kind.name) may only target its own author's records; \(target.short) belongs to someone else"
        }
    }
}

/// The record format: magic, version, and the encoder and decoder of Docs/PROTOCOL.md §2.
public enum RecordFormat {
    /// "CNTM": the first four bytes of every record.
    public static let magic: [UInt8] = [0x43, 0x4E, 0x54, 0x4D]
    /// The format version this code writes and reads.
    public static let version: UInt8 = 1
    /// Length of an Ed25519 signature.
    public static let signatureBytes = 64

    /// The canonical bytes of the content: exactly what gets signed. Checks every field first.
    public static func encode(_ content: RecordContent) throws(RecordError) -> [UInt8] {
        try validate(content)
        var writer = ByteWriter()
        writer.raw(magic)
        writer.u8(version)
        writer.u8(content.kind.rawValue)
        writer.raw(content.author.bytes)
        writer.u64(content.sequence)
        if let previous = content.previous { writer.raw(previous.bytes) }
        writer.i64(content.createdAt.milliseconds)
        switch content.body {
        case .profile(let name):
            writer.string8(name)
        case .post(let caption, let photo, let location):
            writer.string16(caption)
            writer.raw(photo.sha256.bytes)
            writer.u64(photo.byteCount)
            writer.u8(photo.mediaType.rawValue)
            writer.u32(photo.width)
            writer.u32(photo.height)
            if let location {
                writer.u8(1)
                writer.i32(location.latitudeE7)
                writer.i32(location.longitudeE7)
            } else {
                writer.u8(0)
            }
        case .comment(let post, let text):
            writer.raw(post.bytes)
            writer.string16(text)
        case .edit(let post, let caption):
            writer.raw(post.bytes)
            writer.string16(caption)
        case .delete(let targets):
            writer.u16(UInt16(targets.count))
            for target in targets { writer.raw(target.bytes) }
        }
        return writer.bytes
    }

    /// Parses signed record bytes and checks every field. The signature is parsed, not verified.
    public static func decode(_ bytes: [UInt8]) throws(RecordError) -> (content: RecordContent, signedLength: Int) {
        guard bytes.count <= Limits.recordBytes else {
            throw .tooLong(field: "record", bytes: bytes.count, limit: Limits.recordBytes)
        }
        var reader = ByteReader(bytes)
        guard try reader.raw(4, "magic").elementsEqual(magic) else { throw .malformed("not a continuum record") }
        let version = try reader.u8("version")
        guard version == Self.version else { throw .malformed("unknown record format version \(version)") }
        let kindByte = try reader.u8("kind")
        guard let kind = RecordKind(rawValue: kindByte) else { throw .malformed("unknown record kind \(kindByte)") }
        let author = AuthorID(unchecked: try reader.raw(32, "author"))
        let sequence = try reader.u64("sequence")
        guard (1...Limits.maxSequence).contains(sequence) else {
            throw .outOfRange("sequence \(sequence) must be 1 ... \(Limits.maxSequence)")
        }
        let previous = sequence > 1 ? RecordID(unchecked: try reader.raw(32, "previous")) : nil
        let createdAt = Timestamp(milliseconds: try reader.i64("createdAt"))
        let body = try readBody(kind, &reader)
        let signedLength = reader.offset
        guard reader.remaining == signatureBytes else {
            throw .malformed(
                reader.remaining < signatureBytes ? "truncated at signature" : "\(reader.remaining - 64) trailing bytes"
            )
        }
        let content = RecordContent(
            author: author,
            sequence: sequence,
            previous: previous,
            createdAt: createdAt,
            body: body
        )
        try validate(content)
        return (content, signedLength)
    }

    /// The fields that follow the header, as the record's kind lays them out.
    private static func readBody(_ kind: RecordKind, _ reader: inout ByteReader) throws(RecordError) -> RecordBody {
        switch kind {
        case .profile:
            return .profile(name: try reader.string8("name", limit: Limits.nameBytes))
        case .post:
            return try readPost(&reader)
        case .comment:
            let post = PostID(unchecked: try reader.raw(32, "post"))
            return .comment(post: post, text: try reader.string16("text", limit: Limits.commentBytes))
        case .edit:
            let post = PostID(unchecked: try reader.raw(32, "post"))
            return .edit(post: post, caption: try reader.string16("caption", limit: Limits.captionBytes))
        case .delete:
            let count = Int(try reader.u16("target count"))
            guard count <= Limits.deleteTargets else {
                throw .tooLong(field: "delete targets", bytes: count, limit: Limits.deleteTargets)
            }
            var targets: [RecordID] = []
            targets.reserveCapacity(count)
            for _ in 0..<count { targets.append(RecordID(unchecked: try reader.raw(32, "target"))) }
            return .delete(targets: targets)
        }
    }

    /// A post's caption, photo reference and optional location.
    private static func readPost(_ reader: inout ByteReader) throws(RecordError) -> RecordBody {
        let caption = try reader.string16("caption", limit: Limits.captionBytes)
        let hash = AssetHash(unchecked: try reader.raw(32, "photo.sha256"))
        let byteCount = try reader.u64("photo.bytes")
        let mediaByte = try reader.u8("photo.mediaType")
        guard let mediaType = MediaType(rawValue: mediaByte) else {
            throw .outOfRange("unknown media type code \(mediaByte)")
        }
        let width = try reader.u32("photo.width")
        let height = try reader.u32("photo.height")
        let location: Coordinate?
        switch try reader.u8("location flag") {
        case 0: location = nil
        case 1:
            location = Coordinate(latitudeE7: try reader.i32("latitude"), longitudeE7: try reader.i32("longitude"))
        case let flag: throw .malformed("location flag is \(flag); it must be 0 or 1")
        }
        return .post(
            caption: caption,
            photo: PhotoReference(
                sha256: hash,
                byteCount: byteCount,
                mediaType: mediaType,
                width: width,
                height: height
            ),
            location: location
        )
    }

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
            guard (1...Limits.photoBytes).contains(photo.byteCount) else {
                throw .outOfRange("photo size \(photo.byteCount) must be 1 ... \(Limits.photoBytes) bytes")
            }
            guard (1...Limits.photoDimension).contains(photo.width), (1...Limits.photoDimension).contains(photo.height)
            else {
                throw .outOfRange(
                    "photo is \(photo.width)x\(photo.height); each side must be 1 ... \(Limits.photoDimension)"
                )
            }
            if let location, !location.isInRange {
                throw .outOfRange("location \(location.latitudeE7),\(location.longitudeE7) is not on Earth")
            }
        case .comment(_, let text):
            try checkText(text, field: "text", limit: Limits.commentBytes, multiline: true)
        case .edit(_, let caption):
            try checkText(caption, field: "caption", limit: Limits.captionBytes, multiline: true)
        case .delete(let targets):
            guard !targets.isEmpty else { throw .outOfRange("a delete needs at least one target") }
            guard targets.count <= Limits.deleteTargets else {
                throw .tooLong(field: "delete targets", bytes: targets.count, limit: Limits.deleteTargets)
            }
            for index in targets.indices.dropFirst() where !(targets[index - 1] < targets[index]) {
                throw .malformed("delete targets must be in strictly ascending order, without repeats")
            }
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

/// Text helpers shared by validation and by the commands.
public enum TextRules {
    /// True when the text has nothing but white space.
    public static func isBlank(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { $0.properties.isWhitespace }
    }
}

/// A record with its signature, parsed and checked field by field, and its id. Not yet verified.
public struct SignedRecord: Sendable, Hashable {
    public let content: RecordContent
    /// The whole encoding, signature included: what is stored and sent verbatim.
    public let bytes: [UInt8]
    /// SHA-256 of `bytes`.
    public let id: RecordID
    private let signedLength: Int

    /// Parses record bytes; throws for anything malformed or out of range.
    public init(bytes: [UInt8]) throws(RecordError) {
        let (content, signedLength) = try RecordFormat.decode(bytes)
        self.content = content
        self.bytes = bytes
        self.signedLength = signedLength
        self.id = RecordID(unchecked: Data(SHA256.hash(data: bytes)))
    }

    fileprivate init(content: RecordContent, bytes: [UInt8], signedLength: Int) {
        self.content = content
        self.bytes = bytes
        self.signedLength = signedLength
        self.id = RecordID(unchecked: Data(SHA256.hash(data: bytes)))
    }

    public var author: AuthorID { content.author }
    public var sequence: UInt64 { content.sequence }
    public var kind: RecordKind { content.kind }

    /// The signature: the last 64 bytes.
    public var signature: [UInt8] { Array(bytes[signedLength...]) }

    /// Checks the Ed25519 signature against the author's key.
    public func verify() throws(RecordError) -> VerifiedRecord {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: content.author.bytes) else {
            throw .badSignature
        }
        let valid = bytes.withUnsafeBufferPointer { buffer in
            key.isValidSignature(
                UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[signedLength...]),
                for: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[..<signedLength])
            )
        }
        guard valid else { throw .badSignature }
        return VerifiedRecord(self)
    }
}

/// A record whose signature has been checked, or that this node signed itself. Only these are stored.
public struct VerifiedRecord: Sendable, Hashable {
    public let record: SignedRecord

    fileprivate init(_ record: SignedRecord) { self.record = record }

    public var id: RecordID { record.id }
    public var content: RecordContent { record.content }
    public var bytes: [UInt8] { record.bytes }
}

/// A node's Ed25519 key pair. Its public key is the node's ``AuthorID``.
public struct NodeIdentity: Sendable {
    public let privateKey: Curve25519.Signing.PrivateKey
    public let author: AuthorID

    public init(privateKey: Curve25519.Signing.PrivateKey) {
        self.privateKey = privateKey
        self.author = AuthorID(unchecked: privateKey.publicKey.rawRepresentation)
    }

    /// A new random identity.
    public static func generate() -> NodeIdentity { NodeIdentity(privateKey: .init()) }

    /// The identity of a 32-byte seed.
    public init(seed: some ContiguousBytes) throws {
        self.init(privateKey: try .init(rawRepresentation: seed))
    }

    /// Encodes, signs and returns the record. `content.author` must be this identity.
    public func sign(_ content: RecordContent) throws(RecordError) -> VerifiedRecord {
        precondition(content.author == author, "a node signs only its own records")
        let unsigned = try RecordFormat.encode(content)
        guard let signature = try? privateKey.signature(for: unsigned) else { throw .badSignature }
        return VerifiedRecord(
            SignedRecord(content: content, bytes: unsigned + Array(signature), signedLength: unsigned.count)
        )
    }
}
