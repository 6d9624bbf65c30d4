import ContinuumCore
import Foundation
import GRDB
import Testing

@testable import ContinuumStore

/// Migrations that derive state again: a data directory written before one reads as a new one would.
@Suite("Migrations: derived state recomputed")
struct MigrationTests {
    @Test("v11: an admin the founder removed before the migration is known as one after it (its grants stand)")
    func removedAdminBeforeV11() throws {
        let queue = try DatabaseQueue()
        try Schema.migrator.migrate(
            queue,
            upTo: "v10: posts found by id in the log, records of kinds this node does not know"
        )
        let founder = Data(repeating: 1, count: 32)
        let exAdmin = Data(repeating: 2, count: 32)
        let node = Data(repeating: 9, count: 32)
        try queue.write { db in
            try db.execute(
                sql: "INSERT INTO grp (id, node, name, open) VALUES (?, ?, 'g', 0)",
                arguments: [founder, node]
            )
            // The founder made the log an admin (sequence 2), then removed it through 5 (sequence 3); the member row
            // as the code before v11 wrote it: no admin now, and nothing said it was one.
            for (id, seq, action, through) in [(0xA1, 2, 3, 0), (0xA2, 3, 2, 5)] as [(UInt8, Int, Int, Int)] {
                try db.execute(
                    sql: """
                        INSERT INTO membership (record_id, group_id, author, seq, action, node, log, through)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [Data(repeating: id, count: 32), founder, founder, seq, action, node, exAdmin, through]
                )
            }
            try db.execute(
                sql: "INSERT INTO member (log, group_id, node, admin, removed_through) VALUES (?, ?, ?, 0, 5)",
                arguments: [exAdmin, founder, node]
            )
        }
        try Schema.migrator.migrate(queue)
        let row = try queue.read { db in
            try Row.fetchOne(
                db,
                sql: "SELECT admin, was_admin, removed_through FROM member WHERE log = ?",
                arguments: [exAdmin]
            )
        }
        #expect(row?["admin"] == 0)
        #expect(row?["was_admin"] == 1)
        #expect(row?["removed_through"] == 5)
    }
}
