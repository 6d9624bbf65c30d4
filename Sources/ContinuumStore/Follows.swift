import ContinuumCore
import Foundation
import GRDB

/// Which records make notifications, and for whom.
public struct NotificationPolicy: Sendable, Hashable {
    /// This node's identity: its own records never notify it.
    public var me: AuthorID
    /// Whether a new post from anyone else makes a notification (it always makes a `watch` event).
    public var newPosts: Bool

    public init(me: AuthorID, newPosts: Bool = false) {
        self.me = me
        self.newPosts = newPosts
    }
}

/// A notification row, as `notifications` reads it.
extension NotificationSummary {
    init(row: Row) {
        self.init(
            id: row["id"],
            kind: NotificationKind(rawValue: row["kind"]) ?? .comment,
            post: PostID(unchecked: row["post"]),
            record: RecordID(unchecked: row["record"]),
            author: (row["author"] as Data?).map(AuthorID.init(unchecked:)),
            authorName: row["author_name"],
            text: row["text"],
            createdAt: Timestamp(milliseconds: row["created_at"]),
            read: (row["read_at"] as Int64?) != nil,
            whileOffline: row["while_offline"],
            delivery: Delivery(rawValue: row["delivery"]) ?? .live
        )
        reactedComment = (row["reacted_comment"] as Data?).map(CommentID.init(unchecked:))
        if let author = row["post_author"] as Data? {
            about = PostHeadline(
                author: AuthorID(unchecked: author),
                authorName: row["post_author_name"],
                postedAt: Timestamp(milliseconds: row["post_created_at"]),
                commentCount: row["post_comment_count"],
                deleted: row["post_deleted"],
                caption: row["post_caption"]
            )
        }
    }

    static let selectSQL = """
        SELECT notification.*, profile.name AS author_name, post.author AS post_author,
               post_profile.name AS post_author_name, post.created_at AS post_created_at,
               post.comment_count AS post_comment_count, post.deleted AS post_deleted,
               post.caption AS post_caption,
               (SELECT reaction.target FROM reaction WHERE reaction.id = notification.record
                    AND reaction.target != reaction.post) AS reacted_comment
        FROM notification
        LEFT JOIN profile ON profile.author = notification.author
        LEFT JOIN post ON post.id = notification.post
        LEFT JOIN profile AS post_profile ON post_profile.author = post.author
        """
}

/// A followed post, as listed by `following`.
public struct FollowedPost: Sendable, Hashable {
    public let post: PostID
    public let followedAt: Timestamp
    /// Unread notifications about the post.
    public let unread: Int
    /// The post as it is now; nil once its author has deleted it.
    public let summary: PostSummary?
}

extension ContinuumStore {
    // MARK: Following

    /// Follows a live post; false when it was already followed (following twice is following once).
    @discardableResult
    public func follow(_ post: PostID) async throws -> Bool {
        let now = Timestamp.now().milliseconds
        return try await write { db in
            guard try Bool.fetchOne(db, sql: "SELECT deleted FROM post WHERE id = ?", arguments: [post.bytes]) == false
            else {
                throw StoreError(.notFound, "post \(post.short) is not on this node or was deleted; nothing to follow")
            }
            try db.execute(
                sql: "INSERT OR IGNORE INTO follow (post, followed_at) VALUES (?, ?)",
                arguments: [post.bytes, now]
            )
            guard db.changesCount == 1 else { return false }
            try Self.noteFollowState(post, following: true, now: now, db)
            return true
        }
    }

    /// Follows a post this node's person just wrote, in the transaction that stored it (`autoFollow`).
    static func followNew(_ post: PostID, now: Int64, _ db: Database) throws {
        try db.execute(
            sql: "INSERT OR IGNORE INTO follow (post, followed_at) VALUES (?, ?)",
            arguments: [post.bytes, now]
        )
        try noteFollowState(post, following: true, now: now, db)
    }

