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
    /// The largest encoded record, signature included. Every valid record fits with room to spare.
    public static let recordBytes = 16_384
}
