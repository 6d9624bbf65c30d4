import Foundation
import GRDB

/// The baseline of `push`: one durable SQLite commit on the disk the nodes use, as the store makes them (WAL,
/// `synchronous = FULL`: the commit is on disk, power loss included, when it returns), one small row each.
/// A push hop cannot be faster than the receiver's durable commit, which comes before its notification.
enum DurableCommit {
    /// Seconds per commit, for `count` commits in `directory` (a database made there and removed after).
    static func latencies(count: Int, in directory: URL) throws -> [Double] {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent("durable-commit.sqlite")
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
        }
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        let pool = try DatabasePool(path: url.path, configuration: configuration)
        // As the store does: GRDB sets NORMAL when it turns WAL on, after `prepareDatabase`.
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        try pool.write { db in
            try db.execute(sql: "CREATE TABLE sample (id INTEGER PRIMARY KEY, bytes BLOB NOT NULL)")
        }
        // About a comment record's size.
        let row = Data(repeating: 0x5A, count: 300)
        var latencies: [Double] = []
        latencies.reserveCapacity(count)
        for _ in 0..<count {
            let start = ContinuousClock.now
            try pool.write { db in try db.execute(sql: "INSERT INTO sample (bytes) VALUES (?)", arguments: [row]) }
            let elapsed = ContinuousClock.now - start
            latencies.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }
        return latencies
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
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent("record-log-floor.sqlite")
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
        }
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(sql: "PRAGMA cache_size = -16384")
        }
        let pool = try DatabasePool(path: url.path, configuration: configuration)
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
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
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return (Double(records.count) / seconds, (cpuSeconds() - cpuBefore) * 1e6 / Double(records.count))
    }
}
