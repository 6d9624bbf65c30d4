import ContinuumCore
import Foundation
import GRDB

/// Ingesting one verified record inside a write transaction: the log, fork checks, ownership checks and the
/// derived views.
///
/// The derived views are a function of the set of records held, whatever order they came in: every derived
/// field of a post (caption, deleted, comment count) is recomputed from the base tables whenever a record that
/// touches it arrives, and edits and tombstones count only when their author is the target's author (or, for a
/// tombstone of a comment, the author of the comment's post: a hidden comment).
struct Ingest {
    let db: Database
    let now: Int64
    /// How the records being ingested reached the node.
    var delivery: Delivery
    /// Who is notified of what; nil: nobody (benchmarks, tools).
    let notifications: NotificationPolicy?
    /// Log heads of the authors touched in this transaction, written back by ``finish()``.
    private var heads: [Data: LogHead] = [:]

    /// A log's head as this transaction left it, and the id of the record at `maxSeq` when the log has no gap
    /// (nil when not known).
    private struct LogHead {
        var contiguous: Int64
        var maxSeq: Int64
        var lastID: Data?
    }
    /// Photos that no live post shows any more, erased in this transaction: their files go once it commits.
    var erasedPhotos: Set<AssetHash> = []
    /// Whether text was erased in this transaction (the search index is then compacted, §2.6 of PROTOCOL.md).
    var erasedText = false
    /// Records that came again with the content their author had erased: the content was dropped.
    var droppedErasedContent = 0
    /// Groups whose member records changed in this transaction: their members are derived again once, at the end.
    var touchedGroups: Set<GroupID> = []
    /// The logs this node blocked, read once per transaction (nil until first needed).
    var blockedLogs: Set<Data>?
    /// Changes to the search index, written by ``finish()`` after every other statement of the transaction. FTS5
    /// flushes its pending terms into a new segment at every statement savepoint, so an entry written between the
    /// record's other statements cost a segment (and its merges) per post; written last, a batch makes one.
    private var searchIndex = SearchIndexChanges()

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
        let header = record.header
        let id = record.id.bytes
        let author = header.author.bytes
        let seq = Int64(header.sequence)

