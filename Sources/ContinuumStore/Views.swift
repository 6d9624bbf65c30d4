import ContinuumCore
import Foundation
import GRDB

/// The photo of a post, as shown to a person.
public struct PhotoSummary: Sendable, Hashable {
    public let sha256: AssetHash
    public let bytes: UInt64
    public let mediaType: MediaType
    public let width: UInt32
    public let height: UInt32
    /// When the photo was taken, if the post says.
    public let takenAt: Timestamp?
    /// True when the complete photo is on this node's disk.
    public let available: Bool
}

/// A post as the feed, search and show present it: caption after edits, comment count after deletions.
public struct PostSummary: Sendable, Hashable {
    public let id: PostID
    public let author: AuthorID
    /// The author's account: nil while this node holds no account of the log's device.
    public let account: AccountID?
    /// The author's display name, from their latest Profile record, if any.
    public let authorName: String?
    public let caption: String
    /// True when the caption comes from an Edit record.
    public let edited: Bool
    /// When it was posted: what the feed orders, pages and filters by.
    public let createdAt: Timestamp
    public let commentCount: Int
    public let location: Coordinate?
    public let photo: PhotoSummary
    /// How people reacted to the post.
    public internal(set) var reactions = ReactionCounts.none

    /// Columns: post.*, profile.name AS author_name, asset.sha256 IS NOT NULL AS available.
    init(row: Row) {
        id = PostID(unchecked: row["id"])
        author = AuthorID(unchecked: row["author"])
        account = (row["account"] as Data?).map(AccountID.init(unchecked:))
        authorName = row["author_name"]
        caption = row["caption"]
        edited = row["edited"]
        createdAt = Timestamp(milliseconds: row["created_at"])
        commentCount = row["comment_count"]
        if let lat: Int32 = row["lat_e7"], let lon: Int32 = row["lon_e7"] {
            location = Coordinate(latitudeE7: lat, longitudeE7: lon)
        } else {
            location = nil
        }
        photo = PhotoSummary(
            sha256: AssetHash(unchecked: row["photo_sha256"]),
            bytes: UInt64(row["photo_bytes"] as Int64),
            mediaType: MediaType(rawValue: row["media_type"]) ?? .jpeg,
            width: UInt32(row["width"] as Int64),
            height: UInt32(row["height"] as Int64),
            takenAt: (row["taken_at"] as Int64?).map(Timestamp.init(milliseconds:)),
            available: row["available"]
        )
    }

    static let selectSQL = """
        SELECT post.*, profile.name AS author_name, asset.sha256 IS NOT NULL AS available,
            \(accountSQL("post.author")) AS account
        FROM post
        LEFT JOIN profile ON profile.author = post.author
        LEFT JOIN asset ON asset.sha256 = post.photo_sha256
        """
}

/// A comment as shown under its post.
public struct CommentSummary: Sendable, Hashable {
    public let id: CommentID
    public let post: PostID
    public let author: AuthorID
    /// The author's account: nil while this node holds no account of the log's device.
    public let account: AccountID?
    public let authorName: String?
    public let text: String
    public let createdAt: Timestamp
    /// How people reacted to the comment.
    public internal(set) var reactions = ReactionCounts.none

    init(row: Row) {
        id = CommentID(unchecked: row["id"])
        post = PostID(unchecked: row["post"])
        author = AuthorID(unchecked: row["author"])
        account = (row["account"] as Data?).map(AccountID.init(unchecked:))
        authorName = row["author_name"]
        text = row["text"]
        createdAt = Timestamp(milliseconds: row["created_at"])
    }
}

/// The SQL of the account of `log`, when this node knows one: its owner (PROTOCOL.md §4.4), derived with the members
/// (the account a declaration names, else the account of the log's device, removed or not).
func accountSQL(_ log: String) -> String {
    "(SELECT owner FROM log_owner WHERE log_owner.log = \(log))"
}

