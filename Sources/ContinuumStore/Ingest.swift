import ContinuumCore
import Foundation
import GRDB

/// Ingesting one verified record inside a write transaction: the log, fork checks, ownership checks and the
/// derived views.
///
/// The derived views are a function of the set of records held, whatever order they came in: every derived
/// field of a post (caption, deleted, comment count) is recomputed from the base tables whenever a record that
/// touches it arrives, and edits and tombstones count only when their author is the target's author.
struct Ingest {
    let db: Database
    let now: Int64
    /// How the records being ingested reached the node.
    var delivery: Delivery
    /// Who is notified of what; nil: nobody (benchmarks, tools).
    let notifications: NotificationPolicy?
    /// Log heads of the authors touched in this transaction, written back by ``finish()``.
    private var heads: [Data: (contiguous: Int64, maxSeq: Int64)] = [:]

    init(db: Database, now: Int64, delivery: Delivery = .local, notifications: NotificationPolicy? = nil) {
        self.db = db
        self.now = now
        self.delivery = delivery
        self.notifications = notifications
    }

    enum Outcome {
        /// Stored. `ignored` is set when the record breaks a rule that needs another record (such as an edit of
        /// someone else's post): it is kept in the log, so that every node holds the same set and no log has a
        /// gap, but no view applies it.
        case stored(ignored: StoreError?)
        case duplicate
        case fork(ForkSummary)
        case rejected(StoreError)
    }

    /// - Parameter local: true for a record this node is signing now; one that breaks a rule is then refused
    ///   outright, storing nothing.
    mutating func one(_ verified: VerifiedRecord, local: Bool = false) throws -> Outcome {
        let record = verified.record
        let content = record.content
        let id = record.id.bytes
        let author = content.author.bytes
        let seq = Int64(content.sequence)

        // One look at the neighbourhood: the held records at seq - 1, seq and seq + 1.
        var before: Data?
        var next: (id: Data, previous: Data?)?
        let neighbours = try Row.fetchCursor(
            try db.cachedStatement(
                sql: "SELECT seq, id, previous FROM record WHERE author = ? AND seq BETWEEN ? AND ?"
            ),
            arguments: [author, seq - 1, seq + 1]
        )
        while let row = try neighbours.next() {
            let heldSeq: Int64 = row["seq"]
            let heldID: Data = row["id"]
            if heldSeq == seq {
                // The same position: the same record (a duplicate) or a fork.
                if heldID == id { return .duplicate }
                return .fork(try fork(record, conflictsWith: heldID, "a different record is held at this sequence"))
            } else if heldSeq == seq - 1 {
                before = heldID
            } else {
                next = (heldID, row["previous"])
            }
        }
        if let previous = content.previous, let before, before != previous.bytes {
            return .fork(try fork(record, conflictsWith: before, "previous does not match the held record"))
        }
        if let next, next.previous != id {
            return .fork(try fork(record, conflictsWith: next.id, "the held next record does not link to this one"))
        }

        let ignored = try Self.ownershipError(content, record.id, db)
        if local, let ignored { return .rejected(ignored) }

        try db.cachedStatement(
            sql: """
                INSERT INTO record (id, author, seq, previous, kind, created_at, received_at, bytes)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            id, author, seq, content.previous?.bytes, Int64(content.kind.rawValue), content.createdAt.milliseconds, now,
            Data(record.bytes),
        ])
        try advanceHead(author: author, seq: seq)
        try Self.applyToViews(content, id: record.id, db)
        if ignored == nil { try notify(content, id: record.id) }
        return .stored(ignored: ignored)
    }

    // MARK: Rules that need other records

    /// Edits and deletes may only target the author's own posts and comments, and comments only posts.
    /// Whether or not the target is here yet, the views apply such a record only when the target turns out to be
    /// the same author's; this check names the broken rule when it can already be seen.
    private static func ownershipError(_ content: RecordContent, _ id: RecordID, _ db: Database) throws -> StoreError? {
        func target(_ target: RecordID) throws -> (author: Data, kind: RecordKind)? {
            try Row.fetchOne(
                // Only posts and comments can be targets; a target of another kind is never applied either.
                try db.cachedStatement(
                    sql: """
                        SELECT author, 2 AS kind FROM post WHERE id = ?1
                        UNION ALL SELECT author, 3 AS kind FROM comment WHERE id = ?1
                        LIMIT 1
                        """
                ),
                arguments: [target.bytes]
            ).map { ($0["author"], RecordKind(rawValue: $0["kind"]) ?? .profile) }
        }
        switch content.body {
        case .edit(let post, _):
            guard let held = try target(post.record) else { return nil }
            if held.kind != .post {
                return .record(.malformed("an edit must target a post; \(post.short) is a \(held.kind.name)"))
            }
            if held.author != content.author.bytes {
                return StoreError(
                    .notOwner,
                    ContinuumCore.RecordError.notOwner(kind: .edit, target: post.record).description
                )
            }
        case .delete(let targets):
            for item in targets {
                guard let held = try target(item) else { continue }
                if held.kind != .post && held.kind != .comment {
                    return .record(
                        .malformed("a delete may only target posts and comments; \(item.short) is a \(held.kind.name)")
                    )
                }
                if held.author != content.author.bytes {
                    return StoreError(
                        .notOwner,
                        ContinuumCore.RecordError.notOwner(kind: .delete, target: item).description
                    )
                }
            }
        case .comment(let post, _):
            if let held = try target(post.record), held.kind != .post {
                return .record(.malformed("a comment must reference a post; \(post.short) is a \(held.kind.name)"))
            }
        case .profile, .post:
            break
        }
        return nil
    }

    private func fork(_ record: SignedRecord, conflictsWith held: Data, _ reason: String) throws -> ForkSummary {
        try db.execute(
            sql: """
                INSERT OR IGNORE INTO fork (id, author, seq, conflicts_with, reason, bytes, detected_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                record.id.bytes, record.author.bytes, Int64(record.sequence), held, reason, Data(record.bytes), now,
            ]
        )
        return ForkSummary(
            author: record.author,
            sequence: record.sequence,
            refused: record.id,
            kept: RecordID(unchecked: held),
            reason: reason,
            detectedAt: Timestamp(milliseconds: now)
        )
    }

