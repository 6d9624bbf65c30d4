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
