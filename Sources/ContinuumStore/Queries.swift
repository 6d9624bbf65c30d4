import ContinuumCore
import Foundation
import GRDB

extension ContinuumStore {
    // MARK: Feed, search, show

    /// One page of live posts, newest first, after the filters and the cursor. `viewer`: this node's id, so that its
    /// reactions under it count as its own (its log keys' always do).
    public func feed(_ query: FeedQuery, viewer: AuthorID? = nil) async throws -> FeedPage {
        let limit = max(1, min(query.limit, 500))
        return try await read { db in
            var conditions = ["post.deleted = 0"]
            var arguments = StatementArguments()
            if let mine = query.mine {
                // This node's logs, and those of the other devices of its account (PROTOCOL.md §4.4).
                conditions.append(
                    """
                    (post.author = ? OR post.author IN (SELECT public FROM log_key)
                        OR post.author IN (SELECT log FROM log_owner WHERE owner IN (
                            SELECT owner FROM log_owner JOIN log_key ON log_key.public = log_owner.log)))
                    """
                )
                arguments += [mine.bytes]
            }
            if let group = query.group {
                conditions.append("post.author IN (SELECT log FROM member WHERE group_id = ?)")
                arguments += [group.bytes]
            }
            if let author = query.author {
                conditions.append("post.author = ?")
                arguments += [author.bytes]
            }
            if let since = query.since {
                conditions.append("post.created_at >= ?")
                arguments += [since.milliseconds]
            }
            if let near = query.near {
                conditions.append(
                    "post.lat_e7 IS NOT NULL AND continuum_distance_km(post.lat_e7, post.lon_e7, ?, ?) <= ?"
                )
                arguments += [near.latitude, near.longitude, query.radiusKm ?? 10]
            }
            if let cursor = query.cursor {
                conditions.append("(post.created_at < ? OR (post.created_at = ? AND post.id < ?))")
                arguments += [cursor.createdAt.milliseconds, cursor.createdAt.milliseconds, cursor.id.bytes]
            }
            let sql = """
                \(PostSummary.selectSQL)
                WHERE \(conditions.joined(separator: " AND "))
                ORDER BY post.created_at DESC, post.id DESC
                LIMIT \(limit + 1)
                """
            let rows = try Row.fetchAll(db, sql: sql, arguments: arguments)
            let posts = try Self.withReactions(rows.prefix(limit).map(PostSummary.init(row:)), viewer: viewer, db)
            let next =
                rows.count > limit ? posts.last.map { FeedCursor(createdAt: $0.createdAt, id: $0.id).token } : nil
            return FeedPage(posts: posts, nextCursor: next)
        }
    }

    /// Live posts whose caption contains every word of the term, in any order, ignoring case and diacritics,
    /// newest first.
    ///
    /// Words of three or more characters use the FTS5 trigram index; shorter ones scan the folded captions,
    /// newest first, until a page is full.
    public func search(
        _ term: String,
        limit: Int = 50,
        viewer: AuthorID? = nil,
        group: GroupID? = nil
    ) async throws -> [PostSummary] {
        let words = TextFolding.fold(term).split(whereSeparator: { $0.isWhitespace }).map(String.init)
        guard !words.isEmpty else {
            throw StoreError(.invalidInput, "the search term is blank; give a word from a caption")
        }
        let limit = max(1, min(limit, 500))
        // FTS5 takes each long word as a quoted phrase, all of them ANDed; a short word is a LIKE on the folded
        // caption, which the trigram index cannot answer.
        let long = words.filter { $0.count >= 3 }
        let short = words.filter { $0.count < 3 }
        var conditions: [String] = []
        var arguments: [String] = []
        if !long.isEmpty {
            conditions.append("post_search MATCH ?")
            arguments.append(
                long.map { "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }.joined(separator: " AND ")
            )
        }
        for word in short {
            conditions.append("folded LIKE ? ESCAPE '\\'")
            let escaped = word.replacingOccurrences(of: "\\", with: "\\\\")
                .replacingOccurrences(of: "%", with: "\\%").replacingOccurrences(of: "_", with: "\\_")
            arguments.append("%" + escaped + "%")
        }
        let match = conditions.joined(separator: " AND ")
        var statementArguments = StatementArguments(arguments)
        if let group { statementArguments += [group.bytes] }
        let values = statementArguments
        // A group's hits are counted before the page's limit, so that other groups' posts neither take its places nor
        // tell by their absence that they exist.
        let inGroup =
            group == nil
            ? ""
            : " AND rowid IN (SELECT post.rowid FROM post WHERE post.author IN (SELECT log FROM member WHERE group_id = ?))"
        return try await read { db in
            // post.rowid (= post_search.rowid) follows creation time, so the index is walked newest first and
            // the walk stops after one page, however many captions match.
            let sql = """
                WITH hits AS (
                    SELECT rowid FROM post_search WHERE \(match)\(inGroup) ORDER BY rowid DESC LIMIT \(limit)
                )
                \(PostSummary.selectSQL)
                JOIN hits ON hits.rowid = post.rowid
                WHERE post.deleted = 0
                ORDER BY post.rowid DESC
                """
            return try Self.withReactions(
                Row.fetchAll(db, sql: sql, arguments: values).map(PostSummary.init(row:)),
                viewer: viewer,
                db
            )
        }
    }

    /// A live post and its live comments, oldest first; nil if the post is unknown or deleted. `viewer` as for
    /// ``feed(_:viewer:)``.
    public func post(_ id: PostID, viewer: AuthorID? = nil) async throws -> PostDetail? {
        try await read { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: "\(PostSummary.selectSQL) WHERE post.id = ? AND post.deleted = 0",
                    arguments: [id.bytes]
                )
            else { return nil }
            let comments = try Row.fetchAll(
                db,
                sql: """
                    SELECT comment.*, profile.name AS author_name, \(accountSQL("comment.author")) AS account
                    FROM comment
                    LEFT JOIN profile ON profile.author = comment.author
                    WHERE comment.post = ? AND comment.deleted = 0
                    ORDER BY comment.created_at, comment.id
                    """,
                arguments: [id.bytes]
            )
            var post = PostSummary(row: row)
            var shown = comments.map(CommentSummary.init(row:))
            let reactions = try Self.reactions(onPost: id.bytes, viewer: viewer, db)
            post.reactions = reactions[id.bytes] ?? .none
            for index in shown.indices { shown[index].reactions = reactions[shown[index].id.bytes] ?? .none }
            let group = try Data.fetchOne(
                db,
                sql: "SELECT group_id FROM member WHERE log = ?",
                arguments: [post.author.bytes]
            )
            return PostDetail(post: post, comments: shown, group: group.map(GroupID.init(unchecked:)))
        }
    }

