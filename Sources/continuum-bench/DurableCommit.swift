import Foundation
import GRDB

/// A database made in `directory` for a baseline, removed after `body`: WAL with `synchronous = FULL` and the
/// writer's 16 MiB page cache, as the store opens its own (a commit is on disk, power loss included, when it
/// returns).
private func withDurableDatabase<T>(
    _ name: String,
    in directory: URL,
    _ body: (DatabasePool) throws -> T
) throws -> T {
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let url = directory.appendingPathComponent(name)
    defer {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
    }
    var configuration = Configuration()
    configuration.prepareDatabase { db in
        try db.execute(sql: "PRAGMA synchronous = FULL")
        try db.execute(sql: "PRAGMA cache_size = -16384")
    }
    let pool = try DatabasePool(path: url.path, configuration: configuration)
    // As the store does: GRDB sets NORMAL when it turns WAL on, after `prepareDatabase`.
    try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
    return try body(pool)
}

/// The baseline of `push`: one durable SQLite commit on the disk the nodes use, as the store makes them, one small
/// row each. A push hop cannot be faster than the receiver's durable commit, which comes before its notification.
enum DurableCommit {
    /// Seconds per commit, for `count` commits in `directory` (a database made there and removed after).
    static func latencies(count: Int, in directory: URL) throws -> [Double] {
        try withDurableDatabase("durable-commit.sqlite", in: directory) { pool in
            try pool.write { db in
                try db.execute(sql: "CREATE TABLE sample (id INTEGER PRIMARY KEY, bytes BLOB NOT NULL)")
            }
            // About a comment record's size.
            let row = Data(repeating: 0x5A, count: 300)
            var latencies: [Double] = []
            latencies.reserveCapacity(count)
            for _ in 0..<count {
                let start = ContinuousClock.now
                try pool.write { db in
                    try db.execute(sql: "INSERT INTO sample (bytes) VALUES (?)", arguments: [row])
                }
                latencies.append(seconds(since: start))
            }
            return latencies
        }
    }
}

/// The baseline of `store`: SQLite's own rate on this disk for a log of records, durable batches of rows into a
/// table with a unique random 32-byte id and a unique (author, sequence), as a store of signed records needs at
/// the least (no views, no search index, no rule read). A record cannot be stored faster than its log row.
enum RecordLogFloor {
    /// Rows a second, and CPU microseconds a row, for `records` (id, author, sequence, bytes) written in
    /// transactions of `batch` rows into a database made in `directory` and removed after.
    static func measure(
        _ records: [(id: Data, author: Data, sequence: Int64, bytes: Data)],
        batch: Int,
        in directory: URL,
        cpuSeconds: () -> Double
    ) throws -> (perSecond: Double, cpuMicroseconds: Double) {
        try withDurableDatabase("record-log-floor.sqlite", in: directory) { pool in
            try pool.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE record (id BLOB NOT NULL UNIQUE, author BLOB NOT NULL, seq INTEGER NOT NULL,
                                             bytes BLOB NOT NULL, UNIQUE (author, seq))
                        """
                )
            }
            let cpuBefore = cpuSeconds()
            let start = ContinuousClock.now
            for first in stride(from: 0, to: records.count, by: batch) {
                try pool.write { db in
                    let insert = try db.cachedStatement(
                        sql: "INSERT INTO record (id, author, seq, bytes) VALUES (?, ?, ?, ?)"
                    )
                    for record in records[first..<min(first + batch, records.count)] {
                        try insert.execute(arguments: [record.id, record.author, record.sequence, record.bytes])
                    }
                }
            }
            let elapsed = seconds(since: start)
            return (Double(records.count) / elapsed, (cpuSeconds() - cpuBefore) * 1e6 / Double(records.count))
        }
    }
}