    /// Stops following a post; false when it was not followed.
    @discardableResult
    public func unfollow(_ post: PostID) async throws -> Bool {
        let now = Timestamp.now().milliseconds
        return try await write { db in
            try db.execute(sql: "DELETE FROM follow WHERE post = ?", arguments: [post.bytes])
            guard db.changesCount == 1 else { return false }
            try Self.noteFollowState(post, following: false, now: now, db)
            return true
        }
    }

    /// Follows the post if it is not followed, and the other way round; returns whether it is followed now.
    public func toggleFollow(_ post: PostID) async throws -> Bool {
        if try await isFollowing(post) {
            try await unfollow(post)
            return false
        }
        try await follow(post)
        return true
    }

    public func isFollowing(_ post: PostID) async throws -> Bool {
        try await read { db in
            try Bool.fetchOne(db, sql: "SELECT 1 FROM follow WHERE post = ?", arguments: [post.bytes]) != nil
        }
    }

    /// The followed post whose id starts with `text` (deleted posts included, so that they can be unfollowed).
    public func resolveFollowed(_ text: String) async throws -> PostID {
        guard let prefix = IDPrefix(text) else {
            throw StoreError(.invalidInput, "'\(text)' is not an id: ids are 1 to 64 hex digits (0-9, a-f)")
        }
        let matches = try await read { db in
            try Data.fetchAll(
                db,
                sql: "SELECT post FROM follow WHERE post BETWEEN ? AND ? LIMIT 11",
                arguments: [prefix.lowerBound, prefix.upperBound]
            )
        }
        switch matches.count {
        case 1: return PostID(unchecked: matches[0])
        case 0: throw StoreError(.notFound, "no followed post matches '\(prefix)'")
        default:
            throw StoreError(.ambiguous, "'\(prefix)' matches several followed posts; type more digits")
        }
    }

    /// Every followed post's id.
    public func followedPosts() async throws -> Set<PostID> {
        try await read { db in
            Set(try Data.fetchAll(db, sql: "SELECT post FROM follow").map(PostID.init(unchecked:)))
        }
    }

    /// Followed posts, most recently followed first, with their unread notification counts.
    public func following() async throws -> [FollowedPost] {
        try await read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT follow.post AS followed, follow.followed_at,
                           (SELECT count(*) FROM notification
                            WHERE notification.post = follow.post AND read_at IS NULL) AS unread
                    FROM follow ORDER BY follow.followed_at DESC, follow.post
                    """
            )
            return try rows.map { row in
                let post: Data = row["followed"]
                let summary = try Row.fetchOne(
                    db,
                    sql: "\(PostSummary.selectSQL) WHERE post.id = ? AND post.deleted = 0",
                    arguments: [post]
                ).map(PostSummary.init(row:))
                return FollowedPost(
                    post: PostID(unchecked: post),
                    followedAt: Timestamp(milliseconds: row["followed_at"]),
                    unread: row["unread"],
                    summary: summary
                )
            }
        }
    }

    // MARK: Notifications

    /// Notifications, newest first.
    public func notifications(unreadOnly: Bool = false, limit: Int = 100) async throws -> [NotificationSummary] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    \(NotificationSummary.selectSQL)
                    \(unreadOnly ? "WHERE notification.read_at IS NULL" : "")
                    ORDER BY notification.id DESC LIMIT ?
                    """,
                arguments: [limit]
            ).map(NotificationSummary.init(row:))
        }
    }

    /// Notifications made after the one numbered `id`, oldest first (for the event stream).
    public func notifications(after id: Int64, limit: Int = 1000) async throws -> [NotificationSummary] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: "\(NotificationSummary.selectSQL) WHERE notification.id > ? ORDER BY notification.id LIMIT ?",
                arguments: [id, limit]
            ).map(NotificationSummary.init(row:))
        }
    }

    /// The number of the newest notification (0 when there is none).
    public func lastNotificationID() async throws -> Int64 {
        try await read { db in try Int64.fetchOne(db, sql: "SELECT max(id) FROM notification") ?? 0 }
    }

    /// Unread notifications.
    public func unreadNotificationCount() async throws -> Int {
        try await read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM notification WHERE read_at IS NULL") ?? 0
        }
    }

    /// Marks these notifications read; all of them or none: an unknown number is an error and changes nothing.
    /// Returns how many were unread before.
    @discardableResult
    public func markNotificationsRead(_ ids: [Int64]) async throws -> Int {
        let now = Timestamp.now().milliseconds
        return try await write { db in
            let unique = Array(Set(ids)).sorted()
            let known = try Int64.fetchSet(
                db,
                sql: "SELECT id FROM notification WHERE id IN (\(unique.map { _ in "?" }.joined(separator: ",")))",
                arguments: StatementArguments(unique)
            )
            let unknown = unique.filter { !known.contains($0) }
            guard unknown.isEmpty else {
                throw StoreError(
                    .notFound,
                    "no notification \(unknown.map(String.init).joined(separator: ", ")); "
                        + "see the numbers with 'notifications'; nothing was marked"
                )
            }
            try db.execute(
                sql: """
                    UPDATE notification SET read_at = ?
                    WHERE read_at IS NULL AND id IN (\(unique.map { _ in "?" }.joined(separator: ",")))
                    """,
                arguments: StatementArguments([now] + unique)
            )
            return db.changesCount
        }
    }

    /// Marks every notification read; returns how many were unread.
    @discardableResult
    public func markAllNotificationsRead() async throws -> Int {
        let now = Timestamp.now().milliseconds
        return try await write { db in
            try db.execute(sql: "UPDATE notification SET read_at = ? WHERE read_at IS NULL", arguments: [now])
            return db.changesCount
        }
    }
}

