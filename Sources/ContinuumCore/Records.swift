import Crypto
import Foundation

/// The kind byte of a record.
public enum RecordKind: UInt8, Sendable, CaseIterable, Codable {
    case profile = 1
    case post = 2
    case comment = 3
    case edit = 4
    case delete = 5
    /// Founds a group: its name, whether it is open, and its founder's node (PROTOCOL.md §2.7).
    case group = 6
    /// Adds a member to a group, removes one, or makes one an admin (PROTOCOL.md §2.7).
    case member = 7
    /// A kind of the common layout of codes 8 … 255 (PROTOCOL.md §2.8). This node reads one of them, reactions
    /// (code 13, ``Reaction``); any other it does not know: verified, stored, counted in the clock and forwarded like
    /// any record, shown nowhere. Its code travels in its references (``OpaqueReferences/code``); 0 itself is never a
    /// kind on the wire.
    case unknown = 0

    /// The name used in JSON and in messages.
    public var name: String {
        switch self {
        case .profile: "profile"
        case .post: "post"
        case .comment: "comment"
        case .edit: "edit"
        case .delete: "delete"
        case .group: "group"
        case .member: "member"
        case .unknown: "record of an unknown kind"
        }
    }

    /// Kinds that say who belongs to a group; the others are what members share.
    public var isMembership: Bool { self == .group || self == .member }
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
    /// When the photo was taken (from its EXIF, or as the author said), if known. Shown beside the post's own time,
    /// which is when it was posted; never used to order or filter the feed.
    public var takenAt: Timestamp?
    /// The thumbnail the author's node made of the photo, which receivers keep as it is (PROTOCOL.md §7.4.19); nil
    /// when the author committed to none, and receivers make their own.
    public var thumbnail: ThumbnailReference?

    public init(
        sha256: AssetHash,
        byteCount: UInt64,
        mediaType: MediaType,
        width: UInt32,
        height: UInt32,
        takenAt: Timestamp? = nil,
        thumbnail: ThumbnailReference? = nil
    ) {
        self.sha256 = sha256
        self.byteCount = byteCount
        self.mediaType = mediaType
        self.width = width
        self.height = height
        self.takenAt = takenAt
        self.thumbnail = thumbnail
    }
}

/// The author's thumbnail of a photo, as a post commits to it: its SHA-256 and size (PROTOCOL.md §2.5).
public struct ThumbnailReference: Sendable, Hashable {
    public var sha256: AssetHash
    public var byteCount: UInt32

    public init(sha256: AssetHash, byteCount: UInt32) {
        self.sha256 = sha256
        self.byteCount = byteCount
    }

    /// The reference to `bytes`.
    public init(of bytes: some DataProtocol) {
        self.init(sha256: AssetHash(unchecked: Data(SHA256.hash(data: bytes))), byteCount: UInt32(bytes.count))
    }
}

/// What an Edit changes in one of its author's posts: any of the caption, the photo and the location, at least
/// one of them.
public struct PostChange: Sendable, Hashable {
    /// What an edit does to the post's location.
    public enum Location: Sendable, Hashable {
        case unchanged
        case set(Coordinate)
        case removed
    }

    public var caption: String?
    public var photo: PhotoReference?
    public var location: Location

    public init(caption: String? = nil, photo: PhotoReference? = nil, location: Location = .unchanged) {
        self.caption = caption
        self.photo = photo
        self.location = location
    }

    /// True when the edit changes nothing (such an edit is invalid).
    public var isEmpty: Bool { caption == nil && photo == nil && location == .unchanged }
}

/// What a group record says: the founder's node, the group's name, and whether anyone may join it without an admin.
public struct GroupFounding: Sendable, Hashable {
    public var node: NodeID
    public var name: String
    public var open: Bool

    public init(node: NodeID, name: String, open: Bool) {
        self.node = node
        self.name = name
        self.open = open
    }
}

/// What a member record does to a group's members.
public enum MemberAction: UInt8, Sendable, Hashable, CaseIterable, Codable {
    /// Adds the member: a node and its log key in the group.
    case add = 1
    /// Removes the member; its records after `through` are refused.
    case remove = 2
    /// Makes the member an admin, who may add and remove members.
    case admin = 3

    public var name: String {
        switch self {
        case .add: "add"
        case .remove: "remove"
        case .admin: "admin"
        }
    }
}

/// A change to a group's members, as a member record's header carries it (PROTOCOL.md §2.7).
public struct MemberChange: Sendable, Hashable {
    public var group: GroupID
    public var action: MemberAction
    /// The member's node: the key its TLS certificate carries.
    public var node: NodeID
    /// The member's log key in the group: the author of its records there.
    public var log: AuthorID
    /// For a removal: the last sequence of `log` that stays valid (what the remover held); 0 otherwise.
    public var through: UInt64

    public init(group: GroupID, action: MemberAction, node: NodeID, log: AuthorID, through: UInt64 = 0) {
        self.group = group
        self.action = action
        self.node = node
        self.log = log
        self.through = through
    }
}

/// The references of a record of a kind this node does not know (PROTOCOL.md §2.8), laid out the same for every
/// such kind so that any node can verify, store and forward it.
public struct OpaqueReferences: Sendable, Hashable {
    /// The kind's code, 8 … 255.
    public var code: UInt8
    /// The post the record goes with: a delete of that post by its author erases the record's content, as it erases
    /// the post's comments. Nil: it goes with no post (32 zero bytes on the wire).
    public var context: PostID?
    /// The kind's own references, 0 … ``Limits/opaqueDataBytes`` bytes, read only by nodes that know the kind.
    public var data: [UInt8]