    /// Keeps the log head current: the contiguous prefix only grows when the missing next record arrives.
    /// Heads are cached for the transaction and written once per author by ``finish()``.
    private mutating func advanceHead(author: Data, seq: Int64) throws {
        var head: (contiguous: Int64, maxSeq: Int64)
        if let cached = heads[author] {
            head = cached
        } else {
            let row = try Row.fetchOne(
                try db.cachedStatement(sql: "SELECT contiguous, max_seq FROM log_head WHERE author = ?"),
                arguments: [author]
            )
            head = (row?["contiguous"] ?? 0, row?["max_seq"] ?? 0)
        }
        let hadGap = head.maxSeq > head.contiguous
        head.maxSeq = max(head.maxSeq, seq)
        if seq == head.contiguous + 1 {
            head.contiguous = seq
            if hadGap {
                let next = try db.cachedStatement(sql: "SELECT 1 FROM record WHERE author = ? AND seq = ?")
                while head.contiguous < head.maxSeq,
                    try Bool.fetchOne(next, arguments: [author, head.contiguous + 1]) != nil
                {
                    head.contiguous += 1
                }
            }
        }
        heads[author] = head
    }

    /// Writes the cached log heads. Call once, at the end of the transaction.
    func finish() throws {
        let upsert = try db.cachedStatement(
            sql: """
                INSERT INTO log_head (author, contiguous, max_seq) VALUES (?, ?, ?)
                ON CONFLICT (author) DO UPDATE SET contiguous = excluded.contiguous, max_seq = excluded.max_seq
                """
        )
        for (author, head) in heads { try upsert.execute(arguments: [author, head.contiguous, head.maxSeq]) }
    }

    // MARK: Derived views

    private static func applyToViews(_ content: RecordContent, id: RecordID, _ db: Database) throws {
        let author = content.author.bytes
        let seq = Int64(content.sequence)
        switch content.body {
        case .profile(let name):
            try db.cachedStatement(
                sql: """
                    INSERT INTO profile (author, name, seq) VALUES (?, ?, ?)
                    ON CONFLICT (author) DO UPDATE SET name = excluded.name, seq = excluded.seq
                    WHERE excluded.seq > profile.seq
                    """
            ).execute(arguments: [author, name, seq])

        case .post(let caption, let photo, let location):
            try insertPost(content, id: id, caption: caption, photo: photo, location: location, db)

        case .comment(let post, let text):
            try db.cachedStatement(
                sql: """
                    INSERT INTO comment (id, post, author, seq, created_at, text, deleted)
                    VALUES (?, ?, ?, ?, ?, ?,
                            EXISTS (SELECT 1 FROM tombstone WHERE target = ?1 AND author = ?3))
                    """
            ).execute(arguments: [id.bytes, post.bytes, author, seq, content.createdAt.milliseconds, text])
            try refreshCommentCount(post.bytes, db)

        case .edit(let post, let caption):
            try db.cachedStatement(sql: "INSERT INTO edit (id, post, author, seq, caption) VALUES (?, ?, ?, ?, ?)")
                .execute(arguments: [id.bytes, post.bytes, author, seq, caption])
            try refreshPost(post.bytes, db)

        case .delete(let targets):
            try applyDelete(targets, id: id, author: author, db)
        }
    }

