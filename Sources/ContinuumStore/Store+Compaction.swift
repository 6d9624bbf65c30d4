import ContinuumCore
import Foundation
import GRDB

// The last step of an erasure (PROTOCOL.md §2.6): the search index merged and the WAL truncated, so that no segment
// and no old page keeps erased text.

extension ContinuumStore {
    /// How long a write that erased text waits, before it returns, for readers to let go of the WAL (each try also
    /// waits for a write under way, which this does not bound). A reader holds it for milliseconds; one that holds it
    /// longer (the running node reading while a command deletes) leaves the truncation to the background and to
    /// ``handingUnfinishedErasures(to:)``.
    static let truncationWait: Duration = .seconds(3)

    /// This store, calling `handOff` whenever an erasure's WAL truncation is left to the background because a
    /// reader (perhaps of another process) held the WAL for ``truncationWait``. The background retries last as long
    /// as this process keeps the store open: a command, which exits at once, hands the truncation to the running
    /// node (``truncateWALInBackground()`` there). `handOff` runs on a thread of the compaction's own, and may block.
    public func handingUnfinishedErasures(to handOff: @escaping @Sendable () -> Void) -> ContinuumStore {
        var store = self
        store.unfinishedErasure = handOff
        return store
    }

    /// After a transaction that erased content: the photo files go at once; then the search index is merged so
    /// that no segment keeps an erased caption's trigrams, and the WAL is checkpointed and truncated so that no
    /// old page keeps erased text (freed pages were zeroed by `secure_delete`). `coalesce` (records from peers)
    /// leaves that compaction to the ``ErasureCompactor``, which does it once a burst of erasures has been quiet for a
    /// second (at most 10 s after the first); otherwise (this process's own delete or edit) it is done before
    /// returning, unless a reader holds the WAL for ``truncationWait``.
    func finishErasure(photos: [AssetHash], text: Bool, coalesce: Bool = false) async throws {
        // Checked again: a post of the same photo may have been stored since the erasure committed.
        for photo in photos where try await !isPhotoShown(photo) { assets.erase(photo) }
        guard text || !photos.isEmpty else { return }
        if coalesce {
            await compactor.schedule(self)
        } else {
            try await compact()
        }
    }

    /// Merges the search index and truncates the WAL. Readers that hold the WAL are waited for, at most
    /// ``truncationWait``; past that the truncation is retried in the background while the store is open, and
    /// ``unfinishedErasure`` is told.
    func compact() async throws {
        // Background work on a store that may be closed meanwhile: each step runs only while it is open, and
        // close() waits for a step under way (a database used after close() crashes inside SQLite).
        try await compactor.offPool {
            _ = try lifecycle.whileOpen {
                try database.write { db in
                    try db.execute(sql: "INSERT INTO post_search (post_search) VALUES ('optimize')")
                }
            }
        }
        if await truncateWALSoon() || lifecycle.isClosed { return }
        await compactor.truncateInBackground(self)
        if let handOff = unfinishedErasure { await compactor.offPool(handOff) }
    }

    /// Truncates the WAL as soon as no reader holds it, retrying in the background while the store is open: the
    /// running node does this for a command whose erasure a reader kept from finishing
    /// (``handingUnfinishedErasures(to:)``).
    public func truncateWALInBackground() async {
        await compactor.truncateInBackground(self)
    }

    /// Tries to truncate the WAL, with pauses from 2 ms growing to 100 ms, until it is done (true) or
    /// ``truncationWait`` has passed (false).
    private func truncateWALSoon() async -> Bool {
        let deadline = ContinuousClock.now + Self.truncationWait
        var pause = Duration.milliseconds(2)
        while await !compactor.offPool({ truncateWAL() }) {
            guard !lifecycle.isClosed, ContinuousClock.now + pause < deadline else { return false }
            do {
                try await Task.sleep(for: pause)
            } catch {
                return false  // Cancelled: the background retries take over.
            }
            pause = min(pause * 2, .milliseconds(100))
        }
        return true
    }

    /// Checkpoints the WAL into the database file and truncates it, without waiting for readers; false when a
    /// reader kept it busy (or the store is closed). It waits for the writer (a batch being stored): run it with
    /// ``ErasureCompactor/offPool(_:)``, not on the cooperative pool.
    func truncateWAL() -> Bool {
        do {
            let done: Bool? = try lifecycle.whileOpen { () throws -> Bool in
                try database.writeWithoutTransaction { db in
                    // The writer's 10 s busy timeout would hold every other write while a reader finishes.
                    try db.execute(sql: "PRAGMA busy_timeout = 0")
                    defer { restoreBusyTimeout(db) }
                    let result = try db.checkpoint(.truncate)
                    if result.walFrameCount > 0 { throw StoreError(.database, "the WAL is still in use") }
                }
                return true
            }
            return done == true
        } catch {
            logger.debug("the WAL could not be truncated yet", metadata: ["error": "\(error)"])
            return false
        }
    }

