/// The size and range limits of a record. Docs/PROTOCOL.md lists the same numbers; a record outside them is invalid.
public enum Limits {
    /// Display name in a Profile record, in UTF-8 bytes.
    public static let nameBytes = 64
    /// Caption of a Post or Edit record, in UTF-8 bytes.
    public static let captionBytes = 2_048
    /// Text of a Comment record, in UTF-8 bytes.
    public static let commentBytes = 4_096
    /// Targets of one Delete record.
    public static let deleteTargets = 256
    /// Size of a photo that a Post may reference: 1 GiB.
    public static let photoBytes: UInt64 = 1 << 30
    /// Width or height of a photo, in pixels.
    public static let photoDimension: UInt32 = 1 << 24
    /// Latest created-at a record may carry: 9999-12-31T23:59:59.999Z, in milliseconds since the Unix epoch.
    public static let latestTimestamp: Int64 = 253_402_300_799_999
    /// Highest sequence number: 2^53 - 1, so that it fits a signed 64-bit integer (SQLite) and a JSON number.
    public static let maxSequence: UInt64 = (1 << 53) - 1
    /// The largest encoded record, header and content. Every valid record fits with room to spare.
    public static let recordBytes = 16_384
    /// The kind's own references of a record of a kind this node does not know (PROTOCOL.md §2.8).
    public static let opaqueDataBytes = 4_096
    /// The longest content of a kind this node does not know, salt included.
    public static let opaqueContentBytes = 8_192
    /// The largest thumbnail a photo may commit to (and THUMB_DATA may carry): 64 KiB.
    public static let thumbnailBytes: UInt32 = 65_536

    /// The longest content of a kind, salt included (PROTOCOL.md §2.5): 0 for a delete, which has none.
    public static func contentBytes(_ kind: RecordKind) -> Int {
        let salt = 16
        // sha256, bytes, media type, width, height, flags, taken-at, the thumbnail's sha256 and size.
        let photo = 32 + 8 + 1 + 4 + 4 + 1 + 8 + 32 + 4
        switch kind {
        case .profile: return salt + 1 + nameBytes
        case .post: return salt + 2 + captionBytes + photo + 1 + 8
        case .comment: return salt + 2 + commentBytes
        case .edit: return salt + 1 + 2 + captionBytes + photo + 8
        case .group: return salt + 1 + nameBytes
        case .delete, .member: return 0
        case .unknown: return opaqueContentBytes
        }
    }
}