        // One look at the neighbourhood: the held records at seq - 1, seq and seq + 1. A record that extends a log
        // without a gap, as in every sync in order, needs none: the head remembers the record before it, and
        // nothing after it is held.
        var before: Data?
        var next: (id: Data, previous: Data?)?
        var extendsLog = false
        if let head = heads[author], head.contiguous == head.maxSeq, seq == head.maxSeq + 1, let last = head.lastID {
            before = last
            extendsLog = true
        } else {
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
                    if heldID == id {
                        try fillContent(record)
                        return .duplicate
                    }
                    return .fork(
                        try fork(record, conflictsWith: heldID, "a different record is held at this sequence")
                    )
                } else if heldSeq == seq - 1 {
                    before = heldID
                } else {
                    next = (heldID, row["previous"])
                }
            }
        }
        if let previous = header.previous, let before, before != previous.bytes {
            return .fork(try fork(record, conflictsWith: before, "previous does not match the held record"))
        }
        if let next, next.previous != id {
            return .fork(try fork(record, conflictsWith: next.id, "the held next record does not link to this one"))
        }

        let ignored = try Self.ownershipError(header, record.id, db)
        if local, let ignored { return .rejected(ignored) }
        // Content that its author already erased is not kept, whichever came first (§2.6).
        let erased = try isErased(header, id: record.id, extendsLog: extendsLog)
        let content = erased ? nil : record.contentBytes.flatMap { $0.isEmpty ? nil : Data($0) }

        try db.cachedStatement(
            sql: """
                INSERT INTO record (id, author, seq, previous, kind, created_at, received_at, bytes, content)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            id, author, seq, header.previous?.bytes, Int64(header.kind.rawValue), header.createdAt.milliseconds, now,
            Data(record.headerBytes), content,
        ])
        try advanceHead(author: author, seq: seq, id: id)
        try applyToViews(header, erased ? nil : record.body, erased: erased, id: record.id, broke: ignored)
        if ignored == nil, !erased, let full = record.content { try notify(full, id: record.id) }
        return .stored(ignored: ignored)
    }

    /// A record held as a header alone (a peer sent it without its content) gets its content from a later copy,
    /// unless its author erased it: then the content is dropped, and counted.
    private mutating func fillContent(_ record: SignedRecord) throws {
        guard record.header.hasContent, let content = record.contentBytes, let body = record.body,
            try Bool.fetchOne(
                db.cachedStatement(
                    sql: "SELECT content IS NULL FROM record WHERE author = ? AND seq = ?"
                ),
                arguments: [record.author.bytes, Int64(record.sequence)]
            ) == true
        else { return }
        if try isErased(record.header, id: record.id) {
            droppedErasedContent += 1
            return
        }
        // A post or comment that already has its row came as a header while erased (its author was blocked then,
        // and is not now): it stays erased here, as what was erased while blocked does.
        if record.header.kind == .post || record.header.kind == .comment,
            try Self.exists(
                db,
                "SELECT 1 FROM post WHERE id = ?1 UNION ALL SELECT 1 FROM comment WHERE id = ?1",
                [record.id.bytes]
            )
        {
            droppedErasedContent += 1
            return
        }
        try db.cachedStatement(sql: "UPDATE record SET content = ? WHERE author = ? AND seq = ?")
            .execute(arguments: [Data(content), record.author.bytes, Int64(record.sequence)])
        try applyToViews(
            record.header,
            body,
            erased: false,
            id: record.id,
            broke: try Self.ownershipError(record.header, record.id, db)
        )
    }

    // MARK: Rules that need other records

    /// Edits and deletes may only target the author's own posts and comments, and comments only posts.
    /// Whether or not the target is here yet, the views apply such a record only when the target turns out to be
    /// the same author's; this check names the broken rule when it can already be seen.
    /// Whether two logs belong to different groups, both known here (a log whose group is not known yet is not
    /// judged: the sync layer holds back a log's records until its member record is here, PROTOCOL.md §7.8.6).
    static func inOtherGroups(_ one: Data, _ other: Data, _ db: Database) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(
                sql:
                    "SELECT one.group_id != other.group_id FROM member one, member other WHERE one.log = ?1 AND other.log = ?2"
            ),
            arguments: [one, other]
        ) == true
    }

    private static func ownershipError(_ header: RecordHeader, _ id: RecordID, _ db: Database) throws -> StoreError? {
        func target(_ target: RecordID) throws -> (author: Data, kind: RecordKind, postAuthor: Data?)? {
            try Row.fetchOne(
                // Only posts and comments can be targets; a target of another kind is never applied either.
                try db.cachedStatement(
                    sql: """
                        SELECT author, 2 AS kind, NULL AS post_author FROM post WHERE id = ?1
                        UNION ALL SELECT author, 3 AS kind, (SELECT post.author FROM post WHERE post.id = comment.post)
                            FROM comment WHERE id = ?1
                        LIMIT 1
                        """
                ),
                arguments: [target.bytes]
            ).map { ($0["author"], RecordKind(rawValue: $0["kind"]) ?? .profile, $0["post_author"]) }
        }
        switch (header.kind, header.references) {
        case (.edit, .post(let post)):
            guard let held = try target(post.record) else { return nil }
            if held.kind != .post {
                return .record(.malformed("an edit must target a post; \(post.short) is a \(held.kind.name)"))
            }
            if held.author != header.author.bytes {
                return StoreError(
                    .notOwner,
                    ContinuumCore.RecordError.notOwner(kind: .edit, target: post.record).description
                )
            }
        case (.delete, .targets(let targets)):
            for item in targets {
                guard let held = try target(item) else { continue }
                if held.kind != .post && held.kind != .comment {
                    return .record(
                        .malformed("a delete may only target posts and comments; \(item.short) is a \(held.kind.name)")
                    )
                }
                // The author of a post may also delete (hide) the comments of others on it; a comment whose post is
                // not here yet cannot be judged (the hide applies when the post comes, if its author signed it).
                let author = header.author.bytes
                let mayHide = held.kind == .comment && (held.postAuthor == nil || held.postAuthor == author)
                if held.author != author, !mayHide {
                    return StoreError(
                        .notOwner,
                        ContinuumCore.RecordError.notOwner(kind: .delete, target: item).description
                    )
                }
            }
        case (.comment, .post(let post)):
            guard let held = try target(post.record) else { break }
            if held.kind != .post {
                return .record(.malformed("a comment must reference a post; \(post.short) is a \(held.kind.name)"))
            }
            if try inOtherGroups(header.author.bytes, held.author, db) {
                return StoreError(.notMember, "a comment must be in its post's group; \(post.short) is another group's")
            }
        default:
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
                // The header alone: evidence of the fork, without content its author may erase.
                record.id.bytes, record.author.bytes, Int64(record.sequence), held, reason, Data(record.headerBytes),
                now,
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
    private mutating func advanceHead(author: Data, seq: Int64, id: Data) throws {
        var head: LogHead
        if let cached = heads[author] {
            head = cached
        } else {
            let row = try Row.fetchOne(
                try db.cachedStatement(sql: "SELECT contiguous, max_seq FROM log_head WHERE author = ?"),
                arguments: [author]
            )
            head = LogHead(contiguous: row?["contiguous"] ?? 0, maxSeq: row?["max_seq"] ?? 0, lastID: nil)
        }
        let hadGap = head.maxSeq > head.contiguous
        if seq > head.maxSeq {
            head.maxSeq = seq
            head.lastID = id
        }
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
        for group in touchedGroups { try refreshMembers(of: group) }
        try searchIndex.write(db)
        let upsert = try db.cachedStatement(
            sql: """
                INSERT INTO log_head (author, contiguous, max_seq) VALUES (?, ?, ?)
                ON CONFLICT (author) DO UPDATE SET contiguous = excluded.contiguous, max_seq = excluded.max_seq
                """
        )
        for (author, head) in heads { try upsert.execute(arguments: [author, head.contiguous, head.maxSeq]) }
    }

    // MARK: Derived views

    /// Applies a stored record to the views. `body` is nil for a header alone; `erased` says its content was
    /// erased by its author (the record is then shown as deleted where it has a row at all); `broke` is the rule
    /// it breaks, if any (a comment in another group than its post's has no row).
    private mutating func applyToViews(
        _ header: RecordHeader,
        _ body: RecordBody?,
        erased: Bool,
        id: RecordID,
        broke: StoreError? = nil
    )
        throws
    {
        let author = header.author.bytes
        let seq = Int64(header.sequence)
        switch body {
        case .profile(let name):
            try db.cachedStatement(
                sql: """
                    INSERT INTO profile (author, name, seq) VALUES (?, ?, ?)
                    ON CONFLICT (author) DO UPDATE SET name = excluded.name, seq = excluded.seq
                    WHERE excluded.seq > profile.seq
                    """
            ).execute(arguments: [author, name, seq])

        case .post(let caption, let photo, let location):
            try insertPost(header, id: id, caption: caption, photo: photo, location: location)

        case .comment(let post, let text):
            guard broke?.code != .notMember else { return }
            try insertComment(header, id: id, post: post, text: text, deleted: false)

        case .edit(let post, let change):
            try insertEdit(header, id: id, post: post, change: change)
            try refreshPost(post.bytes)

        case .delete(let targets):
            try applyDelete(targets, id: id, author: author)

        case .group, .member:
            try applyGroupRecord(header, body, id: id)

        case nil where header.kind == .group:
            try applyGroupRecord(header, nil, id: id)

        case nil:
            // A header alone. Erased by its author: a deleted post or comment still has its row (without any
            // content), so that it can be named as deleted and its comments counted. Otherwise the content was
            // withheld by whoever sent it: nothing to show until a copy with content comes.
            guard erased else { return }
            switch (header.kind, header.references) {
            case (.post, _):
                try insertErasedPost(header, id: id)
                // Comments that came first and that the post's author hid: erased too.
                try eraseHiddenComments(on: id.bytes, author: header.author.bytes)
            case (.comment, .post(let post)): try insertComment(header, id: id, post: post, text: "", deleted: true)
            default: break
            }
        }
    }

    /// An edit's row: what it changes (location: 0 unchanged, 1 set, 2 removed).
    private func insertEdit(_ header: RecordHeader, id: RecordID, post: PostID, change: PostChange) throws {
        var location: (code: Int64, lat: Int32?, lon: Int32?) = (0, nil, nil)
        switch change.location {
        case .unchanged: break
        case .set(let coordinate): location = (1, coordinate.latitudeE7, coordinate.longitudeE7)
        case .removed: location = (2, nil, nil)
        }
        let photo = change.photo
        try db.cachedStatement(
            sql: """
                INSERT INTO edit (id, post, author, seq, caption, photo_sha256, photo_bytes, media_type, width,
                                  height, taken_at, location, lat_e7, lon_e7)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            id.bytes, post.bytes, header.author.bytes, Int64(header.sequence), change.caption, photo?.sha256.bytes,
            photo.map { Int64($0.byteCount) }, photo.map { Int64($0.mediaType.rawValue) },
            photo.map { Int64($0.width) }, photo.map { Int64($0.height) }, photo?.takenAt?.milliseconds,
            location.code, location.lat, location.lon,
        ])
    }

    /// Writes a post's row and search entry, with the edits, tombstones and comments that arrived before it.
    private mutating func insertPost(
        _ header: RecordHeader,
        id: RecordID,
        caption: String,
        photo: PhotoReference,
        location: Coordinate?
    ) throws {
        let author = header.author.bytes
        let seq = Int64(header.sequence)
        // Edits and comments may have arrived first: fold them in as the row is written.
        let pending = try Row.fetchOne(
            try db.cachedStatement(
                sql: """
                    SELECT EXISTS (SELECT 1 FROM edit WHERE post = ?1 AND author = ?2) AS edited,
                           (SELECT count(*) FROM comment WHERE post = ?1 AND deleted = 0) AS comments,
                           (SELECT max(rowid) FROM post WHERE rowid BETWEEN ?3 AND ?3 + 1023) AS taken
                    """
            ),
            arguments: [id.bytes, author, header.createdAt.milliseconds * 1024]
        )!
        let edited: Bool = pending["edited"]
        // The rowid orders posts by when they were posted (milliseconds * 1024 + a tie-breaker), so that search
        // can walk the full-text index newest first and stop after one page.
        let base = header.createdAt.milliseconds * 1024
        let taken: Int64? = pending["taken"]
        let rowid: Int64? = taken.map { $0 + 1 < base + 1024 ? $0 + 1 : nil } ?? base
        let inserted = try Int64.fetchOne(
            try db.cachedStatement(
                sql: """
                    INSERT INTO post (rowid, id, author, seq, created_at, original_caption, caption, edited,
                                      photo_sha256, photo_bytes, media_type, width, height, taken_at, lat_e7, lon_e7,
                                      deleted, comment_count)
                    VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)
                    RETURNING rowid
                    """
            ),
            arguments: [
                rowid, id.bytes, author, seq, header.createdAt.milliseconds, caption, caption,
                photo.sha256.bytes, Int64(photo.byteCount), Int64(photo.mediaType.rawValue), Int64(photo.width),
                Int64(photo.height), photo.takenAt?.milliseconds, location?.latitudeE7, location?.longitudeE7,
                pending["comments"] as Int64,
            ]
        )!
        if pending["comments"] as Int64 > 0 {
            // Comments that came first: those of another group than the post's go, and those its author hid.
            try db.cachedStatement(
                sql: """
                    DELETE FROM comment WHERE post = ?1 AND EXISTS (
                        SELECT 1 FROM member one, member other
                        WHERE one.log = comment.author AND other.log = ?2 AND one.group_id != other.group_id)
                    """
            ).execute(arguments: [id.bytes, author])
            if db.changesCount > 0 { try Self.refreshCommentCount(id.bytes, db) }
            try eraseHiddenComments(on: id.bytes, author: author)
        }
        if edited {
            // Rare: the edits came first. The row is recomputed from the post and its edits.
            try refreshPost(id.bytes)
        } else {
            searchIndex.insert(inserted, TextFolding.fold(caption))
        }
    }

    /// The row of a post its author deleted before its record arrived here: when and by whom, nothing else.
    private func insertErasedPost(_ header: RecordHeader, id: RecordID) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO post (id, author, seq, created_at, original_caption, caption, photo_sha256, photo_bytes,
                                  media_type, width, height, deleted, comment_count)
                VALUES (?1, ?2, ?3, ?4, '', '', x'', 0, 0, 0, 0, 1,
                        (SELECT count(*) FROM comment WHERE post = ?1 AND deleted = 0))
                """
        ).execute(arguments: [id.bytes, header.author.bytes, Int64(header.sequence), header.createdAt.milliseconds])
    }

    private func insertComment(
        _ header: RecordHeader,
        id: RecordID,
        post: PostID,
        text: String,
        deleted: Bool
    )
        throws
    {
        try db.cachedStatement(
            sql: """
                INSERT INTO comment (id, post, author, seq, created_at, text, deleted) VALUES (?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            id.bytes, post.bytes, header.author.bytes, Int64(header.sequence), header.createdAt.milliseconds, text,
            deleted,
        ])
        // The row is new (its id is unique), so the count goes up by one: no recount over the post's comments.
        if !deleted {
            try db.cachedStatement(sql: "UPDATE post SET comment_count = comment_count + 1 WHERE id = ?")
                .execute(arguments: [post.bytes])
        }
    }

    /// Recomputes a live post from its record and its author's edits: caption, photo, location, comment count and
    /// search entry. A photo the edits replaced is erased unless another live post shows it.
    private mutating func refreshPost(_ post: Data) throws {
        guard
            let row = try Row.fetchOne(
                try db.cachedStatement(
                    sql: """
                        SELECT post.rowid, post.author, post.photo_sha256, record.bytes, record.content FROM post
                        JOIN record ON record.author = post.author AND record.seq = post.seq
                        WHERE post.id = ? AND post.deleted = 0
                        """
                ),
                arguments: [post]
            )
        else { return }
        let rowid: Int64 = row["rowid"]
        let author: Data = row["author"]
        let header: Data = row["bytes"]
        let content: Data? = row["content"]
        guard let record = try? SignedRecord(bytes: Array(header) + Array(content ?? Data())),
            case .post(let originalCaption, var photo, var location) = record.body
        else { return }
        let (caption, edited) = try foldEdits(of: post, by: author, photo: &photo, location: &location)
        let shown = caption ?? originalCaption
        try db.cachedStatement(
            sql: """
                UPDATE post SET caption = ?, edited = ?, photo_sha256 = ?, photo_bytes = ?, media_type = ?, width = ?,
                    height = ?, taken_at = ?, lat_e7 = ?, lon_e7 = ?,
                    comment_count = (SELECT count(*) FROM comment WHERE comment.post = post.id AND deleted = 0)
                WHERE rowid = ?
                """
        ).execute(arguments: [
            shown, edited, photo.sha256.bytes, Int64(photo.byteCount), Int64(photo.mediaType.rawValue),
            Int64(photo.width), Int64(photo.height), photo.takenAt?.milliseconds, location?.latitudeE7,
            location?.longitudeE7, rowid,
        ])
        searchIndex.replace(rowid, TextFolding.fold(shown))
        let before: Data = row["photo_sha256"]
        if before != photo.sha256.bytes {
            try considerPhoto(before)
            // A replaced caption is in the search index's history: compact it away too.
            erasedText = true
        }
    }

    /// The author's edits of a post, oldest first, folded onto its photo and location: the latest caption set, if
    /// any, and whether there is any edit.
    private func foldEdits(
        of post: Data,
        by author: Data,
        photo: inout PhotoReference,
        location: inout Coordinate?
    )
        throws -> (caption: String?, edited: Bool)
    {
        var caption: String?
        var edited = false
        let edits = try Row.fetchCursor(
            try db.cachedStatement(sql: "SELECT * FROM edit WHERE post = ? AND author = ? ORDER BY seq"),
            arguments: [post, author]
        )
        while let edit = try edits.next() {
            edited = true
            if let text: String = edit["caption"] { caption = text }
            if let hash: Data = edit["photo_sha256"], let sha = AssetHash(bytes: hash) {
                photo = PhotoReference(
                    sha256: sha,
                    byteCount: UInt64(edit["photo_bytes"] as Int64),
                    mediaType: MediaType(rawValue: UInt8(edit["media_type"] as Int64)) ?? photo.mediaType,
                    width: UInt32(edit["width"] as Int64),
                    height: UInt32(edit["height"] as Int64),
                    takenAt: (edit["taken_at"] as Int64?).map(Timestamp.init(milliseconds:))
                )
            }
            switch edit["location"] as Int64 {
            case 1: location = Coordinate(latitudeE7: edit["lat_e7"], longitudeE7: edit["lon_e7"])
            case 2: location = nil
            default: break
            }
        }
        return (caption, edited)
    }

    static func refreshCommentCount(_ post: Data, _ db: Database) throws {
        try db.cachedStatement(
            sql: """
                UPDATE post SET comment_count =
                    (SELECT count(*) FROM comment WHERE comment.post = post.id AND deleted = 0)
                WHERE id = ?
                """
        ).execute(arguments: [post])
    }

    /// A post's search entry is gone (its content erased).
    mutating func removeSearchEntry(_ rowid: Int64) { searchIndex.remove(rowid) }

    static func exists(_ db: Database, _ sql: String, _ arguments: StatementArguments) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: sql), arguments: arguments) != nil
    }
}

