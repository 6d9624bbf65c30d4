import ContinuumCore
import Foundation
import GRDB

/// Erasure (PROTOCOL.md §2.6): what a delete takes away, on this node, inside the ingest transaction. The files
/// of erased photos go after it commits (``ContinuumStore/finishErasure(photos:text:coalesce:)``).
extension Ingest {
    /// Whether the content of a record is erased for good: a post or comment its author deleted, a comment the
    /// author of its post hid (deleted), a comment on a post its author deleted (a post's comments go with it), or
    /// an edit of a post its author deleted. A profile's content is never erased (a newer profile replaces it).
    ///
    /// Each rule needs a tombstone whose target is the record or what it goes with (its post, its context): one look
    /// at the tombstones by those targets comes first, and rules out most records without the rules' own queries,
    /// which read the post and the owners of logs before they find that no tombstone is there.
    mutating func isErased(_ header: RecordHeader, id: RecordID) throws -> Bool {
        if [.post, .comment, .edit, .unknown].contains(header.kind), try isBlocked(header.author.bytes) { return true }
        guard let targets = Self.tombstoneTargets(header, id: id),
            // Two lookups of the primary key (an IN list would build a temporary table at every execution).
            try Self.exists(
                db,
                "SELECT 1 FROM tombstone WHERE target = ? UNION ALL SELECT 1 FROM tombstone WHERE target = ?",
                [targets.0, targets.1]
            )
        else { return false }
        let target: Data
        switch (header.kind, header.references) {
        case (.comment, .post(let post)):
            return try Self.exists(
                db,
                """
                SELECT 1 FROM tombstone WHERE target = ?1
                    AND \(ownerSQL("tombstone.author")) IN (\(ownerSQL("?2")),
                        \(ownerSQL("(SELECT author FROM post WHERE id = ?3)")))
                UNION ALL SELECT 1 FROM tombstone JOIN record ON record.id = tombstone.target AND record.kind = 2
                    AND \(ownerSQL("record.author")) = \(ownerSQL("tombstone.author")) WHERE tombstone.target = ?3
                """,
                [id.bytes, header.author.bytes, post.bytes]
            )
        case (.post, _), (.comment, _): target = id.bytes
        case (.edit, .post(let post)): target = post.bytes
        case (.unknown, .opaque(let references)):
            // Its author deleted it, or the author of the post it goes with deleted that post (§2.8).
            return try Self.exists(
                db,
                """
                SELECT 1 FROM tombstone WHERE target = ?1 AND \(ownerSQL("tombstone.author")) = \(ownerSQL("?2"))
                UNION ALL SELECT 1 FROM tombstone JOIN record ON record.id = tombstone.target AND record.kind = 2
                    AND \(ownerSQL("record.author")) = \(ownerSQL("tombstone.author")) WHERE tombstone.target = ?3
                """,
                [id.bytes, header.author.bytes, references.context?.bytes ?? Data()]
            )
        default: return false
        }
        return try Self.exists(
            db,
            "SELECT 1 FROM tombstone WHERE target = ?1 AND \(ownerSQL("tombstone.author")) = \(ownerSQL("?2"))",
            [target, header.author.bytes]
        )
    }

    /// The targets a tombstone must have for ``isErased(_:id:)`` to find the record erased (one of them twice when
    /// there is one), or nil for a kind whose content is never erased.
    private static func tombstoneTargets(_ header: RecordHeader, id: RecordID) -> (Data, Data)? {
        switch (header.kind, header.references) {
        case (.comment, .post(let post)): return (id.bytes, post.bytes)
        case (.post, _), (.comment, _): return (id.bytes, id.bytes)
        case (.edit, .post(let post)): return (post.bytes, post.bytes)
        case (.unknown, .opaque(let references)): return (id.bytes, references.context?.bytes ?? id.bytes)
        default: return nil
        }
    }

