import Foundation

// What the store records and sync reads back: the shared model of the layers above Core (Store writes these,
// Sync and the front ends read them). Plain values, no I/O.

/// How a record reached this node; notifications keep it, so that a person (and a test) can tell a push from a
/// catch-up.
public enum Delivery: String, Sendable, Hashable {
    /// Made on this node.
    case local
    /// Forwarded by a peer as it was made (live gossip).
    case live
    /// Pushed by a peer because this node follows the post.
    case push
    /// Sent in an anti-entropy round, after being apart from the peer.
    case catchUp = "catch-up"
}

/// What a notification is about.
public enum NotificationKind: String, Sendable, Hashable, CaseIterable {
    /// A new comment on a followed post.
    case comment
    /// A followed post's caption was edited by its author.
    case edited
    /// A followed post was deleted by its author.
    case deleted
    /// A new post (only with `--notify-new-posts`).
    case post
    /// Someone reacted to one of this node's posts or comments; the text is the reaction's emoji.
    case reaction
}

/// A notification as listed by `notifications`.
public struct NotificationSummary: Sendable, Hashable {
    /// A small number, increasing, to mark it read by.
    public let id: Int64
    public let kind: NotificationKind
    public let post: PostID
    /// The record that caused it: the comment, the edit, the deletion or the post.
    public let record: RecordID
    public let author: AuthorID?
    public let authorName: String?
    /// The comment's text, or the new caption; nil for a deletion.
    public let text: String?
    /// When this node made the notification.
    public let createdAt: Timestamp
    public let read: Bool
    /// True when the record arrived by catch-up after this node and the author's were apart.
    public let whileOffline: Bool
    public let delivery: Delivery
    /// The post it is about, in words a person recognises even once it is deleted and its content erased: when it
    /// was posted, by whom, with how many comments. Nil while the post is not here.
    public var about: PostHeadline?
    /// For a reaction to a comment: that comment (nil for a reaction to the post, and for the other kinds).
    public var reactedComment: CommentID?

    public init(
        id: Int64,
        kind: NotificationKind,
        post: PostID,
        record: RecordID,
        author: AuthorID?,
        authorName: String?,
        text: String?,
        createdAt: Timestamp,
        read: Bool,
        whileOffline: Bool,
        delivery: Delivery
    ) {
        self.id = id
        self.kind = kind
        self.post = post
        self.record = record
        self.author = author
        self.authorName = authorName
        self.text = text
        self.createdAt = createdAt
        self.read = read
        self.whileOffline = whileOffline
        self.delivery = delivery
    }
}

/// What is known of a post without its content: enough to name it once it is erased.
public struct PostHeadline: Sendable, Hashable {
    public let author: AuthorID
    public let authorName: String?
    public let postedAt: Timestamp
    public let commentCount: Int
    public let deleted: Bool
    /// The post's caption after edits; nil once the post is deleted (its text is erased).
    public let caption: String?

    public init(
        author: AuthorID,
        authorName: String?,
        postedAt: Timestamp,
        commentCount: Int,
        deleted: Bool,
        caption: String? = nil
    ) {
        self.author = author
        self.authorName = authorName
        self.postedAt = postedAt
        self.commentCount = commentCount
        self.deleted = deleted
        self.caption = deleted ? nil : caption
    }

    /// How a line names the post: its caption in quotes while there is one (cut at 60 characters), else ``words``.
    public var title: String {
        // On one line: a caption may hold line breaks.
        let line = caption?.split(whereSeparator: \.isNewline).joined(separator: " ") ?? ""
        guard !line.isEmpty else { return words }
        return "\"\(line.count > 60 ? line.prefix(59) + "…" : Substring(line))\""
    }

    /// "Alice's post of 2026-11-20 14:02 UTC, 3 comments".
    public var words: String {
        let who = authorName ?? author.short
        let time = postedAt.rfc3339
        let minute = "\(time.prefix(10)) \(time.dropFirst(11).prefix(5)) UTC"
        return "\(who)'s post of \(minute), \(commentCount) comment\(commentCount == 1 ? "" : "s")"
    }
}

/// A stored record as sync sees it: its place in the log and its bytes.
public struct StoredRecord: Sendable, Hashable {
    /// Local arrival order: increases with every stored record.
    public let rowid: Int64
    public let id: RecordID
    public let author: AuthorID
    public let sequence: UInt64
    public let bytes: [UInt8]

    public init(rowid: Int64, id: RecordID, author: AuthorID, sequence: UInt64, bytes: [UInt8]) {
        self.rowid = rowid
        self.id = id
        self.author = author
        self.sequence = sequence
        self.bytes = bytes
    }
}

/// A post whose photo is not on this node yet.
public struct MissingPhoto: Sendable, Hashable {
    public let hash: AssetHash
    public let bytes: UInt64
    public let post: PostID
    /// The groups of the live posts that show it: only peers that share one of them are asked for it (PROTOCOL.md
    /// §7.8.11), so that no other peer learns the photo's hash.
    public let groups: Set<GroupID>
    /// Whether a live post that shows it signs its author's thumbnail (PROTOCOL.md §2.5): once the photo is here,
    /// that thumbnail is asked for rather than one made.
    public let signsThumbnail: Bool
    /// The thumbnail's SHA-256 when the live posts that show the photo sign that one thumbnail only (a signed
    /// thumbnail, PROTOCOL.md §7.4.19); nil when they sign none, or different ones.
    public let signedThumbnail: AssetHash?

    public init(
        hash: AssetHash,
        bytes: UInt64,
        post: PostID,
        groups: Set<GroupID> = [],
        signsThumbnail: Bool = false,
        signedThumbnail: AssetHash? = nil
    ) {
        self.hash = hash
        self.bytes = bytes
        self.post = post
        self.groups = groups
        self.signsThumbnail = signsThumbnail || signedThumbnail != nil
        self.signedThumbnail = signedThumbnail
    }
}

/// A peer answered that it cannot supply a photo or its thumbnail: when to ask it again.
public struct PeerLack: Sendable, Hashable {
    public enum Kind: Int, Sendable {
        case photo = 0
        case thumbnail = 1
    }

    public let peer: AuthorID
    public let hash: AssetHash
    public let kind: Kind
    public let retryAt: Timestamp
    /// How many times it said so; 0 means "forget it".
    public let attempts: Int

    public init(peer: AuthorID, hash: AssetHash, kind: Kind, retryAt: Timestamp, attempts: Int) {
        self.peer = peer
        self.hash = hash
        self.kind = kind
        self.retryAt = retryAt
        self.attempts = attempts
    }
}

/// A fork: two different records signed for one author and sequence number, or a broken `previous` link.
public struct ForkSummary: Sendable, Hashable {
    public let author: AuthorID
    public let sequence: UInt64
    /// The record we refused.
    public let refused: RecordID
    /// The record we hold.
    public let kept: RecordID
    public let reason: String
    public let detectedAt: Timestamp

    public init(
        author: AuthorID,
        sequence: UInt64,
        refused: RecordID,
        kept: RecordID,
        reason: String,
        detectedAt: Timestamp
    ) {
        self.author = author
        self.sequence = sequence
        self.refused = refused
        self.kept = kept
        self.reason = reason
        self.detectedAt = detectedAt
    }
}