    /// The posts with their reactions, read in one query.
    static func withReactions(_ posts: [PostSummary], viewer: AuthorID?, _ db: Database) throws -> [PostSummary] {
        let reactions = try reactions(to: posts.map(\.id.bytes), viewer: viewer, db)
        guard !reactions.isEmpty else { return posts }
        return posts.map { post in
            var post = post
            post.reactions = reactions[post.id.bytes] ?? .none
            return post
        }
    }

    // MARK: Ids typed by people

    /// The kinds of record an id prefix may name.
    public enum Target: Sendable, Hashable {
        case post(PostID, author: AuthorID)
        case comment(CommentID, author: AuthorID)

        public var record: RecordID {
            switch self {
            case .post(let id, _): id.record
            case .comment(let id, _): id.record
            }
        }

        public var author: AuthorID {
            switch self {
            case .post(_, let author), .comment(_, let author): author
            }
        }
    }

    /// The live post whose id starts with `text`, as in git.
    public func resolvePost(_ text: String) async throws -> PostID {
        guard case .post(let id, _) = try await resolve(text, posts: true, comments: false) else {
            throw StoreError(.notFound, "no post matches '\(text)'")
        }
        return id
    }

    /// The live post or comment whose id starts with `text`.
    public func resolveTarget(_ text: String) async throws -> Target {
        try await resolve(text, posts: true, comments: true)
    }

    private func resolve(_ text: String, posts: Bool, comments: Bool) async throws -> Target {
        let noun = comments ? "post or comment" : "post"
        guard let prefix = IDPrefix(text) else {
            throw StoreError(.invalidInput, "'\(text)' is not an id: ids are 1 to 64 hex digits (0-9, a-f)")
        }
        return try await read { db in
            var candidates: [(Target, deleted: Bool)] = []
            let range: StatementArguments = [prefix.lowerBound, prefix.upperBound]
            if posts {
                for row in try Row.fetchAll(
                    db,
                    sql: "SELECT id, author, deleted FROM post WHERE id BETWEEN ? AND ? LIMIT 11",
                    arguments: range
                ) {
                    candidates.append(
                        (
                            .post(PostID(unchecked: row["id"]), author: AuthorID(unchecked: row["author"])),
                            row["deleted"]
                        )
                    )
                }
            }
            if comments {
                for row in try Row.fetchAll(
                    db,
                    sql: """
                        SELECT comment.id, comment.author, comment.deleted OR coalesce(post.deleted, 0) AS deleted
                        FROM comment LEFT JOIN post ON post.id = comment.post
                        WHERE comment.id BETWEEN ? AND ? LIMIT 11
                        """,
                    arguments: range
                ) {
                    candidates.append(
                        (
                            .comment(CommentID(unchecked: row["id"]), author: AuthorID(unchecked: row["author"])),
                            row["deleted"]
                        )
                    )
                }
            }
            let live = candidates.filter { !$0.deleted }
            switch live.count {
            case 1:
                return live[0].0
            case 0 where !candidates.isEmpty:
                throw StoreError(.notFound, "\(noun) \(prefix) was deleted by its author")
            case 0:
                throw StoreError(.notFound, "no \(noun) matches '\(prefix)'")
            default:
                let list = live.prefix(10).map { $0.0.record.hex }.joined(separator: ", ")
                throw StoreError(
                    .ambiguous,
                    "'\(prefix)' matches several: \(list)\(live.count > 10 ? ", …" : ""); type more digits"
                )
            }
        }
    }