    /// Writes a post's row and search entry, with the edits, tombstones and comments that arrived before it.
    private static func insertPost(
        _ content: RecordContent,
        id: RecordID,
        caption: String,
        photo: PhotoReference,
        location: Coordinate?,
        _ db: Database
    ) throws {
        let author = content.author.bytes
        let seq = Int64(content.sequence)
        // Edits, tombstones and comments may have arrived first: fold them in as the row is written.
        let pending = try Row.fetchOne(
            try db.cachedStatement(
                sql: """
                    SELECT (SELECT caption FROM edit WHERE post = ?1 AND author = ?2 ORDER BY seq DESC LIMIT 1)
                               AS edited_caption,
                           EXISTS (SELECT 1 FROM tombstone WHERE target = ?1 AND author = ?2) AS deleted,
                           (SELECT count(*) FROM comment WHERE post = ?1 AND deleted = 0) AS comments,
                           (SELECT max(rowid) FROM post WHERE rowid BETWEEN ?3 AND ?3 + 1023) AS taken
                    """
            ),
            arguments: [id.bytes, author, content.createdAt.milliseconds * 1024]
        )!
        let edited: String? = pending["edited_caption"]
        let deleted: Bool = pending["deleted"]
        // The rowid orders posts by creation time (milliseconds * 1024 + a tie-breaker), so that search can
        // walk the full-text index newest first and stop after one page.
        let base = content.createdAt.milliseconds * 1024
        let taken: Int64? = pending["taken"]
        let rowid: Int64? = taken.map { $0 + 1 < base + 1024 ? $0 + 1 : nil } ?? base
        let inserted = try Int64.fetchOne(
            try db.cachedStatement(
                sql: """
                    INSERT INTO post (rowid, id, author, seq, created_at, original_caption, caption, edited,
                                      photo_sha256, photo_bytes, media_type, width, height, lat_e7, lon_e7,
                                      deleted, comment_count)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    RETURNING rowid
                    """
            ),
            arguments: [
                rowid, id.bytes, author, seq, content.createdAt.milliseconds, caption, edited ?? caption,
                edited != nil, photo.sha256.bytes, Int64(photo.byteCount), Int64(photo.mediaType.rawValue),
                Int64(photo.width), Int64(photo.height), location?.latitudeE7, location?.longitudeE7, deleted,
                pending["comments"] as Int64,
            ]
        )!
        if !deleted {
            try db.cachedStatement(sql: "INSERT INTO post_search (rowid, folded) VALUES (?, ?)")
                .execute(arguments: [inserted, TextFolding.fold(edited ?? caption)])
        }
    }

    /// Records the tombstones of a delete and refreshes the posts and comments it targets.
    private static func applyDelete(_ targets: [RecordID], id: RecordID, author: Data, _ db: Database) throws {
        for target in targets {
            try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO tombstone (target, delete_id, author) VALUES (?, ?, ?)"
            )
            .execute(arguments: [target.bytes, id.bytes, author])
            try refreshPost(target.bytes, db)
            if let post = try Data.fetchOne(
                try db.cachedStatement(
                    sql: "UPDATE comment SET deleted = 1 WHERE id = ? AND author = ? RETURNING post"
                ),
                arguments: [target.bytes, author]
            ) {
                try refreshCommentCount(post, db)
            }
        }
    }

    /// Recomputes a post's caption, deletion and comment count from the base tables, and its search entry.
    private static func refreshPost(_ post: Data, _ db: Database) throws {
        guard
            let row = try Row.fetchOne(
                try db.cachedStatement(sql: "SELECT rowid, author, original_caption FROM post WHERE id = ?"),
                arguments: [post]
            )
        else { return }
        let rowid: Int64 = row["rowid"]
        let author: Data = row["author"]
        let edit = try String.fetchOne(
            try db.cachedStatement(
                sql: "SELECT caption FROM edit WHERE post = ? AND author = ? ORDER BY seq DESC LIMIT 1"
            ),
            arguments: [post, author]
        )
        let caption = edit ?? row["original_caption"]
        let deleted = try exists(db, "SELECT 1 FROM tombstone WHERE target = ? AND author = ?", [post, author])
        try db.cachedStatement(
            sql: """
                UPDATE post SET caption = ?, edited = ?, deleted = ?,
                    comment_count = (SELECT count(*) FROM comment WHERE comment.post = post.id AND deleted = 0)
                WHERE rowid = ?
                """
        ).execute(arguments: [caption, edit != nil, deleted, rowid])
        try db.cachedStatement(sql: "DELETE FROM post_search WHERE rowid = ?").execute(arguments: [rowid])
        if !deleted {
            try db.cachedStatement(sql: "INSERT INTO post_search (rowid, folded) VALUES (?, ?)")
                .execute(arguments: [rowid, TextFolding.fold(caption)])
        }
    }

    private static func refreshCommentCount(_ post: Data, _ db: Database) throws {
        try db.cachedStatement(
            sql: """
                UPDATE post SET comment_count =
                    (SELECT count(*) FROM comment WHERE comment.post = post.id AND deleted = 0)
                WHERE id = ?
                """
        ).execute(arguments: [post])
    }

    private static func exists(_ db: Database, _ sql: String, _ arguments: StatementArguments) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: sql), arguments: arguments) != nil
    }
}
