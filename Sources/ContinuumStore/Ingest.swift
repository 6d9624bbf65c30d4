import ContinuumCore
import Foundation
import GRDB

/// Ingesting one verified record inside a write transaction: the log, fork checks, ownership checks and the
/// derived views.
///
/// The derived views are a function of the set of records held, whatever order they came in: every derived
/// field of a post (caption, deleted, comment count) is recomputed from the base tables whenever a record that
/// touches it arrives, and edits and tombstones count only when their author is the target's author.
enum Ingest {
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
    static func one(_ verified: VerifiedRecord, db: Database, now: Int64, local: Bool = false) throws -> Outcome {
        let record = verified.record
        let content = record.content
        let id = record.id.bytes
        let author = content.author.bytes
        let seq = Int64(content.sequence)

        if try exists(db, "SELECT 1 FROM record WHERE id = ?", [id]) { return .duplicate }

        // Forks: another record at this position, or a broken link to a neighbour.
        if let held = try Data.fetchOne(
            try db.cachedStatement(sql: "SELECT id FROM record WHERE author = ? AND seq = ?"),
            arguments: [author, seq]
        ) {
            return .fork(try fork(record, conflictsWith: held, "a different record is held at this sequence", db, now))
        }
        if let previous = content.previous,
            let held = try Data.fetchOne(
                try db.cachedStatement(sql: "SELECT id FROM record WHERE author = ? AND seq = ?"),
                arguments: [author, seq - 1]
            ),
            held != previous.bytes
        {
            return .fork(try fork(record, conflictsWith: held, "previous does not match the held record", db, now))
        }
        if let next = try Row.fetchOne(
            try db.cachedStatement(sql: "SELECT id, previous FROM record WHERE author = ? AND seq = ?"),
            arguments: [author, seq + 1]
        ),
            (next["previous"] as Data?) != id
        {
            return .fork(
                try fork(record, conflictsWith: next["id"], "the held next record does not link to this one", db, now)
            )
        }

        let ignored = try ownershipError(content, record.id, db)
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
        try advanceHead(author: author, seq: seq, db)
        try applyToViews(content, id: record.id, db)
        return .stored(ignored: ignored)
    }

    // MARK: Rules that need other records

    /// Edits and deletes may only target the author's own posts and comments, and comments only posts.
    /// Whether or not the target is here yet, the views apply such a record only when the target turns out to be
    /// the same author's; this check names the broken rule when it can already be seen.
    private static func ownershipError(_ content: RecordContent, _ id: RecordID, _ db: Database) throws -> StoreError? {
        func target(_ target: RecordID) throws -> (author: Data, kind: RecordKind)? {
            try Row.fetchOne(
                try db.cachedStatement(sql: "SELECT author, kind FROM record WHERE id = ?"),
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

    private static func fork(
        _ record: SignedRecord,
        conflictsWith held: Data,
        _ reason: String,
        _ db: Database,
        _ now: Int64
    ) throws -> ForkSummary {
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

    /// Keeps `log_head` current: the contiguous prefix only grows when the missing next record arrives.
    private static func advanceHead(author: Data, seq: Int64, _ db: Database) throws {
        let head = try Row.fetchOne(
            try db.cachedStatement(sql: "SELECT contiguous, max_seq FROM log_head WHERE author = ?"),
            arguments: [author]
        )
        var contiguous: Int64 = head?["contiguous"] ?? 0
        let maxSeq = max(head?["max_seq"] ?? 0, seq)
        if seq == contiguous + 1 {
            contiguous = seq
            let next = try db.cachedStatement(sql: "SELECT 1 FROM record WHERE author = ? AND seq = ?")
            while contiguous < maxSeq, try Bool.fetchOne(next, arguments: [author, contiguous + 1]) != nil {
                contiguous += 1
            }
        }
        try db.cachedStatement(
            sql: """
                INSERT INTO log_head (author, contiguous, max_seq) VALUES (?, ?, ?)
                ON CONFLICT (author) DO UPDATE SET contiguous = excluded.contiguous, max_seq = excluded.max_seq
                """
        ).execute(arguments: [author, contiguous, maxSeq])
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
            try db.cachedStatement(
                sql: """
                    INSERT INTO post (id, author, seq, created_at, original_caption, caption, photo_sha256,
                                      photo_bytes, media_type, width, height, lat_e7, lon_e7)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(arguments: [
                id.bytes, author, seq, content.createdAt.milliseconds, caption, caption, photo.sha256.bytes,
                Int64(photo.byteCount), Int64(photo.mediaType.rawValue), Int64(photo.width), Int64(photo.height),
                location?.latitudeE7, location?.longitudeE7,
            ])
            try refreshPost(id.bytes, db)

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