extension Ingest {
    /// Makes the notifications a newly stored, rule-abiding record calls for (at most one per kind and record, so
    /// that the same record arriving again by another path notifies nobody twice).
    func notify(_ content: RecordContent, id: RecordID) throws {
        guard let policy = notifications, content.author != policy.me else { return }
        switch content.body {
        case .comment(let post, let text):
            if try isFollowed(post.bytes) { try insertNotification(.comment, post: post.bytes, id, content, text) }
        case .edit(let post, let change):
            if try isFollowed(post.bytes), try postAuthor(post.bytes) == content.author.bytes {
                try insertNotification(.edited, post: post.bytes, id, content, change.caption)
            }
        case .delete(let targets):
            for target in targets where try isFollowed(target.bytes) {
                if try postAuthor(target.bytes) == content.author.bytes {
                    try insertNotification(.deleted, post: target.bytes, id, content, nil)
                }
            }
        case .post(let caption, _, _):
            if policy.newPosts { try insertNotification(.post, post: id.bytes, id, content, caption) }
        case .opaque:
            // A reaction to this node's post or comment (taking one back tells nobody).
            guard let reaction = Reaction(content.body), reaction.emoji != .none,
                let author = try Data.fetchOne(
                    db.cachedStatement(
                        sql: "SELECT author FROM post WHERE id = ?1 UNION ALL SELECT author FROM comment WHERE id = ?1"
                    ),
                    arguments: [reaction.target.bytes]
                ),
                try author == policy.me.bytes || Self.exists(db, "SELECT 1 FROM log_key WHERE public = ?", [author])
            else { return }
            try insertNotification(.reaction, post: reaction.post.bytes, id, content, reaction.emoji.symbol)
        case .profile, .group, .member:
            break
        }
    }

