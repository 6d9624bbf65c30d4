/// The versions and size limits of sync protocol v3 (Docs/PROTOCOL.md §7.6).
///
/// A receiver refuses a frame that breaks one of them: it sends ERROR with the code and closes the connection.
public enum WireLimits {
    /// The version byte of every frame.
    public static let frameVersion: UInt8 = 1
    /// The protocol version a node announces in HELLO: 3 stores and forwards records of kinds 8 … 255, which a node
    /// of version 2 ends its session on (PROTOCOL.md §7, *Growth*).
    public static let protocolVersion: UInt16 = 3
    /// The largest frame body (version, type and payload; the 4-byte length prefix is not counted): 4 MiB.
    public static let maxFrameBytes = 4 * 1024 * 1024
    /// Records in one RECORDS frame.
    public static let maxRecordsPerBatch = 1000
    /// Sum of the record lengths in one RECORDS frame: 1 MiB.
    public static let maxBatchBytes = 1024 * 1024
    /// The largest chunk of photo bytes in one PHOTO_DATA frame: 256 KiB.
    public static let photoChunkBytes = 256 * 1024
    /// The largest thumbnail in one THUMB_DATA frame: 64 KiB.
    public static let maxThumbnailBytes = 64 * 1024
    /// Entries of a vector clock in CLOCK or ACK.
    public static let maxClockEntries = 100_000
    /// Ranges in one REQUEST.
    public static let maxRanges = 10_000
    /// Entries in one INTEREST frame.
    public static let maxInterestEntries = 4096
    /// Claims in one MEMBERSHIP.
    public static let maxClaims = 32
    /// Bytes of one claim's proof (a record header; the largest is a member record's, 291 bytes).
    public static let maxProofBytes = 1024
    /// The most account records a LINKING carries (PROTOCOL.md §7.4).
    public static let maxLinkRecords = 64
    /// Network tags in one MEMBERSHIP.
    public static let maxNetworkTags = 8
    /// Posts one peer may ask to have pushed, in all.
    public static let maxInterestPerPeer = 100_000
    /// The farthest a follower may be from the node that pushes to it: interest relayed further is dropped, so
    /// that interest circulating in a cycle of peers dies out after a withdrawal.
    public static let maxInterestHops: UInt8 = 8
    /// The message of an ERROR, in bytes of UTF-8.
    public static let maxErrorMessageBytes = 1024
}