    /// Puts the writer's busy timeout back after ``truncateWAL()`` set it to 0. Logged when it cannot be: this
    /// connection's writes would then fail at once while another process writes, instead of waiting for it.
    private func restoreBusyTimeout(_ db: Database) {
        do {
            try db.execute(sql: "PRAGMA busy_timeout = \(Self.busyTimeoutMilliseconds)")
        } catch {
            logger.error("cannot restore the database's busy timeout", metadata: ["error": "\(error)"])
        }
    }
}

/// Runs ``ContinuumStore/compact()`` once for a burst of erasures: a full merge of the search index costs time in
/// proportion to the index, so a sync that brings many deletes in many batches merges once, when erasures have
/// stopped for ``quiet``, not once per batch. A stream of erasures that never stops is compacted every ``longest``.
/// It also retries, in one loop, a WAL truncation that readers kept from finishing.
actor ErasureCompactor {
    /// Erasures not yet compacted: when the first and the last of them were scheduled.
    private var pending: (first: ContinuousClock.Instant, last: ContinuousClock.Instant)?
    private var running = false
    /// Whether the loop of ``truncateInBackground(_:)`` runs.
    private var truncating = false
    /// The thread of the compaction's steps: each waits for the database's writer (a batch being stored, for tens of
    /// milliseconds) and then runs a merge or a checkpoint, which must not hold one of the cooperative pool's threads,
    /// which carry every session.
    private nonisolated let steps = DispatchQueue(label: "continuum.erasure-compaction")
    static let quiet: Duration = .seconds(1)
    static let longest: Duration = .seconds(10)

    /// Compacts now if erasures are pending; a scheduled run then finds nothing to do.
    func flush(_ store: ContinuumStore) async {
        guard pending != nil else { return }
        pending = nil
        await compact(store)
    }

    func schedule(_ store: ContinuumStore) {
        let now = ContinuousClock.now
        pending = (pending?.first ?? now, now)
        guard !running else { return }
        running = true
        Task { await run(store) }
    }

    /// Truncates the WAL at once if no reader holds it, else every second for half a minute, then every half minute,
    /// while the store is open. One loop at a time: a truncation done covers every erasure before it.
    func truncateInBackground(_ store: ContinuumStore) {
        guard !truncating else { return }
        truncating = true
        Task { await retryTruncation(store) }
    }

    private func retryTruncation(_ store: ContinuumStore) async {
        var attempt = 0
        while !store.lifecycle.isClosed, await !offPool({ store.truncateWAL() }) {
            attempt += 1
            if attempt == 31 {
                store.logger.warning("a reader has kept the WAL busy for 30 s after an erasure; still trying")
            }
            // Dropped on purpose: nothing cancels this task, and a sleep cut short only tries again sooner.
            try? await Task.sleep(for: .seconds(attempt <= 30 ? 1 : 30))
        }
        truncating = false
    }

    /// Runs `step` on the compaction's own thread (``steps``).
    nonisolated func offPool<T: Sendable>(_ step: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { done in steps.async { done.resume(returning: step()) } }
    }

    /// Runs `step` on the compaction's own thread (``steps``); its error is rethrown here.
    nonisolated func offPool<T: Sendable>(_ step: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { done in steps.async { done.resume(with: Result { try step() }) } }
    }

    /// The moment the pending erasures are due: a quiet second after the last, or ``longest`` after the first.
    private var due: ContinuousClock.Instant? {
        pending.map { min($0.last + Self.quiet, $0.first + Self.longest) }
    }

    private func run(_ store: ContinuumStore) async {
        while let due {
            if ContinuousClock.now < due {
                try? await Task.sleep(until: due, clock: .continuous)
                continue  // Erasures that came meanwhile moved the due time; look again.
            }
            pending = nil
            await compact(store)
        }
        running = false
    }

    private func compact(_ store: ContinuumStore) async {
        do {
            try await store.compact()
        } catch {
            store.logger.warning(
                "compacting after an erasure failed; the next erasure compacts again",
                metadata: ["error": "\(error)"]
            )
        }
    }
}
