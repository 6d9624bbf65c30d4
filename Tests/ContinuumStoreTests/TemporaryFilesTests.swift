import Foundation
import GRDB
import Testing

@testable import ContinuumStore

/// No copy of a page leaves the database files (PROTOCOL.md §2.6). SQLite keeps the pages a statement changes in a
/// statement journal, so that the statement alone can be undone; past 64 KiB it spilled that journal to a file of
/// its own (`etilqs_…` under /var/tmp, unlinked at once but written to the disk), whose copies of the pages, content
/// that is erased later among them, outlived the erasure. The store keeps temporary data in memory.
@Suite("Temporary files: no page of the store is copied outside its files")
struct TemporaryFilesTests {
    @Test("a statement that changes hundreds of pages in a transaction opens no temporary file")
    func statementJournalStaysInMemory() async throws {
        let temporary = try TemporaryStore(onDisk: true)
        let opened = try await temporary.store.write { db in
            // A table with a trigger: an UPDATE of it may write more than one row and abort, so SQLite journals the
            // pages it changes, as it does for some of the store's own statements.
            try db.execute(
                sql: """
                    CREATE TABLE scratch (body BLOB NOT NULL UNIQUE);
                    CREATE TABLE scratch_seen (files INTEGER NOT NULL);
                    CREATE TRIGGER scratch_changed AFTER UPDATE ON scratch
                        BEGIN INSERT INTO scratch_seen VALUES (sqlite_temporary_files()); END;
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
                    INSERT INTO scratch SELECT randomblob(500) FROM n;
                    """
            )
            db.add(
                function: DatabaseFunction("sqlite_temporary_files", argumentCount: 0, pure: false) { _ in
                    try Self.openTemporaryFiles()
                }
            )
            // Every row, on some 300 pages that existed before the statement: about 1.2 MiB of journal.
            try db.execute(sql: "UPDATE scratch SET body = randomblob(500)")
            let updated = try Int.fetchOne(db, sql: "SELECT count(*) FROM scratch_seen")
            let files = try Int.fetchOne(db, sql: "SELECT max(files) FROM scratch_seen")
            try db.execute(sql: "DROP TABLE scratch; DROP TABLE scratch_seen")
            return (updated, files)
        }
        #expect(opened.0 == 2000)
        // With `temp_store` at its default the journal was a file from the 17th page on: 1 here.
        #expect(opened.1 == 0)
    }

    /// SQLite's temporary files open in this process: unlinked, they show in /proc as `/var/tmp/etilqs_… (deleted)`.
    private static func openTemporaryFiles() throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count { descriptor in
            // A descriptor closed since the listing (another test's) has no link left: it is no temporary file here.
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + descriptor)
            return target?.contains("etilqs_") == true
        }
    }
}
