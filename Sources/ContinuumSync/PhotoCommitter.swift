import ContinuumCore
import Foundation
import Logging

/// Group commit of fetched photos. Whole, checked files wait here while a batch is being made durable; the next
/// batch takes all that arrived meanwhile (up to ``maxBatch``), so a lone photo waits for nothing and photos
/// arriving together share one sync and one transaction (``PhotoStorage/commitPhotos(_:)``).
actor PhotoCommitter {
    private let store: any PhotoStorage
    private let logger: Logger
    private var pending:
        [(photo: (file: URL, hash: AssetHash, bytes: Int64), waiter: CheckedContinuation<Bool, Never>)] =
            []
    private var draining = false
    /// Photos per batch at most: 64 of 2 MiB is 128 MiB written per sync.
    static let maxBatch = 64

    init(store: any PhotoStorage, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// Commits the photo in the next batch; true when it was kept.
    func commit(_ file: URL, _ hash: AssetHash, _ bytes: UInt64) async -> Bool {
        await withCheckedContinuation { waiter in
            pending.append(((file, hash, Int64(bytes)), waiter))
            if !draining {
                draining = true
                Task { await self.drain() }
            }
        }
    }

    private func drain() async {
        while !pending.isEmpty {
            let batch = Array(pending.prefix(Self.maxBatch))
            pending.removeFirst(batch.count)
            var kept = Array(repeating: false, count: batch.count)
            do {
                kept = try await store.commitPhotos(batch.map(\.photo))
            } catch {
                // The files stay in photos/tmp, whole: the next attempt at each resumes at its end and commits it.
                logger.failure("storing photos failed", error)
            }
            for (entry, stored) in zip(batch, kept) { entry.waiter.resume(returning: stored) }
        }
        draining = false
    }
}
