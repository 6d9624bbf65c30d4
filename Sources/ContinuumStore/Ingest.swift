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
    /// Photos whose live posts sign different thumbnails since this transaction: their thumbnails go once it
    /// commits (``noteThumbnailContest(of:)``).
    var contestedThumbnails: Set<AssetHash> = []
    /// Whether text was erased in this transaction (the search index is then compacted, §2.6 of PROTOCOL.md).
    var erasedText = false
    /// Records that came again with the content their author had erased: the content was dropped.
    var droppedErasedContent = 0
    /// Groups whose member records changed since their members were last derived: derived again before the next
    /// record that is not a group or member record is judged, and at the end (``settleMembers()``), so that the
    /// outcome does not depend on how records were batched (PROTOCOL.md Appendix A 27).
    var touchedGroups: Set<GroupID> = []
    /// The logs this node blocked, read when first needed after the members were last derived (nil until then).
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

    /// Stores one verified record, unless it is held already (a duplicate: its content fills in a header held
    /// alone) or it forks its log (the fork is recorded as evidence instead), and applies it to the views.
    ///
    /// - Parameter local: true for a record this node is signing now; one that breaks a rule is then refused
    ///   outright, storing nothing.
    mutating func one(_ verified: VerifiedRecord, local: Bool = false) throws -> Outcome {
        let record = verified.record
        let header = record.header
        let id = record.id.bytes
        // A record is judged with every member record stored before it, a copy filling a header in too (§5.1).
        if !header.kind.isMembership { try settleMembers() }
        let held = try neighbours(author: header.author.bytes, seq: Int64(header.sequence))
        if let same = held.same {
            // The same position: the same record (a duplicate) or a fork.
            if same == id {
                try fillContent(record)
                return .duplicate
            }
            return .fork(try fork(record, conflictsWith: same, "a different record is held at this sequence"))
        }
        if let previous = header.previous, let before = held.before, before != previous.bytes {
            return .fork(try fork(record, conflictsWith: before, "previous does not match the held record"))
        }
        if let next = held.next, next.previous != id {
            return .fork(try fork(record, conflictsWith: next.id, "the held next record does not link to this one"))
        }

        let ignored = try Self.ownershipError(header, record.id, db) ?? Self.accountError(record, db)
        if local, let ignored { return .rejected(ignored) }
        // Content that its author already erased is not kept, whichever came first (§2.6).
        let erased = try isErased(header, id: record.id)
        let content = erased ? nil : record.contentBytes.flatMap { $0.isEmpty ? nil : Data($0) }
        try insertRecord(record, content: content)
        try advanceHead(author: header.author.bytes, seq: Int64(header.sequence), id: id)
        try applyToViews(header, erased ? nil : record.body, erased: erased, id: record.id, broke: ignored)
        if ignored == nil, !erased, let full = record.content { try notify(full, id: record.id) }
        return .stored(ignored: ignored)
    }

    /// The records held next to a position in a log: at the sequence before it, at it, and after it.
    private struct Neighbours {
        /// The id of the record held at the sequence before, if any.
        var before: Data?
        /// The id of the record held at this very sequence, if any: a duplicate or a fork.
        var same: Data?
        /// The record held at the sequence after, if any: its id and the previous id it links to.
        var next: (id: Data, previous: Data?)?
    }

    /// One look at the neighbourhood of `seq` in `author`'s log: the held records at seq - 1, seq and seq + 1. A
    /// record that extends a log without a gap needs none: the head remembers the record before it, and nothing
    /// after it is held.
    private func neighbours(author: Data, seq: Int64) throws -> Neighbours {
        var held = Neighbours()
        if let head = heads[author], head.contiguous == head.maxSeq, seq == head.maxSeq + 1, let last = head.lastID {
            held.before = last
            return held
        }
        let rows = try Row.fetchCursor(
            try db.cachedStatement(
                sql: "SELECT seq, id, previous FROM record WHERE author = ? AND seq BETWEEN ? AND ?"
            ),
            arguments: [author, seq - 1, seq + 1]
        )
        while let row = try rows.next() {
            let heldSeq: Int64 = row["seq"]
            let heldID: Data = row["id"]
            if heldSeq == seq {
                held.same = heldID
            } else if heldSeq == seq - 1 {
                held.before = heldID
            } else {
                held.next = (heldID, row["previous"])
            }
        }
        return held
    }

    /// Writes a record's row: its header, and its content unless erased or withheld (`content` nil).
    private func insertRecord(_ record: SignedRecord, content: Data?) throws {
        let header = record.header
        try db.cachedStatement(
            sql: """
                INSERT INTO record (id, author, seq, previous, kind, created_at, received_at, bytes, content)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            record.id.bytes, header.author.bytes, Int64(header.sequence), header.previous?.bytes,
            Int64(header.kind.rawValue), header.createdAt.milliseconds, now, Data(record.headerBytes), content,
        ])
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

    /// Edits and deletes may only target the author's own posts and comments, and comments only posts.
    /// Whether or not the target is here yet, the views apply such a record only when the target turns out to be
    /// the same author's; this check names the broken rule when it can already be seen.
    private static func ownershipError(_ header: RecordHeader, _ id: RecordID, _ db: Database) throws -> StoreError? {
        func target(_ target: RecordID) throws -> HeldTarget? { try Self.target(target, db) }
        switch (header.kind, header.references) {
        case (.edit, .post(let post)):
            guard let held = try target(post.record) else { return nil }
            if held.kind != .post {
                return .record(.malformed("an edit must target a post; \(post.short) is a \(held.kind.name)"))
            }
            if try !Self.sameOwner(held.author, header.author.bytes, db) {
                return StoreError(
                    .notOwner,
                    ContinuumCore.RecordError.notOwner(kind: .edit, target: post.record).description
                )
            }
        case (.delete, .targets(let targets)):
            return try deleteError(targets, by: header.author.bytes, db)
        case (.unknown, .opaque(let references)): return try reactionError(references, db)
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

    /// A post or comment held here that a record targets: its author, its kind and, for a comment, its post's author.
    private typealias HeldTarget = (author: Data, kind: RecordKind, postAuthor: Data?)

    private static func target(_ target: RecordID, _ db: Database) throws -> HeldTarget? {
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

    /// The rule a delete by `author` breaks, judged on the targets held here (§4.4): one that is neither a post nor a
    /// comment, or one of another owner's that is not a comment on a post of the delete's owner (a hide).
    private static func deleteError(_ targets: [RecordID], by author: Data, _ db: Database) throws -> StoreError? {
        for item in targets {
            guard let held = try target(item, db) else { continue }
            if held.kind != .post && held.kind != .comment {
                return .record(
                    .malformed("a delete may only target posts and comments; \(item.short) is a \(held.kind.name)")
                )
            }
            // The author of a post may also delete (hide) the comments of others on it; a comment whose post is not
            // here yet cannot be judged (the hide applies when the post comes, if its author signed it).
            let mayHide =
                try held.kind == .comment && (held.postAuthor.map { try sameOwner($0, author, db) } ?? true)
            if try !sameOwner(held.author, author, db), !mayHide {
                return StoreError(
                    .notOwner,
                    ContinuumCore.RecordError.notOwner(kind: .delete, target: item).description
                )
            }
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
    mutating func finish() throws {
        try settleMembers()
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
        if case .opaque(let references) = header.references {
            // Shown nowhere; remembered so that a delete, of the record or of the post it goes with, can erase it.
            try insertOpaque(references, id: id, author: author, seq: seq)
            // A reaction has its row whatever else is here: which rows count is decided when they are read, so that
            // the order of arrival does not matter (one naming a comment of another post never counts).
            if let body, let reaction = Reaction(body) { try applyReaction(reaction, header, id: id) }
            if let body, let account = AccountRecord(body, author: header.author) {
                try applyAccountRecord(account, id: id, author: header.author)
            }
            return
        }
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

        case .opaque:
            break

        case nil where header.kind == .group:
            try applyGroupRecord(header, nil, id: id)

        case nil:
            if erased { try applyErased(header, id: id) }
        }
    }

    /// A header alone, erased by its author: a deleted post or comment still has its row (without any content), so
    /// that it can be named as deleted and its comments counted. (A header alone whose content was withheld by
    /// whoever sent it shows nothing until a copy with content comes.)
    private mutating func applyErased(_ header: RecordHeader, id: RecordID) throws {
        switch (header.kind, header.references) {
        case (.post, _):
            try insertErasedPost(header, id: id)
            // Comments that came first go with a deleted post, and those its author hid with a blocked one.
            try eraseWhatGoesWith(arrivingPost: id.bytes, author: header.author.bytes)
        case (.comment, .post(let post)): try insertComment(header, id: id, post: post, text: "", deleted: true)
        default: break
        }
    }

    /// A new post's search entry.
    mutating func addSearchEntry(_ rowid: Int64, _ folded: String) { searchIndex.insert(rowid, folded) }

    /// A post's search entry changes (an edit): the old one, if it was written before, goes.
    mutating func replaceSearchEntry(_ rowid: Int64, _ folded: String) { searchIndex.replace(rowid, folded) }

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
