import ContinuumCore
import Foundation
import GRDB

/// How people reacted to a post or a comment: the count of each reaction, and this node's own.
public struct ReactionCounts: Sendable, Hashable {
    /// The count of each reaction given, in the order of ``ReactionEmoji/shown``; reactions nobody gave are left out.
    public var counts: [(emoji: ReactionEmoji, count: Int)]
    /// This node's current reaction, if any.
    public var mine: ReactionEmoji?

    public init(counts: [(emoji: ReactionEmoji, count: Int)] = [], mine: ReactionEmoji? = nil) {
        self.counts = counts
        self.mine = mine
    }

    /// No reaction at all.
    public static let none = ReactionCounts()

    /// How many reactions there are in all.
    public var total: Int { counts.reduce(0) { $0 + $1.count } }

    public static func == (lhs: ReactionCounts, rhs: ReactionCounts) -> Bool {
        lhs.mine == rhs.mine && lhs.counts.elementsEqual(rhs.counts) { $0.emoji == $1.emoji && $0.count == $1.count }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(mine)
        for entry in counts {
            hasher.combine(entry.emoji)
            hasher.combine(entry.count)
        }
    }
}

extension Ingest {
    /// Keeps a reaction record held whole in the `reaction` view (PROTOCOL.md §2.9), and tells this node when someone
    /// reacted to one of its posts or comments. Which reaction is current, and whether its post is live and in the
    /// reactor's group, is decided when the counts are read, so that the order of arrival does not matter.
    func applyReaction(_ reaction: Reaction, _ header: RecordHeader, id: RecordID) throws {
        try db.cachedStatement(
            sql: """
                INSERT OR IGNORE INTO reaction (id, author, seq, post, target, emoji, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            id.bytes, header.author.bytes, Int64(header.sequence), reaction.post.bytes, reaction.target.bytes,
            Int64(reaction.emoji.rawValue), header.createdAt.milliseconds,
        ])
    }

    /// The rules of a reaction that need other records: its post is a post, and a comment it names is on that post.
    /// Broken, the reaction is kept in its log but counted nowhere.
    static func reactionError(_ references: OpaqueReferences, _ db: Database) throws -> StoreError? {
        guard references.code == Reaction.code, let post = references.context else { return nil }
        if try exists(db, "SELECT 1 FROM comment WHERE id = ?", [post.bytes]) {
            return .record(.malformed("a reaction names the post it goes with; \(post.short) is a comment"))
        }
        guard references.data.count == 32,
            let commentPost = try Data.fetchOne(
                db.cachedStatement(sql: "SELECT post FROM comment WHERE id = ?"),
                arguments: [Data(references.data)]
            )
        else { return nil }
        guard commentPost == post.bytes else {
            return .record(.malformed("a reaction to a comment names the comment's post; this one names another"))
        }
        return nil
    }

    /// A reaction whose content is erased leaves the counts.
    func eraseReaction(author: Data, seq: Int64) throws {
        try db.cachedStatement(sql: "DELETE FROM reaction WHERE author = ? AND seq = ?").execute(arguments: [
            author, seq,
        ])
    }
}

extension ContinuumStore {
    /// The reactions to these posts and comments, by record id (``reactions(where:_:viewer:_:)``).
    static func reactions(to targets: [Data], viewer: AuthorID?, _ db: Database) throws -> [Data: ReactionCounts] {
        guard !targets.isEmpty else { return [:] }
        let marks = targets.map { _ in "?" }.joined(separator: ",")
        return try reactions(where: "reaction.target IN (\(marks))", StatementArguments(targets), viewer: viewer, db)
    }

    /// The reactions to a post and to each of its comments, by record id: one query, however many comments.
    static func reactions(onPost post: Data, viewer: AuthorID?, _ db: Database) throws -> [Data: ReactionCounts] {
        try reactions(where: "reaction.post = ?", [post], viewer: viewer, db)
    }

    /// The reactions that `selection` picks, by record id (PROTOCOL.md §2.9). Each author counts once per record,
    /// with its latest reaction (by created-at, then record id) among those that name a held post and, for a comment,
    /// a comment on that post, so that one naming another post never hides a valid one, whatever came first. It counts
    /// while its post is live, its comment is live, and its author's group is its post's. `viewer`: this node's id,
    /// whose reactions are its own besides those of its log keys (a post in no group is reacted to under the node's
    /// id); or a guest's log, whose reactions alone are its own.
    private static func reactions(
        where selection: String,
        _ arguments: StatementArguments,
        viewer: AuthorID?,
        _ db: Database
    ) throws -> [Data: ReactionCounts] {
        let rows = try Row.fetchAll(
            db,
            sql: """
                WITH latest AS (
                    SELECT reaction.*, row_number() OVER (
                        PARTITION BY reaction.author, reaction.target
                        ORDER BY reaction.created_at DESC, reaction.id DESC
                    ) AS rank
                    FROM reaction JOIN post ON post.id = reaction.post
                    WHERE \(selection) AND (reaction.target = reaction.post OR EXISTS (
                        SELECT 1 FROM comment WHERE comment.id = reaction.target AND comment.post = reaction.post))
                )
                SELECT latest.target, latest.emoji, count(*) AS n,
                    max(CASE WHEN ? IN (SELECT log FROM guest) THEN latest.author IS ?
                        ELSE latest.author IN (SELECT public FROM log_key) OR latest.author IS ? END) AS mine
                FROM latest JOIN post ON post.id = latest.post AND post.deleted = 0
                WHERE latest.rank = 1 AND latest.emoji > 0
                    AND (latest.target = latest.post
                        OR EXISTS (SELECT 1 FROM comment WHERE comment.id = latest.target AND comment.deleted = 0))
                    AND NOT EXISTS (SELECT 1 FROM member a, member b
                        WHERE a.log = latest.author AND b.log = post.author AND a.group_id != b.group_id)
                GROUP BY latest.target, latest.emoji
                """,
            arguments: arguments + StatementArguments([viewer?.bytes, viewer?.bytes, viewer?.bytes])
        )
        var found: [Data: ReactionCounts] = [:]
        for row in rows {
            guard let emoji = ReactionEmoji(rawValue: UInt8(row["emoji"] as Int64)) else { continue }
            let target: Data = row["target"]
            found[target, default: .none].counts.append((emoji, row["n"]))
            if row["mine"] as Bool { found[target, default: .none].mine = emoji }
        }
        for key in found.keys {
            found[key]?.counts.sort { $0.emoji.rawValue < $1.emoji.rawValue }
        }
        return found
    }

    /// When this log's latest reaction to `target` was made, if it made one: a new one must come after it to replace
    /// it (PROTOCOL.md §2.9), whatever this machine's clock says now.
    public func latestReaction(by log: AuthorID, to target: RecordID) async throws -> Timestamp? {
        try await read { db in
            try Int64.fetchOne(
                db,
                sql: "SELECT max(created_at) FROM reaction WHERE author = ? AND target = ?",
                arguments: [log.bytes, target.bytes]
            ).map(Timestamp.init(milliseconds:))
        }
    }

    /// The reactions to one post or comment; `viewer` as for ``feed(_:viewer:)``.
    public func reactions(to target: RecordID, viewer: AuthorID? = nil) async throws -> ReactionCounts {
        try await read { db in try Self.reactions(to: [target.bytes], viewer: viewer, db)[target.bytes] ?? .none }
    }
}

extension ContinuumStore {
    /// The post a live comment is on, when both are here and live.
    public func post(ofComment comment: CommentID) async throws -> PostID? {
        try await read { db in
            try Data.fetchOne(
                db,
                sql: """
                    SELECT comment.post FROM comment JOIN post ON post.id = comment.post AND post.deleted = 0
                    WHERE comment.id = ? AND comment.deleted = 0
                    """,
                arguments: [comment.bytes]
            ).map { PostID(unchecked: $0) }
        }
    }
}
