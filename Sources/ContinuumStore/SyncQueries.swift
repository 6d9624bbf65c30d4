import ContinuumCore
import Foundation
import GRDB

/// A peer this node has had a session with.
public struct PeerRecord: Sendable, Hashable {
    public let id: AuthorID
    public let name: String?
    public let host: String
    public let port: Int
    public let state: String
    public let lastSeen: Timestamp
    public let recordsIn: Int64
    public let recordsOut: Int64
    public let bytesIn: Int64
    public let bytesOut: Int64

    /// The same peer with a session's counters added to its own.
    public func adding(recordsIn: Int64, recordsOut: Int64, bytesIn: Int64, bytesOut: Int64) -> PeerRecord {
        PeerRecord(
            id: id,
            name: name,
            host: host,
            port: port,
            state: state,
            lastSeen: lastSeen,
            recordsIn: self.recordsIn + recordsIn,
            recordsOut: self.recordsOut + recordsOut,
            bytesIn: self.bytesIn + bytesIn,
            bytesOut: self.bytesOut + bytesOut
        )
    }
}

extension ContinuumStore {
    /// Records stored after `rowid`, oldest first, at most `limit`.
    public func records(after rowid: Int64, limit: Int = 1000) async throws -> [StoredRecord] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT rowid, id, author, seq, bytes, content FROM record WHERE rowid > ? ORDER BY rowid LIMIT ?",
                arguments: [rowid, limit]
            ).map(StoredRecord.init(row:))
        }
    }

    /// The rowid of the last stored record (0 when empty).
    public func lastRecordRowid() async throws -> Int64 {
        try await read { db in try Int64.fetchOne(db, sql: "SELECT max(rowid) FROM record") ?? 0 }
    }

    /// Whether the store may hold a record of `author`'s log at `sequence` or above. False means it holds none,
    /// but for rows another process wrote since this store's last write (``SequenceCeilings``): a hint for
    /// skipping a lookup, never a reason to refuse or leave out a record.
    public func mayHold(_ author: AuthorID, from sequence: UInt64) -> Bool {
        ceilings.mayHold(author, from: sequence)
    }

    /// An author's records in a sequence range, in log order, at most `limit` of them and about `maxBytes`.
    public func storedRecords(
        of author: AuthorID,
        in range: ClosedRange<UInt64>,
        limit: Int,
        maxBytes: Int
    )
        async throws -> [StoredRecord]
    {
        try await read { db in
            let cursor = try Row.fetchCursor(
                db,
                sql: """
                    SELECT rowid, id, author, seq, bytes, content FROM record
                    WHERE author = ? AND seq BETWEEN ? AND ? ORDER BY seq LIMIT ?
                    """,
                arguments: [author.bytes, Int64(range.lowerBound), Int64(range.upperBound), limit]
            )
            var result: [StoredRecord] = []
            var total = 0
            while let row = try cursor.next() {
                let record = StoredRecord(row: row)
                if !result.isEmpty && total + record.bytes.count > maxBytes { break }
                total += record.bytes.count
                result.append(record)
            }
            return result
        }
    }

    /// Bytes of the records in the given ranges (for announcing how much a sync will send).
    public func byteCount(of ranges: [AuthorID: ClosedRange<UInt64>]) async throws -> (records: UInt64, bytes: UInt64) {
        try await read { db in
            var records: UInt64 = 0
            var bytes: UInt64 = 0
            for (author, range) in ranges {
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT count(*) AS n, coalesce(sum(length(bytes) + coalesce(length(content), 0)), 0) AS b FROM record
                        WHERE author = ? AND seq BETWEEN ? AND ?
                        """,
                    arguments: [author.bytes, Int64(range.lowerBound), Int64(range.upperBound)]
                )!
                records += UInt64(row["n"] as Int64)
                bytes += UInt64(row["b"] as Int64)
            }
            return (records, bytes)
        }
    }

    /// Live posts whose photo is not here yet, newest first, with the thumbnail they sign (as
    /// ``committedThumbnails(of:)`` reads it) when it is one.
    public func missingPhotos(limit: Int = 100) async throws -> [MissingPhoto] {
        try await read { db in try Self.missingPhotos(limit: limit, db) }
    }

    /// The same, unless nothing it reads changed since the look that returned `version` (`photos` is then nil):
    /// reading every live post again costs about 70 ms at 27,000 of them, and the fetcher looks at every event
    /// (a peer's answer, a clock, a session), most of which change none of it. `version` counts those changes,
    /// made by the store's triggers in whichever process writes (the v21 migration).
    public func missingPhotos(
        limit: Int,
        changedSince version: Int64?
    ) async throws -> (version: Int64, photos: [MissingPhoto]?) {
        try await read { db in
            let current = try Int64.fetchOne(db, sql: "SELECT version FROM photo_look")
            if let current, current == version { return (current, nil) }
            // Versions start at 0: without the row (which the migration writes and nothing removes) every look reads.
            return (current ?? -1, try Self.missingPhotos(limit: limit, db))
        }
    }

    /// The photos missing here that the live posts `posts` show, each as a look gives it (its size, groups and
    /// signed thumbnail from every live post that shows it), newest first: for posts that just arrived, read through
    /// the photo index without reading every live post as a look does. An erased post, or one not held, gives none.
    public func missingPhotos(shownBy posts: [PostID]) async throws -> [MissingPhoto] {
        guard !posts.isEmpty else { return [] }
        return try await read { db in
            try Self.missingPhotos(
                limit: posts.count,
                db,
                among: """
                    AND photo_sha256 IN (SELECT photo_sha256 FROM post
                        WHERE deleted = 0 AND id IN (\(databaseQuestionMarks(count: posts.count))))
                    """,
                arguments: StatementArguments(posts.map(\.bytes))
            )
        }
    }

    /// The missing photos of the live posts `filter` (SQL on `post`, with `arguments`) keeps, at most `limit`.
    private static func missingPhotos(
        limit: Int,
        _ db: Database,
        among filter: String = "",
        arguments: StatementArguments = []
    ) throws -> [MissingPhoto] {
        try Row.fetchAll(
            db,
            sql: """
                SELECT photo_sha256, max(photo_bytes) AS bytes, max(id) AS post,
                    group_concat(DISTINCT hex(member.group_id)) AS groups, max(thumb_sha256 IS NOT NULL) AS signed,
                    CASE WHEN min(thumb_sha256) = max(thumb_sha256) THEN max(thumb_sha256) END AS thumb
                FROM post LEFT JOIN member ON member.log = post.author
                WHERE deleted = 0 AND NOT EXISTS (SELECT 1 FROM asset WHERE asset.sha256 = post.photo_sha256) \(filter)
                GROUP BY photo_sha256 ORDER BY max(created_at) DESC LIMIT ?
                """,
            arguments: arguments + [limit]
        ).map {
            MissingPhoto(
                hash: AssetHash(unchecked: $0["photo_sha256"]),
                bytes: UInt64($0["bytes"] as Int64),
                post: PostID(unchecked: $0["post"]),
                groups: Set(
                    ($0["groups"] as String?)?.split(separator: ",").compactMap { GroupID(hex: $0.lowercased()) }
                        ?? []
                ),
                signsThumbnail: $0["signed"] as Bool,
                signedThumbnail: ($0["thumb"] as Data?).flatMap(AssetHash.init(bytes:))
            )
        }
    }

    /// True when the complete photo is here.
    public func hasPhoto(_ hash: AssetHash) async throws -> Bool {
        try await read { db in
            try Bool.fetchOne(db, sql: "SELECT 1 FROM asset WHERE sha256 = ?", arguments: [hash.bytes]) != nil
        }
    }

    // MARK: Peers

    /// Records a session with a peer, and where to dial it.
    public func rememberPeer(_ id: AuthorID, name: String?, host: String, port: Int, state: String) async throws {
        let now = Timestamp.now().milliseconds
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO peer (node, name, host, port, state, last_seen) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (node) DO UPDATE SET name = coalesce(excluded.name, peer.name),
                        host = excluded.host, port = CASE WHEN excluded.port > 0 THEN excluded.port ELSE peer.port END,
                        state = excluded.state, last_seen = excluded.last_seen
                    """,
                arguments: [id.bytes, name, host, port, state, now]
            )
        }
    }

    /// The last clock this node sent the peer at the start of a round, and the last it received from it, as the
    /// sync layer encoded them; nil when there is none (or the peer is unknown).
    public func peerClocks(_ id: AuthorID) async throws -> (sent: [UInt8]?, received: [UInt8]?) {
        try await read { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: "SELECT clock_sent, clock_received FROM peer WHERE node = ?",
                    arguments: [id.bytes]
                )
            else { return (nil, nil) }
            return (
                (row["clock_sent"] as Data?).map { [UInt8]($0) }, (row["clock_received"] as Data?).map { [UInt8]($0) }
            )
        }
    }

    /// Remembers the clock just sent to a peer (`sent`) or received from it.
    public func setPeerClock(_ id: AuthorID, sent: [UInt8]? = nil, received: [UInt8]? = nil) async throws {
        try await write { db in
            if let sent {
                try db.execute(sql: "UPDATE peer SET clock_sent = ? WHERE node = ?", arguments: [Data(sent), id.bytes])
            }
            if let received {
                try db.execute(
                    sql: "UPDATE peer SET clock_received = ? WHERE node = ?",
                    arguments: [Data(received), id.bytes]
                )
            }
        }
    }

    /// Updates a peer's state and adds to its traffic counters.
    public func updatePeer(
        _ id: AuthorID,
        state: String,
        recordsIn: Int64 = 0,
        recordsOut: Int64 = 0,
        bytesIn: Int64 = 0,
        bytesOut: Int64 = 0
    ) async throws {
        let now = Timestamp.now().milliseconds
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE peer SET state = ?, last_seen = ?, records_in = records_in + ?,
                        records_out = records_out + ?, bytes_in = bytes_in + ?, bytes_out = bytes_out + ?
                    WHERE node = ?
                    """,
                arguments: [state, now, recordsIn, recordsOut, bytesIn, bytesOut, id.bytes]
            )
        }
    }

    /// Every peer met, most recently seen first. Each is named as its posts are: by the newest profile its logs
    /// signed (the name its HELLO gave is a hint from when the session began, nil when it had none then), else by
    /// that hint.
    public func peers() async throws -> [PeerRecord] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT peer.*, (
                        SELECT profile.name FROM member
                        JOIN profile ON profile.author = member.log
                        JOIN record ON record.author = profile.author AND record.seq = profile.seq
                        WHERE member.node = peer.node
                        ORDER BY record.created_at DESC LIMIT 1
                    ) AS profile_name
                    FROM peer ORDER BY last_seen DESC
                    """
            ).map { row in
                PeerRecord(
                    id: AuthorID(unchecked: row["node"]),
                    name: (row["profile_name"] as String?) ?? row["name"],
                    host: row["host"],
                    port: row["port"],
                    state: row["state"],
                    lastSeen: Timestamp(milliseconds: row["last_seen"]),
                    recordsIn: row["records_in"],
                    recordsOut: row["records_out"],
                    bytesIn: row["bytes_in"],
                    bytesOut: row["bytes_out"]
                )
            }
        }
    }

    // MARK: What peers lacked

    /// What a peer said it lacks (``PeerLack``), as saved by ``saveLacks(_:)``.
    public func peerLacks(_ peer: AuthorID) async throws -> [PeerLack] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT sha256, kind, retry_at, attempts FROM peer_lack WHERE peer = ?",
                arguments: [peer.bytes]
            ).map { row in
                PeerLack(
                    peer: peer,
                    hash: AssetHash(unchecked: row["sha256"]),
                    kind: PeerLack.Kind(rawValue: row["kind"]) ?? .photo,
                    retryAt: Timestamp(milliseconds: row["retry_at"]),
                    attempts: row["attempts"]
                )
            }
        }
    }

    /// Saves lacks (`attempts` > 0) and forgets others (`attempts` == 0), in one transaction.
    public func saveLacks(_ lacks: [PeerLack]) async throws {
        guard !lacks.isEmpty else { return }
        try await write { db in
            for lack in lacks {
                if lack.attempts > 0 {
                    // Only for a photo a live post shows: the hash of an erased photo is not kept (§2.6).
                    try db.execute(
                        sql: """
                            INSERT OR REPLACE INTO peer_lack (peer, sha256, kind, retry_at, attempts)
                            SELECT ?1, ?2, ?3, ?4, ?5
                            WHERE EXISTS (SELECT 1 FROM post WHERE photo_sha256 = ?2 AND deleted = 0)
                            """,
                        arguments: [
                            lack.peer.bytes, lack.hash.bytes, lack.kind.rawValue, lack.retryAt.milliseconds,
                            lack.attempts,
                        ]
                    )
                } else {
                    try db.execute(
                        sql: "DELETE FROM peer_lack WHERE peer = ? AND sha256 = ? AND kind = ?",
                        arguments: [lack.peer.bytes, lack.hash.bytes, lack.kind.rawValue]
                    )
                }
            }
        }
    }

    /// Marks every peer as disconnected (on start, after a crash).
    public func resetPeerStates() async throws {
        try await write { db in try db.execute(sql: "UPDATE peer SET state = 'disconnected'") }
    }
}

extension Row {
    /// A stored record's bytes whole: its header (`bytes`) and its content (`content`; none once erased).
    var storedRecordBytes: [UInt8] { Array(self["bytes"] as Data) + Array(self["content"] as Data? ?? Data()) }

    /// The stored record, decoded. Stored records were verified before they were stored: one that no longer decodes
    /// (nil) counts as not held, and each caller says what that leaves.
    var storedRecord: SignedRecord? { try? SignedRecord(bytes: storedRecordBytes) }
}

extension StoredRecord {
    /// From a row with the record's header (`bytes`) and content: what is sent is the header, then the content
    /// unless it was erased.
    init(row: Row) {
        let bytes = row.storedRecordBytes
        self.init(
            rowid: row["rowid"],
            id: RecordID(unchecked: row["id"]),
            author: AuthorID(unchecked: row["author"]),
            sequence: UInt64(row["seq"] as Int64),
            bytes: bytes
        )
    }
}