    /// The author of the post a comment is on, when both are here.
    public func postAuthor(ofComment comment: CommentID) async throws -> AuthorID? {
        try await read { db in
            try Data.fetchOne(
                db,
                sql: "SELECT post.author FROM comment JOIN post ON post.id = comment.post WHERE comment.id = ?",
                arguments: [comment.bytes]
            ).map { AuthorID(unchecked: $0) }
        }
    }

    /// The author whose id starts with `text`, among authors this node has records from.
    public func resolveAuthor(_ text: String) async throws -> AuthorID {
        guard let prefix = IDPrefix(text) else {
            throw StoreError(.invalidInput, "'\(text)' is not an author id: ids are 1 to 64 hex digits (0-9, a-f)")
        }
        let matches = try await read { db in
            try Data.fetchAll(
                db,
                sql: "SELECT author FROM log_head WHERE author BETWEEN ? AND ? LIMIT 11",
                arguments: [prefix.lowerBound, prefix.upperBound]
            )
        }
        switch matches.count {
        case 1: return AuthorID(unchecked: matches[0])
        case 0: throw StoreError(.notFound, "no known author matches '\(prefix)'")
        default:
            let list = matches.prefix(10).map { Hex.encode($0) }.joined(separator: ", ")
            throw StoreError(.ambiguous, "'\(prefix)' matches several authors: \(list); type more digits")
        }
    }

    // MARK: State

    /// The vector clock: per author, the highest sequence number held contiguously.
    public func clock() async throws -> VectorClock {
        try await read { db in
            var heads: [AuthorID: UInt64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT author, contiguous FROM log_head") {
                heads[AuthorID(unchecked: row["author"])] = UInt64(row["contiguous"] as Int64)
            }
            return VectorClock(heads)
        }
    }

    /// The name a peer gave in its HELLO, if it was met.
    public func peerName(_ node: AuthorID) async throws -> String? {
        try await read { db in
            try String.fetchOne(db, sql: "SELECT name FROM peer WHERE node = ?", arguments: [node.bytes])
        }
    }

    /// The display name of an author, if a Profile record is held.
    public func displayName(of author: AuthorID) async throws -> String? {
        try await read { db in
            try String.fetchOne(
                db,
                sql: """
                    SELECT name FROM own_name WHERE node = ?1
                    UNION ALL SELECT name FROM profile WHERE author = ?1 LIMIT 1
                    """,
                arguments: [author.bytes]
            )
        }
    }

    /// An `asset` row of a photo a live post shows: only those count (a photo stored for a post that was then
    /// refused, or erased while its files were going, is not the user's).
    static let liveAsset = "EXISTS (SELECT 1 FROM post WHERE post.photo_sha256 = asset.sha256 AND post.deleted = 0)"

    /// SQLite's `PRAGMA integrity_check`: the problems it finds, none when the database is sound.
    public func integrityCheck() async throws -> [String] {
        let lines = try await read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
        return lines == ["ok"] ? [] : lines
    }

    /// How much the store holds: live posts, their comments, and the photos they show.
    public func counts() async throws -> StoreCounts {
        try await read { db in
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT (SELECT count(*) FROM record) AS records,
                           (SELECT count(*) FROM log_head) AS authors,
                           (SELECT count(*) FROM post WHERE deleted = 0) AS posts,
                           (SELECT count(*) FROM comment JOIN post ON post.id = comment.post
                             WHERE comment.deleted = 0 AND post.deleted = 0) AS comments,
                           (SELECT count(*) FROM asset WHERE \(Self.liveAsset)) AS photos,
                           (SELECT coalesce(sum(bytes), 0) FROM asset WHERE \(Self.liveAsset)) AS photo_bytes,
                           (SELECT count(*) FROM fork) AS forks
                    """
            )!
            return StoreCounts(
                records: row["records"],
                authors: row["authors"],
                posts: row["posts"],
                comments: row["comments"],
                photos: row["photos"],
                photoBytes: row["photo_bytes"],
                forks: row["forks"]
            )
        }
    }

    /// Every fork detected, newest first.
    public func forks() async throws -> [ForkSummary] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM fork ORDER BY detected_at DESC").map { row in
                ForkSummary(
                    author: AuthorID(unchecked: row["author"]),
                    sequence: UInt64(row["seq"] as Int64),
                    refused: RecordID(unchecked: row["id"]),
                    kept: RecordID(unchecked: row["conflicts_with"]),
                    reason: row["reason"],
                    detectedAt: Timestamp(milliseconds: row["detected_at"])
                )
            }
        }
    }

    /// Every stored record's bytes (header, and content unless erased), in no particular order (for tests and
    /// tools).
    public func allRecordBytes() async throws -> [[UInt8]] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT bytes, content FROM record ORDER BY id").map(\.storedRecordBytes)
        }
    }
}
