import Foundation
import GRDB
import GRDBSQLite
import Logging
import Synchronization

/// Copies the write-ahead log back into the database file on a thread of its own, so that no commit waits for it.
///
/// SQLite's auto-checkpoint runs inside the commit that crosses its threshold: that batch's writer copied the WAL's
/// pages (up to 32 MiB) into the file and synced it while the batch's records waited for their ACK, on the thread
/// that stores every record. Here the writer's WAL hook only asks, and a connection of its own copies and syncs, in
/// passive mode: it waits for no reader or writer and blocks none. A commit is as durable as before (the writer still
/// syncs the WAL at each one); only where its pages are copied back, and when, changes.
///
/// A passive checkpoint copies the frames committed when it starts, so while writes keep coming the WAL is never all
/// copied at the start of a transaction, and SQLite cannot start it over. When it reaches ``Limits/inline`` pages the
/// writer checkpoints itself (passive too), as SQLite's own hook would: by then the background has copied nearly
/// every frame, so that checkpoint is short, and the next transaction starts the WAL over.
final class WALCheckpointer: Sendable {
    /// When a checkpoint is asked of the background, and when the writer does it itself, in WAL pages.
    struct Limits: Sendable {
        /// From this many pages in the WAL after a commit (32 MiB of 4 KiB pages, SQLite's auto-checkpoint before):
        /// a page that many transactions change is copied back once.
        var background: Int32 = 8192
        /// From this many (128 MiB), the committing writer checkpoints itself.
        var inline: Int32 = 32768
    }

    private struct State: ~Copyable {
        /// A background checkpoint is queued and has not started yet.
        var asked = false
        var closed = false
        /// The checkpoints' connection, opened at the first.
        var connection: DatabaseQueue?
        /// Checkpoints done in the background, and tried by the writer itself.
        var done = (background: 0, inline: 0)
    }

    let limits: Limits
    private let path: String
    private let logger: Logger
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "continuum.wal-checkpoint")

    init(databasePath: String, limits: Limits = Limits(), logger: Logger) {
        self.path = databasePath
        self.limits = limits
        self.logger = logger
    }

    /// Checkpoints done so far in the background, and tried by the writer itself (one the background's running
    /// checkpoint kept busy counts too).
    var checkpoints: (background: Int, inline: Int) { state.withLock { $0.done } }

    /// Makes this checkpointer the WAL hook of the writer's connection, in place of SQLite's auto-checkpoint.
    ///
    /// The hook's context is `self`, unretained: the store's configuration, which its database keeps until its last
    /// connection is closed, holds this checkpointer, so it outlives the connection whose commits call the hook.
    func install(on db: Database) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_wal_hook(
            db.sqliteConnection,
            { context, connection, name, pages in
                guard let context else { return SQLITE_OK }
                Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue()
                    .committed(walPages: pages, connection: connection, name: name)
                return SQLITE_OK
            },
            context
        )
    }

    /// After each commit of the writer, on its thread, the WAL holding `walPages` pages.
    private func committed(walPages: Int32, connection: OpaquePointer?, name: UnsafePointer<CChar>?) {
        if walPages >= limits.inline {
            // As SQLite's own hook: the result is not looked at, since a checkpoint that cannot run now (the
            // background's is running) or fails leaves the WAL as it is, every commit in it still durable, and the
            // next commit tries again.
            _ = sqlite3_wal_checkpoint_v2(connection, name, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            state.withLock { $0.done.inline += 1 }
        } else if walPages >= limits.background {
            ask()
        }
    }

    /// Queues a background checkpoint, unless one is queued and not started yet (it will copy this commit too).
    private func ask() {
        let queued = state.withLock { state -> Bool in
            guard !state.asked, !state.closed else { return false }
            state.asked = true
            return true
        }
        if queued { queue.async { self.checkpoint() } }
    }

    /// One passive checkpoint, on ``queue``.
    private func checkpoint() {
        let open = state.withLock { state -> (closed: Bool, connection: DatabaseQueue?) in
            state.asked = false
            return (state.closed, state.connection)
        }
        guard !open.closed else { return }
        do {
            guard let connection = try open.connection ?? openConnection() else { return }
            _ = try connection.writeWithoutTransaction { db in try db.checkpoint(.passive) }
            state.withLock { $0.done.background += 1 }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY {
            // Another connection (the writer, past the inline limit, or another process's) is checkpointing.
            logger.debug("the WAL is being checkpointed by another connection")
        } catch {
            // The WAL keeps every commit; the writer checkpoints itself once it reaches the inline limit.
            logger.warning("the WAL could not be checkpointed in the background", metadata: ["error": "\(error)"])
        }
    }

    /// The connection that checkpoints, kept for the next ones (nil: the store was closed meanwhile). It syncs the
    /// WAL before copying it, and the file after.
    private func openConnection() throws -> DatabaseQueue? {
        var configuration = Configuration()
        configuration.label = "continuum-checkpoint"
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        let connection = try DatabaseQueue(path: path, configuration: configuration)
        let kept = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.connection = connection
            return true
        }
        guard kept else {
            try connection.close()
            return nil
        }
        return connection
    }

    /// Holds the checkpoints' thread, from when it is free, until the returned closure is called: a checkpoint asked
    /// meanwhile waits (tests).
    func hold() async -> @Sendable () -> Void {
        let held = DispatchSemaphore(value: 0)
        await withCheckedContinuation { (reached: CheckedContinuation<Void, Never>) in
            queue.async {
                reached.resume()
                held.wait()
            }
        }
        return { held.signal() }
    }

    /// Returns once every checkpoint asked before the call has run (tests).
    func settled() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in queue.async { done.resume() } }
    }

    /// Waits for a checkpoint under way, then closes the connection; none starts after.
    func close() throws {
        let connection = state.withLock { state -> DatabaseQueue? in
            state.closed = true
            defer { state.connection = nil }
            return state.connection
        }
        queue.sync {}
        try connection?.close()
    }
}
