import ContinuumCore
import GRDB
import Synchronization

/// For each author, a sequence number at or above every record of its log that the store holds: what a session
/// reads to know, without a query, that records a peer sends cannot be held yet (``ContinuumStore/mayHold(_:from:)``).
///
/// It is raised in every write transaction of this store, from the rows inserted since the last raise (found by their
/// rowid), and read at open (from the index of logs, ``raiseFromIndex(_:)``). A transaction that then rolls back leaves
/// a ceiling too high, which only costs a lookup that finds nothing, and the last rowid seen too high: SQLite gives its
/// rowids again, so the next rows written are seen only at the next open, their ceilings too low until then. Rows
/// another process inserts (a CLI command) are seen at this store's next write; until then a ceiling may be too low.
/// A ceiling too low makes a record a peer sends that this node holds verified as if new, then found held when stored.
/// So a ceiling never decides what is stored or served, only whether a lookup is worth its cost.
final class SequenceCeilings: Sendable {
    private struct State {
        /// The highest rowid of `record` seen: rows above it are new since the last raise.
        var rowid: Int64 = 0
        var ceilings: [AuthorID: UInt64] = [:]
    }

    private let state = Mutex(State())

    /// The highest rowid of `record` seen so far: the next raise reads the rows above it.
    var lastRowid: Int64 { state.withLock { $0.rowid } }

    /// Whether the store may hold a record of `author`'s log at `sequence` or above.
    func mayHold(_ author: AuthorID, from sequence: UInt64) -> Bool {
        state.withLock { ($0.ceilings[author] ?? 0) >= sequence }
    }

    /// Raises the ceilings to the rows of `record` inserted since the last raise (all of them, the first time).
    /// Writes run one at a time, so raises do not interleave; reads of ``mayHold(_:from:)`` may run meanwhile.
    func raise(_ db: Database) throws {
        let since = state.withLock { $0.rowid }
        guard since > 0 else { return try raiseFromIndex(db) }
        // NOT INDEXED: only the new rows, by a rowid range. With the (author, seq) index, SQLite would read the
        // whole index for the GROUP BY on every write (EXPLAIN QUERY PLAN: "SCAN record USING COVERING INDEX"),
        // which made storing 100,000 records a third slower.
        let rows = try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT author, MAX(seq) AS seq, MAX(rowid) AS last FROM record NOT INDEXED
                    WHERE rowid > ? GROUP BY author
                    """
            ),
            arguments: [since]
        )
        raise(to: rows, last: rows.map { $0["last"] as Int64 }.max())
    }

    /// The first raise (at open, or while the store holds no record): each log's last record, found in the
    /// (author, seq) index by one seek per log (a skip scan: the next author after the last, then its highest
    /// sequence), and the log's last rowid. Grouping the whole log by author instead sorted all of it as every
    /// store opened: about 150 ms at 100,000 records, on every command a person types and at every node start.
    private func raiseFromIndex(_ db: Database) throws {
        let rows = try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    WITH RECURSIVE log(author) AS (
                        SELECT MIN(author) FROM record
                        UNION ALL
                        SELECT (SELECT MIN(author) FROM record WHERE author > log.author) FROM log
                        WHERE log.author IS NOT NULL
                    )
                    SELECT author, (SELECT MAX(seq) FROM record WHERE author = log.author) AS seq FROM log
                    WHERE author IS NOT NULL
                    """
            )
        )
        let last = try Int64.fetchOne(db.cachedStatement(sql: "SELECT MAX(rowid) FROM record"))
        raise(to: rows, last: last)
    }

    private func raise(to rows: [Row], last: Int64?) {
        guard !rows.isEmpty else { return }
        state.withLock { state in
            for row in rows {
                let author = AuthorID(unchecked: row["author"])
                let sequence = UInt64(max(0, row["seq"] as Int64))
                state.ceilings[author] = max(state.ceilings[author] ?? 0, sequence)
            }
            state.rowid = max(state.rowid, last ?? 0)
        }
    }
}