    public init(code: UInt8, context: PostID?, data: [UInt8] = []) {
        self.code = code
        self.context = context
        self.data = data
    }
}

/// The kind-specific part of a record, as its author wrote it: the header's references and the content.
public enum RecordBody: Sendable, Hashable {
    /// The author's display name.
    case profile(name: String)
    /// A photo and its caption.
    case post(caption: String, photo: PhotoReference, location: Coordinate?)
    /// A comment on a post.
    case comment(post: PostID, text: String)
    /// A change to one of the author's own posts: its caption, photo or location.
    case edit(post: PostID, change: PostChange)
    /// Tombstones for some of the author's own posts or comments, ids in strictly ascending byte order.
    case delete(targets: [RecordID])
    /// Founds the group whose id is the author (the founder's log key for it); always the first record of that log.
    case group(GroupFounding)
    /// A change to a group's members.
    case member(MemberChange)
    /// A record of a kind this node does not know: its references, and its content after the salt (`payload`;
    /// empty when the content is empty), kept as bytes.
    case opaque(OpaqueReferences, payload: [UInt8])

    /// An edit of the caption alone.
    public static func edit(post: PostID, caption: String) -> RecordBody {
        .edit(post: post, change: PostChange(caption: caption))
    }

    public var kind: RecordKind {
        switch self {
        case .profile: .profile
        case .post: .post
        case .comment: .comment
        case .edit: .edit
        case .delete: .delete
        case .group: .group
        case .member: .member
        case .opaque: .unknown
        }
    }

    /// The kind's code on the wire: the kind's own, or an unknown kind's (8 … 255).
    public var kindCode: UInt8 {
        if case .opaque(let references, _) = self { return references.code }
        return kind.rawValue
    }

    /// The references that travel in the header, readable once the content is erased.
    public var references: RecordReferences {
        switch self {
        case .profile, .post: .none
        case .comment(let post, _): .post(post)
        case .edit(let post, _): .post(post)
        case .delete(let targets): .targets(targets)
        case .group(let founding): .group(node: founding.node, open: founding.open)
        case .member(let change): .member(change)
        case .opaque(let references, _): .opaque(references)
        }
    }
}

/// What a record's header says it is about, whether or not its content is held: a comment's or an edit's post, a
/// delete's targets.
public enum RecordReferences: Sendable, Hashable {
    case none
    case post(PostID)
    case targets([RecordID])
    /// A group record's founder node and whether the group is open.
    case group(node: NodeID, open: Bool)
    /// A member record's change (it has no content: all of it is in the header).
    case member(MemberChange)
    /// The references of a kind this node does not know.
    case opaque(OpaqueReferences)

    /// The posts the record is about: a comment's or an edit's post, a delete's targets (some may be comments).
    public var posts: [PostID] {
        switch self {
        case .none, .group, .member: []
        case .post(let post): [post]
        case .targets(let targets): targets.map { PostID(unchecked: $0.bytes) }
        case .opaque(let references): references.context.map { [$0] } ?? []
        }
    }
}

/// Everything in a record but its signature and the content's salt: what the author signs.
public struct RecordContent: Sendable, Hashable {
    public var author: AuthorID
    /// Position in the author's log: 1, 2, 3, …
    public var sequence: UInt64
    /// The id of the author's record at `sequence - 1`; nil exactly when `sequence` is 1.
    public var previous: RecordID?
    /// When the record was signed. For a post: when it was posted, which orders the feed.
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

/// The signed header of a record: who, where in the log, when, what it refers to, and the length and hash of its
/// content. It stays, and stays verifiable, when the content is erased.
public struct RecordHeader: Sendable, Hashable {
    public var kind: RecordKind
    public var author: AuthorID
    public var sequence: UInt64
    public var previous: RecordID?
    public var createdAt: Timestamp
    public var references: RecordReferences
    /// The length of the content in bytes; 0 for a delete, which has none.
    public var contentLength: UInt32
    /// SHA-256 of the content.
    public var contentHash: Data

    /// True for a kind that has content to erase (every kind but delete).
    public var hasContent: Bool { contentLength > 0 }

    /// The kind's code on the wire: the kind's own, or an unknown kind's (8 … 255).
    public var kindCode: UInt8 {
        if case .opaque(let references) = references { return references.code }
        return kind.rawValue
    }

    /// Whether a record of this kind can change who belongs to a group: a group or member record (§5.1), or an
    /// account record (kinds 8 … 11, §2.10), since members follow accounts.
    public var changesMembership: Bool { Self.changesMembership(kindCode: kindCode) }

    /// ``changesMembership`` for a kind's code on the wire.
    public static func changesMembership(kindCode: UInt8) -> Bool { (6...11).contains(kindCode) }
}

/// Why a record was refused. The message says which field and which limit.
public enum RecordError: Error, Sendable, Hashable, CustomStringConvertible {
    case malformed(String)
    case tooLong(field: String, bytes: Int, limit: Int)
    case outOfRange(String)
    case badSignature
    case notOwner(kind: RecordKind, target: RecordID)
    /// The content's length or SHA-256 is not what the signed header says.
    case contentMismatch(String)

    public var description: String {
        switch self {
        case .malformed(let why): "malformed record: \(why)"
        case .tooLong(let field, let bytes, let limit): "\(field) is \(bytes) bytes; the limit is \(limit)"
        case .outOfRange(let why): "out of range: \(why)"
        case .badSignature: "the signature does not match the record's author and bytes"
        case .contentMismatch(let why): "the content does not match its header: \(why)"
        case .notOwner(let kind, let target):
            "\(kind == .edit ? "an" : "a") \(kind.name) may only target its own author's records; \(target.short) belongs to someone else"
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
