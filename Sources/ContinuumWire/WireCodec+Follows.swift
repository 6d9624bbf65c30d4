import ContinuumCore

/// One post's follow state in a FOLLOWS (PROTOCOL.md §7.4.25): whether the sender's account follows it, and when
/// that was last changed (the later change wins, §7.8.21).
public struct FollowEntry: Hashable, Sendable {
    public var post: PostID
    public var following: Bool
    public var changedAt: Timestamp

    public init(post: PostID, following: Bool, changedAt: Timestamp) {
        self.post = post
        self.following = following
        self.changedAt = changedAt
    }
}

extension WireLimits {
    /// The most entries a FOLLOWS carries.
    public static let maxFollowEntries = 1000
    /// The latest changed-at a FOLLOWS carries: 2^53 − 1 milliseconds, as every time of the protocol (§3.2).
    public static let maxFollowTime: Int64 = (1 << 53) - 1
}

// FOLLOWS (PROTOCOL.md §7.4.25): `u16` count (0 … 1000), then per entry the post, `u8` state (1 followed, 0 not) and
// `u64` changed-at (milliseconds since 1970, 0 … 2^53 − 1).
extension WireCodec {
    static func writeFollows(_ entries: [FollowEntry], to writer: inout WireWriter) {
        writer.u16(UInt16(entries.count))
        for entry in entries {
            writer.raw(entry.post.bytes)
            writer.u8(entry.following ? 1 : 0)
            writer.u64(UInt64(entry.changedAt.milliseconds))
        }
    }

    static func readFollows(_ reader: inout WireReader) throws(WireError) -> [FollowEntry] {
        let count = Int(try reader.u16("entry count"))
        guard count <= WireLimits.maxFollowEntries else {
            throw reader.malformed("\(count) entries; the limit is \(WireLimits.maxFollowEntries)")
        }
        var entries: [FollowEntry] = []
        entries.reserveCapacity(count)
        for _ in 0..<count {
            let post: PostID = try reader.id("post")
            let state = try reader.u8("state")
            guard state <= 1 else { throw reader.malformed("state is \(state); it must be 0 or 1") }
            let changed = try reader.u64("changed-at")
            guard changed <= UInt64(WireLimits.maxFollowTime) else {
                throw reader.malformed("changed-at \(changed) is over 2^53 - 1")
            }
            let changedAt = Timestamp(milliseconds: Int64(changed))
            entries.append(FollowEntry(post: post, following: state == 1, changedAt: changedAt))
        }
        return entries
    }

    static func checkFollows(_ entries: [FollowEntry], _ reader: WireReader) throws(WireError) {
        guard entries.count <= WireLimits.maxFollowEntries,
            entries.allSatisfy({ (0...WireLimits.maxFollowTime).contains($0.changedAt.milliseconds) })
        else {
            throw reader.malformed("a FOLLOWS has at most \(WireLimits.maxFollowEntries) entries, dated 0 ... 2^53 - 1")
        }
    }
}
