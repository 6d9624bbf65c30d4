import ContinuumCore
import Foundation
import GRDB

/// The views of posts, comments and edits: the rows a record writes, and a post recomputed from its edits.
extension Ingest {
    /// An edit's row: what it changes (location: 0 unchanged, 1 set, 2 removed).
    func insertEdit(_ header: RecordHeader, id: RecordID, post: PostID, change: PostChange) throws {
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
                                  height, taken_at, thumb_sha256, location, lat_e7, lon_e7)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            id.bytes, post.bytes, header.author.bytes, Int64(header.sequence), change.caption, photo?.sha256.bytes,
            photo.map { Int64($0.byteCount) }, photo.map { Int64($0.mediaType.rawValue) },
            photo.map { Int64($0.width) }, photo.map { Int64($0.height) }, photo?.takenAt?.milliseconds,
            photo?.thumbnail?.sha256.bytes, location.code, location.lat, location.lon,
        ])
    }

    /// Writes a post's row and search entry, with the edits, tombstones and comments that arrived before it.
    mutating func insertPost(
        _ header: RecordHeader,
        id: RecordID,
        caption: String,
        photo: PhotoReference,
        location: Coordinate?
    ) throws {
        let author = header.author.bytes
        let seq = Int64(header.sequence)
        // Edits and comments may have arrived first: fold them in as the row is written.
        let pending = try earlyRecords(of: id, author: author, createdAt: header.createdAt)
        // The rowid orders posts by when they were posted (milliseconds * 1024 + a tie-breaker), so that search
        // can walk the full-text index newest first and stop after one page.
        let base = header.createdAt.milliseconds * 1024
        let rowid: Int64? = pending.taken.map { $0 + 1 < base + 1024 ? $0 + 1 : nil } ?? base
        // The rowid SQLite gave (`rowid` nil: the next free one) is read back from the connection, not with RETURNING,
        // which buffers its rows in a temporary table first: a post's insert took nearly twice as long with it.
        try db.cachedStatement(
            sql: """
                INSERT INTO post (rowid, id, author, seq, created_at, original_caption, caption, edited,
                                  photo_sha256, photo_bytes, media_type, width, height, taken_at, thumb_sha256,
                                  lat_e7, lon_e7, deleted, comment_count)
                VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)
                """
        ).execute(
            arguments: [
                rowid, id.bytes, author, seq, header.createdAt.milliseconds, caption, caption,
                photo.sha256.bytes, Int64(photo.byteCount), Int64(photo.mediaType.rawValue), Int64(photo.width),
                Int64(photo.height), photo.takenAt?.milliseconds, photo.thumbnail?.sha256.bytes,
                location?.latitudeE7, location?.longitudeE7, pending.comments,
            ]
        )
        let inserted = db.lastInsertedRowID
        if pending.comments > 0 { try settleEarlyComments(on: id.bytes, author: author) }
        try noteThumbnailContest(of: photo)
        if pending.edited {
            // Rare: the edits came first. The row is recomputed from the post and its edits.
            try refreshPost(id.bytes)
        } else {
            addSearchEntry(inserted, TextFolding.fold(caption))
        }
    }

    /// What arrived before a post's own record: whether its author edited it, how many live comments it has, and the
    /// largest rowid already taken among the 1,024 that posts made at its millisecond may have (nil: none taken).
    private func earlyRecords(
        of post: RecordID,
        author: Data,
        createdAt: Timestamp
    ) throws -> (edited: Bool, comments: Int64, taken: Int64?) {
        let row = try Row.fetchOne(
            try db.cachedStatement(
                sql: """
                    SELECT EXISTS (SELECT 1 FROM edit WHERE post = ?1
                                   AND \(ownerSQL("edit.author")) = \(ownerSQL("?2"))) AS edited,
                           (SELECT count(*) FROM comment WHERE post = ?1 AND deleted = 0) AS comments,
                           (SELECT max(rowid) FROM post WHERE rowid BETWEEN ?3 AND ?3 + 1023) AS taken
                    """
            ),
            arguments: [post.bytes, author, createdAt.milliseconds * 1024]
        )!
        return (row["edited"], row["comments"], row["taken"])
    }

    /// Comments that came before their post: those of another group than the post's go, and those its author hid
    /// are erased.
    private mutating func settleEarlyComments(on post: Data, author: Data) throws {
        try db.cachedStatement(
            sql: """
                DELETE FROM comment WHERE post = ?1 AND EXISTS (
                    SELECT 1 FROM member one, member other
                    WHERE one.log = comment.author AND other.log = ?2 AND one.group_id != other.group_id)
                """
        ).execute(arguments: [post, author])
        if db.changesCount > 0 { try Self.refreshCommentCount(post, db) }
        try eraseHiddenComments(on: post, author: author)
    }

    /// The row of a post its author deleted before its record arrived here: when and by whom, nothing else.
    func insertErasedPost(_ header: RecordHeader, id: RecordID) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO post (id, author, seq, created_at, original_caption, caption, photo_sha256, photo_bytes,
                                  media_type, width, height, deleted, comment_count)
                VALUES (?1, ?2, ?3, ?4, '', '', x'', 0, 0, 0, 0, 1,
                        (SELECT count(*) FROM comment WHERE post = ?1 AND deleted = 0))
                """
        ).execute(arguments: [id.bytes, header.author.bytes, Int64(header.sequence), header.createdAt.milliseconds])
    }

    /// A comment's row; a live one counts towards its post's comments.
    func insertComment(
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
    mutating func refreshPost(_ post: Data) throws {
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
        // A stored record that no longer decodes leaves the post as it is, rather than fail the whole ingest.
        guard let record = row.storedRecord, case .post(let originalCaption, var photo, var location) = record.body
        else { return }
        let (caption, edited) = try foldEdits(of: post, by: author, photo: &photo, location: &location)
        let shown = caption ?? originalCaption
        try db.cachedStatement(
            sql: """
                UPDATE post SET caption = ?, edited = ?, photo_sha256 = ?, photo_bytes = ?, media_type = ?, width = ?,
                    height = ?, taken_at = ?, thumb_sha256 = ?, lat_e7 = ?, lon_e7 = ?,
                    comment_count = (SELECT count(*) FROM comment WHERE comment.post = post.id AND deleted = 0)
                WHERE rowid = ?
                """
        ).execute(arguments: [
            shown, edited, photo.sha256.bytes, Int64(photo.byteCount), Int64(photo.mediaType.rawValue),
            Int64(photo.width), Int64(photo.height), photo.takenAt?.milliseconds, photo.thumbnail?.sha256.bytes,
            location?.latitudeE7, location?.longitudeE7, rowid,
        ])
        replaceSearchEntry(rowid, TextFolding.fold(shown))
        try noteThumbnailContest(of: photo)
        let before: Data = row["photo_sha256"]
        if before != photo.sha256.bytes {
            try considerPhoto(before)
            // A replaced caption is in the search index's history: compact it away too.
            erasedText = true
        }
    }

    /// The edits of a post by its owner (its author's log, or any log of its account: §4.4), oldest first by when
    /// they were signed (then by id), folded onto its photo and location: the latest caption set, if any, and whether
    /// there is any edit.
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
            try db.cachedStatement(
                sql: """
                    SELECT edit.* FROM edit JOIN record ON record.author = edit.author AND record.seq = edit.seq
                    WHERE edit.post = ?1 AND \(ownerSQL("edit.author")) = \(ownerSQL("?2"))
                    ORDER BY record.created_at, edit.author = ?2 DESC, edit.seq, edit.id
                    """
            ),
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
                    takenAt: (edit["taken_at"] as Int64?).map(Timestamp.init(milliseconds:)),
                    // The row keeps the hash alone, all that a receiver checks (the size stays in the record).
                    thumbnail: (edit["thumb_sha256"] as Data?).flatMap(AssetHash.init(bytes:)).map {
                        ThumbnailReference(sha256: $0, byteCount: 0)
                    }
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

    /// Recounts a post's live comments.
    static func refreshCommentCount(_ post: Data, _ db: Database) throws {
        try db.cachedStatement(
            sql: """
                UPDATE post SET comment_count =
                    (SELECT count(*) FROM comment WHERE comment.post = post.id AND deleted = 0)
                WHERE id = ?
                """
        ).execute(arguments: [post])
    }
}