    /// Records the tombstones of a delete and erases what it targets (§2.6): for a post, its content, its edits'
    /// contents, its search entry, its photo unless a live post shows it, and every comment on it; for a comment, its
    /// text.
    mutating func applyDelete(_ targets: [RecordID], id: RecordID, author: Data) throws {
        for target in targets {
            try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO tombstone (target, delete_id, author) VALUES (?, ?, ?)"
            )
            .execute(arguments: [target.bytes, id.bytes, author])
            try erasePost(target.bytes, author: author)
            try eraseWhatGoesWith(post: target.bytes, deletedBy: author)
            try eraseComment(target.bytes, author: author)
            try eraseOpaque(target.bytes, author: author)
        }
    }

    /// Erases every comment on `post`, whoever wrote it, and every record of an unknown kind that goes with it, when
    /// `author` wrote the post and deleted it: they go with it (§2.6, §2.8). The post is judged by its record, held
    /// whole or as its header alone; a post not held yet is judged when it arrives
    /// (``eraseWhatGoesWith(arrivingPost:author:)``). Blocking erases a post without them: it is not a delete.
    mutating func eraseWhatGoesWith(post: Data, deletedBy author: Data) throws {
        guard
            try Self.exists(
                db,
                "SELECT 1 FROM record WHERE id = ?1 AND kind = 2 AND \(ownerSQL("record.author")) = \(ownerSQL("?2"))",
                [post, author]
            )
        else { return }
        let opaque = try Row.fetchAll(
            try db.cachedStatement(sql: "SELECT author, seq FROM opaque_record WHERE context = ?"),
            arguments: [post]
        )
        for record in opaque {
            try eraseContent(author: record["author"], seq: record["seq"])
            try eraseReaction(author: record["author"], seq: record["seq"])
        }
        if !opaque.isEmpty { erasedText = true }
        // Read, then marked: an UPDATE … RETURNING buffers its rows in a temporary table, which cost more than the two.
        let erased = try Row.fetchAll(
            try db.cachedStatement(sql: "SELECT id, seq, author FROM comment WHERE post = ? AND deleted = 0"),
            arguments: [post]
        )
        guard !erased.isEmpty else { return }
        try db.cachedStatement(sql: "UPDATE comment SET deleted = 1, text = '' WHERE post = ? AND deleted = 0")
            .execute(arguments: [post])
        for comment in erased { try eraseCommentContent(comment) }
        try Self.refreshCommentCount(post, db)
    }

    /// A post that arrives erased takes with it the comments that came first: all of them, and the records of unknown
    /// kinds that go with it, when its author deleted it; otherwise (this node blocks its author) those its author hid.
    mutating func eraseWhatGoesWith(arrivingPost post: Data, author: Data) throws {
        if try Self.exists(
            db,
            "SELECT 1 FROM tombstone WHERE target = ?1 AND \(ownerSQL("tombstone.author")) = \(ownerSQL("?2"))",
            [post, author]
        ) {
            try eraseWhatGoesWith(post: post, deletedBy: author)
        } else {
            try eraseHiddenComments(on: post, author: author)
        }
    }

    mutating func erasePost(_ post: Data, author: Data) throws {
        // The edits of the post, whether or not the post is here: their captions and photos go too.
        // Of the same owner as the post: a post of another's is not `author`'s to delete (§4.4).
        guard
            let row = try Row.fetchOne(
                try db.cachedStatement(
                    sql: """
                        SELECT rowid, author, seq, photo_sha256, deleted FROM post
                        WHERE id = ?1 AND \(ownerSQL("post.author")) = \(ownerSQL("?2"))
                        """
                ),
                arguments: [post, author]
            )
                ?? Row.fetchOne(
                    // A post not here yet: its edits by the delete's owner go all the same.
                    try db.cachedStatement(
                        sql:
                            "SELECT NULL AS rowid, ?2 AS author, 1 AS deleted WHERE NOT EXISTS (SELECT 1 FROM post WHERE id = ?1)"
                    ),
                    arguments: [post, author]
                )
        else { return }
        let edits = try Row.fetchAll(
            try db.cachedStatement(
                sql: """
                    SELECT author, seq, photo_sha256 FROM edit
                    WHERE post = ?1 AND \(ownerSQL("edit.author")) = \(ownerSQL("?2"))
                    """
            ),
            arguments: [post, row["author"] as Data]
        )
        for edit in edits {
            try eraseContent(author: edit["author"], seq: edit["seq"])
            if let photo: Data = edit["photo_sha256"] { try considerPhoto(photo) }
        }
        if !edits.isEmpty {
            try db.cachedStatement(
                sql: "DELETE FROM edit WHERE post = ?1 AND \(ownerSQL("edit.author")) = \(ownerSQL("?2"))"
            ).execute(arguments: [post, row["author"] as Data])
            erasedText = true
        }
        guard (row["deleted"] as Int64) == 0 else { return }
        let rowid: Int64 = row["rowid"]
        try db.cachedStatement(
            sql: """
                UPDATE post SET original_caption = '', caption = '', edited = 0, photo_sha256 = x'', photo_bytes = 0,
                    media_type = 0, width = 0, height = 0, taken_at = NULL, thumb_sha256 = NULL, lat_e7 = NULL,
                    lon_e7 = NULL, deleted = 1
                WHERE rowid = ?
                """
        ).execute(arguments: [rowid])
        removeSearchEntry(rowid)
        try eraseContent(author: row["author"], seq: row["seq"])
        try db.cachedStatement(sql: "UPDATE notification SET text = NULL WHERE post = ?").execute(arguments: [post])
        try considerPhoto(row["photo_sha256"])
        erasedText = true
    }

    /// Erases a comment that `author` deleted: its own, or one on a post of `author` (hidden by the post's author).
    mutating func eraseComment(_ comment: Data, author: Data) throws {
        // Read, then marked (not UPDATE … RETURNING, as above); the owner is compared with each of the two owners
        // in turn (an IN list would build a temporary table at every execution).
        guard
            let row = try Row.fetchOne(
                try db.cachedStatement(
                    sql: """
                        SELECT id, post, seq, author FROM comment WHERE id = ?1 AND deleted = 0
                            AND (\(ownerSQL("?2")) = \(ownerSQL("comment.author"))
                                OR \(ownerSQL("?2"))
                                    = \(ownerSQL("(SELECT post.author FROM post WHERE post.id = comment.post)")))
                        """
                ),
                arguments: [comment, author]
            )
        else { return }
        try db.cachedStatement(sql: "UPDATE comment SET deleted = 1, text = '' WHERE id = ?")
            .execute(arguments: [comment])
        try Self.refreshCommentCount(row["post"], db)
        try eraseCommentContent(row)
    }

    /// What a comment erased leaves behind once its row is marked (`comment`: its id, seq and author): its record's
    /// content and its notification's text go.
    private mutating func eraseCommentContent(_ comment: Row) throws {
        try eraseContent(author: comment["author"], seq: comment["seq"])
        try db.cachedStatement(sql: "UPDATE notification SET text = NULL WHERE kind = ? AND record = ?")
            .execute(arguments: [NotificationKind.comment.rawValue, comment["id"] as Data])
        erasedText = true
    }

    /// Erases the comments on a post that its author hid before the post arrived here.
    mutating func eraseHiddenComments(on post: Data, author: Data) throws {
        let hidden = try Data.fetchAll(
            try db.cachedStatement(
                sql: """
                    SELECT comment.id FROM comment JOIN tombstone ON tombstone.target = comment.id
                    WHERE comment.post = ?1 AND comment.deleted = 0
                        AND \(ownerSQL("tombstone.author")) = \(ownerSQL("?2"))
                    """
            ),
            arguments: [post, author]
        )
        for comment in hidden { try eraseComment(comment, author: author) }
    }

    /// Whether this node blocked the author (by its log key, or by its node, whatever the group). The blocked logs
    /// are read once after the members were last derived (``settleMembers()``), and blocking is a
    /// transaction of its own.
    mutating func isBlocked(_ author: Data) throws -> Bool {
        if let blockedLogs { return blockedLogs.contains(author) }
        let logs = Set(
            try Data.fetchAll(
                db,
                sql: """
                    SELECT author FROM blocked
                    UNION SELECT member.log FROM member JOIN blocked ON blocked.node = member.node
                        JOIN grp ON grp.id = member.group_id AND grp.open = 0 AND grp.network = 0
                    EXCEPT SELECT public FROM log_key
                    """
            )
        )
        blockedLogs = logs
        return logs.contains(author)
    }

    /// Erases a record of a kind this node does not know that its own author deleted (§2.8).
    mutating func eraseOpaque(_ record: Data, author: Data) throws {
        guard
            let row = try Row.fetchOne(
                try db.cachedStatement(
                    sql: """
                        SELECT author, seq FROM opaque_record
                        WHERE id = ?1 AND \(ownerSQL("opaque_record.author")) = \(ownerSQL("?2"))
                        """
                ),
                arguments: [record, author]
            )
        else { return }
        try eraseContent(author: row["author"], seq: row["seq"])
        try eraseReaction(author: row["author"], seq: row["seq"])
        erasedText = true
    }

    /// Remembers a record of a kind this node does not know: by id, for a delete of it, and by the post it goes with.
    func insertOpaque(_ references: OpaqueReferences, id: RecordID, author: Data, seq: Int64) throws {
        try db.cachedStatement(
            // Once per record: a copy with its content, after the header alone, changes nothing here.
            sql: "INSERT OR IGNORE INTO opaque_record (id, author, seq, code, context) VALUES (?, ?, ?, ?, ?)"
        ).execute(arguments: [id.bytes, author, seq, Int64(references.code), references.context?.bytes])
    }

    /// Drops a record's content; its header stays (and is what peers get from now on).
    func eraseContent(author: Data, seq: Int64) throws {
        try db.cachedStatement(sql: "UPDATE record SET content = NULL WHERE author = ? AND seq = ?")
            .execute(arguments: [author, seq])
    }

    /// A photo that no live post shows any more is erased: its row here, its files once the transaction commits.
    mutating func considerPhoto(_ hash: Data) throws {
        guard let photo = AssetHash(bytes: hash),
            try !Self.exists(db, "SELECT 1 FROM post WHERE photo_sha256 = ? AND deleted = 0", [hash])
        else { return }
        try db.cachedStatement(sql: "DELETE FROM asset WHERE sha256 = ?").execute(arguments: [hash])
        try db.cachedStatement(sql: "DELETE FROM asset_content WHERE sha256 = ?").execute(arguments: [hash])
        try db.cachedStatement(sql: "DELETE FROM peer_lack WHERE sha256 = ?").execute(arguments: [hash])
        erasedPhotos.insert(photo)
    }
}