/// The search index's changes of one transaction, kept in memory and written at its end: deletions of entries
/// already in the index, then the new entries in rowid order.
struct SearchIndexChanges {
    /// Entries to write: rowid → folded text.
    private var inserts: [Int64: String] = [:]
    /// Rowids whose entry written by an earlier transaction must go.
    private var deletes: Set<Int64> = []
    /// Rowids first indexed in this transaction (nothing older to delete).
    private var new: Set<Int64> = []

    /// A new post's entry.
    mutating func insert(_ rowid: Int64, _ folded: String) {
        if !deletes.contains(rowid) { new.insert(rowid) }
        inserts[rowid] = folded
    }

    /// A post's entry changes (an edit): the old one, if it was written before, goes.
    mutating func replace(_ rowid: Int64, _ folded: String) {
        if !new.contains(rowid) { deletes.insert(rowid) }
        inserts[rowid] = folded
    }

    /// A post's entry goes (its content was erased).
    mutating func remove(_ rowid: Int64) {
        inserts[rowid] = nil
        if !new.contains(rowid) { deletes.insert(rowid) }
    }

    func write(_ db: Database) throws {
        if !deletes.isEmpty {
            let delete = try db.cachedStatement(sql: "DELETE FROM post_search WHERE rowid = ?")
            for rowid in deletes.sorted() { try delete.execute(arguments: [rowid]) }
        }
        guard !inserts.isEmpty else { return }
        let insert = try db.cachedStatement(sql: "INSERT INTO post_search (rowid, folded) VALUES (?, ?)")
        for (rowid, folded) in inserts.sorted(by: { $0.key < $1.key }) {
            try insert.execute(arguments: [rowid, folded])
        }
    }
}