/// A post with its live comments, oldest first.
public struct PostDetail: Sendable, Hashable {
    public let post: PostSummary
    public let comments: [CommentSummary]
    /// The group the post was shared in (its author's log's group); nil for a post kept on this node alone. Read for
    /// a post's own view only: the feed, which orders every post it filters, does not pay a lookup per post for it.
    public var group: GroupID? = nil
}

/// One page of the feed. `nextCursor` is nil on the last page.
public struct FeedPage: Sendable, Hashable {
    public let posts: [PostSummary]
    public let nextCursor: String?

    /// A page with no posts and nothing after it.
    public static let empty = FeedPage(posts: [], nextCursor: nil)
}

/// A position in the feed: just after the post with this created-at and id. Stable while new posts arrive.
public struct FeedCursor: Sendable, Hashable {
    public let createdAt: Timestamp
    public let id: PostID

    public init(createdAt: Timestamp, id: PostID) {
        self.createdAt = createdAt
        self.id = id
    }

    /// The opaque token: base64url of `v1:<milliseconds>:<post id hex>`.
    public var token: String {
        Data("v1:\(createdAt.milliseconds):\(id.hex)".utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Parses a token, or throws an error a person can act on.
    public init(token: String) throws(StoreError) {
        var base64 = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        let malformed = StoreError(
            .invalidInput,
            "malformed cursor '\(token)': pass the nextCursor value from a previous page unchanged"
        )
        guard token.utf8.count <= 128, let data = Data(base64Encoded: base64),
            let text = String(data: data, encoding: .utf8)
        else { throw malformed }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "v1", let millis = Int64(parts[1]), let id = PostID(hex: parts[2]) else {
            throw malformed
        }
        self.init(createdAt: Timestamp(milliseconds: millis), id: id)
    }
}

/// What the feed shows. Every filter is optional; they combine with AND.
public struct FeedQuery: Sendable, Hashable {
    public var author: AuthorID?
    /// Only this node's own posts: those of this node id and of its log keys (every group's).
    public var mine: NodeID?
    public var since: Timestamp?
    public var near: Coordinate?
    public var radiusKm: Double?
    public var limit: Int
    public var cursor: FeedCursor?
    /// Only the posts of this group's logs (a guest's view: Docs/API.md, "Guests").
    public var group: GroupID?

    public init(
        author: AuthorID? = nil,
        since: Timestamp? = nil,
        near: Coordinate? = nil,
        radiusKm: Double? = nil,
        limit: Int = 20,
        cursor: FeedCursor? = nil
    ) {
        self.author = author
        self.since = since
        self.near = near
        self.radiusKm = radiusKm
        self.limit = limit
        self.cursor = cursor
    }
}

/// Counts of what the store holds.
public struct StoreCounts: Sendable, Hashable {
    public let records: Int
    public let authors: Int
    public let posts: Int
    public let comments: Int
    public let photos: Int
    public let photoBytes: Int64
    public let forks: Int
}

/// What happened to each record of an ingested batch.
public struct IngestReport: Sendable, Hashable {
    /// Newly stored, in the order given.
    public var stored: [RecordID] = []
    /// Already held: nothing changed.
    public var duplicates = 0
    /// Refused as forks and kept as evidence.
    public var forks: [ForkSummary] = []
    /// Stored, but ignored by every view because it breaks a rule (such as an edit of someone else's post).
    public var ignored: [Rejection] = []
    /// Photos erased because no live post shows them any more (a delete, or an edit that replaced the photo).
    public var erasedPhotos: [AssetHash] = []
    /// Photos whose live posts now sign different thumbnails: the thumbnails kept of them were removed, so that
    /// none is shown as signed (PROTOCOL.md §7.4.19); one is made from the photo instead.
    public var contestedThumbnails: [AssetHash] = []
    /// Whether text was erased (a caption, comment or edit).
    public var erasedText = false
    /// Records that came again with the content their author had erased: the content was dropped.
    public var droppedErasedContent = 0

    /// A record and the rule it breaks.
    public struct Rejection: Sendable, Hashable {
        public let id: RecordID
        public let error: StoreError
    }

    public init() {}
}
