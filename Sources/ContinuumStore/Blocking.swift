import ContinuumCore
import Foundation
import GRDB

/// An author this node blocked, as `blocked` lists it.
public struct BlockedAuthor: Sendable, Hashable {
    public let author: AuthorID
    /// Its node, when this node knows it from a member record: every log of that node is blocked.
    public let node: NodeID?
    public let name: String?
    public let blockedAt: Timestamp
}

extension ContinuumStore {
    /// Blocks an author, on this node only: its posts, comments, edits and records of kinds this node does not know
    /// are erased here as a deletion would erase them (their photos go, their notifications go), and those that
    /// arrive later are kept as headers alone, so they are neither shown nor forwarded. With the author's node known (a member record), every log of that
    /// node is blocked, in every group. Returns what was erased.
    public func block(_ author: AuthorID, by identity: NodeIdentity) async throws -> (posts: Int, comments: Int) {
        let now = Timestamp.now().milliseconds
        let (counts, photos, text) = try await write { db in
            if try Self.isOwnLog(author, identity: identity, db) {
                throw StoreError(.invalidInput, "\(author.short) is this node; a node does not block itself")
            }
            let node = try Self.vouchedNode(of: author, db)
            if node == identity.node.bytes {
                throw StoreError(.invalidInput, "\(author.short) names this node; a node does not block itself")
            }
            let name = try String.fetchOne(
                db,
                sql: "SELECT name FROM profile WHERE author = ?",
                arguments: [author.bytes]
            )
            try db.execute(
                sql: """
                    INSERT INTO blocked (author, node, name, blocked_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (author) DO NOTHING
                    """,
                arguments: [author.bytes, node, name, now]
            )
            var logs: Set<Data> = [author.bytes]
            if let node {
                logs.formUnion(try Data.fetchAll(db, sql: "SELECT log FROM member WHERE node = ?", arguments: [node]))
            }
            // Never this node's own logs, whatever a record says their node is.
            logs.subtract(try Data.fetchAll(db, sql: "SELECT public FROM log_key"))
            var ingest = Ingest(db: db, now: now)
            var counts = (posts: 0, comments: 0)
            for log in logs {
                let erased = try Self.eraseAll(of: log, &ingest, db)
                counts.posts += erased.posts
                counts.comments += erased.comments
            }
            try ingest.finish()
            return (counts, ingest.erasedPhotos.sorted(), ingest.erasedText)
        }
        try await finishErasure(photos: photos, text: text)
        return counts
    }

    /// Erases what a blocked log wrote, as a deletion would: its notifications, posts (with their edits), comments,
    /// and records of kinds this node does not know (shown nowhere, but not kept either, §2.8). Returns how many
    /// posts and comments went.
    private static func eraseAll(
        of log: Data,
        _ ingest: inout Ingest,
        _ db: Database
    ) throws -> (posts: Int, comments: Int) {
        try db.execute(
            sql: "DELETE FROM notification WHERE record IN (SELECT id FROM record WHERE author = ?)",
            arguments: [log]
        )
        let posts = try Data.fetchAll(db, sql: "SELECT id FROM post WHERE author = ? AND deleted = 0", arguments: [log])
        for post in posts { try ingest.erasePost(post, author: log) }
        let comments = try Data.fetchAll(
            db,
            sql: "SELECT id FROM comment WHERE author = ? AND deleted = 0",
            arguments: [log]
        )
        for comment in comments { try ingest.eraseComment(comment, author: log) }
        for record in try Data.fetchAll(db, sql: "SELECT id FROM opaque_record WHERE author = ?", arguments: [log]) {
            try ingest.eraseOpaque(record, author: log)
        }
        return (posts.count, comments.count)
    }

    /// Unblocks an author (and its node's other logs): what it writes from now on is shown again. What was erased
    /// while it was blocked stays erased here. Returns whether it was blocked.
    @discardableResult
    public func unblock(_ author: AuthorID) async throws -> Bool {
        try await write { db in
            let node = try Self.vouchedNode(of: author, db)
            try db.execute(
                sql: "DELETE FROM blocked WHERE author = ? OR (node IS NOT NULL AND node = ?)",
                arguments: [author.bytes, node]
            )
            return db.changesCount > 0
        }
    }

    /// The authors this node blocked, the most recent first.
    public func blockedAuthors() async throws -> [BlockedAuthor] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM blocked ORDER BY blocked_at DESC").map { row in
                BlockedAuthor(
                    author: AuthorID(unchecked: row["author"]),
                    node: (row["node"] as Data?).map { NodeID(unchecked: $0) },
                    name: row["name"],
                    blockedAt: Timestamp(milliseconds: row["blocked_at"])
                )
            }
        }
    }

    /// The node of a log as an admin's record says it: its member row in a group that is neither open nor a
    /// network, where an admin signed the add (a self-add may name any node, PROTOCOL.md §5.1). Nil otherwise.
    static func vouchedNode(of log: AuthorID, _ db: Database) throws -> Data? {
        try Data.fetchOne(
            db,
            sql: """
                SELECT member.node FROM member JOIN grp ON grp.id = member.group_id
                WHERE member.log = ? AND grp.open = 0 AND grp.network = 0
                """,
            arguments: [log.bytes]
        )
    }

    /// The authors whose profile gives them this name.
    public func authors(named name: String) async throws -> [AuthorID] {
        try await read { db in
            try Data.fetchAll(db, sql: "SELECT author FROM profile WHERE name = ?", arguments: [name]).map {
                AuthorID(unchecked: $0)
            }
        }
    }

    /// The node of a log, when a member record names it.
    public func node(ofLog log: AuthorID) async throws -> NodeID? {
        try await read { db in
            try Data.fetchOne(db, sql: "SELECT node FROM member WHERE log = ?", arguments: [log.bytes]).map {
                NodeID(unchecked: $0)
            }
        }
    }

    /// Whether `author` is this node's: its node key, one of its log keys, or a log of another device of its account.
    static func isOwnLog(_ author: AuthorID, identity: NodeIdentity, _ db: Database) throws -> Bool {
        if author == identity.author { return true }
        return try isOwn(author, db)
    }
}