    private func isFollowed(_ post: Data) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM follow WHERE post = ?"), arguments: [post]) != nil
    }

    private func postAuthor(_ post: Data) throws -> Data? {
        try Data.fetchOne(db.cachedStatement(sql: "SELECT author FROM post WHERE id = ?"), arguments: [post])
    }

    private func insertNotification(
        _ kind: NotificationKind,
        post: Data,
        _ id: RecordID,
        _ content: RecordContent,
        _ text: String?
    ) throws {
        // Not of what this node itself wrote, under any of its log keys (checked last: most records notify nobody).
        if try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT 1 FROM log_key WHERE public = ?"),
            arguments: [content.author.bytes]
        ) == true {
            return
        }
        try db.cachedStatement(
            sql: """
                INSERT OR IGNORE INTO notification
                    (kind, post, record, created_at, while_offline, delivery, author, text)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            kind.rawValue, post, id.bytes, now, delivery == .catchUp, delivery.rawValue, content.author.bytes, text,
        ])
    }
}

/// A post's follow state, as the devices of one account share it (PROTOCOL.md §7.8.21).
public struct FollowState: Sendable, Hashable {
    public let post: PostID
    public let following: Bool
    /// When it last changed; the later change wins.
    public let changedAt: Timestamp

    public init(post: PostID, following: Bool, changedAt: Timestamp) {
        self.post = post
        self.following = following
        self.changedAt = changedAt
    }
}

extension ContinuumStore {
    // MARK: Follows between devices

    /// Notes that this node followed or stopped following `post` now: dated after any state it holds of the post, so
    /// that a person's own change wins over another device's whose clock is ahead.
    static func noteFollowState(_ post: PostID, following: Bool, now: Int64, _ db: Database) throws {
        let held = try Int64.fetchOne(
            db,
            sql: "SELECT changed_at FROM follow_state WHERE post = ?",
            arguments: [post.bytes]
        )
        try db.execute(
            sql: """
                INSERT INTO follow_state (post, following, changed_at) VALUES (?1, ?2, ?3)
                ON CONFLICT (post) DO UPDATE SET following = ?2, changed_at = ?3
                """,
            arguments: [post.bytes, following, max(now, (held ?? 0) + 1)]
        )
    }

    /// Every post's follow state this node knows, the latest changes first, at most `limit`.
    public func followStates(limit: Int) async throws -> [FollowState] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT post, following, changed_at FROM follow_state ORDER BY changed_at DESC, post LIMIT ?",
                arguments: [limit]
            ).map { row in
                FollowState(
                    post: PostID(unchecked: row["post"]),
                    following: row["following"],
                    changedAt: Timestamp(milliseconds: row["changed_at"])
                )
            }
        }
    }

    /// Takes another device's follow states: per post, the later change wins (at the same time, following). A post
    /// followed so is followed here when it is here and not deleted. Returns how many posts' following changed here.
    public func mergeFollows(_ states: [FollowState]) async throws -> Int {
        try await write { db in
            var changed = 0
            for state in states {
                let held = try Row.fetchOne(
                    db,
                    sql: "SELECT following, changed_at FROM follow_state WHERE post = ?",
                    arguments: [state.post.bytes]
                )
                if let held {
                    let at: Int64 = held["changed_at"]
                    let following: Bool = held["following"]
                    let time = state.changedAt.milliseconds
                    guard time > at || (time == at && state.following && !following) else { continue }
                }
                try db.execute(
                    sql: """
                        INSERT INTO follow_state (post, following, changed_at) VALUES (?1, ?2, ?3)
                        ON CONFLICT (post) DO UPDATE SET following = ?2, changed_at = ?3
                        """,
                    arguments: [state.post.bytes, state.following, state.changedAt.milliseconds]
                )
                if state.following {
                    try db.execute(
                        sql: """
                            INSERT OR IGNORE INTO follow (post, followed_at)
                            SELECT id, ? FROM post WHERE id = ? AND deleted = 0
                            """,
                        arguments: [state.changedAt.milliseconds, state.post.bytes]
                    )
                } else {
                    try db.execute(sql: "DELETE FROM follow WHERE post = ?", arguments: [state.post.bytes])
                }
                changed += db.changesCount
            }
            return changed
        }
    }
}
