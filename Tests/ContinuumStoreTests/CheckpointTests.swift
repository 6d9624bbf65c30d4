import ContinuumCore
import ContinuumTestSupport
import Foundation
import GRDB
import Logging
import Testing

@testable import ContinuumStore

/// The WAL is copied back into the database file by the checkpointer's own connection, not by the commit that fills
/// it (WALCheckpointer): a batch's records are acknowledged without waiting for a checkpoint, and the WAL stays
/// bounded.
@Suite("WAL checkpoints off the writer")
struct CheckpointTests {
    /// A store on disk whose checkpoints are asked from `background` WAL pages, and done by the writer from `inline`.
    final class DiskStore: Sendable {
        let directory: DataDirectory
        let store: ContinuumStore
        let checkpointer: WALCheckpointer

        init(background: Int32, inline: Int32) throws {
            directory = DataDirectory(
                url: FileManager.default.temporaryDirectory.appendingPathComponent("continuum-test-\(UUID())")
            )
            try directory.create()
            store = try ContinuumStore(
                databaseURL: directory.databaseURL,
                assets: AssetStore(root: directory.photosURL),
                logger: Logger(label: "test"),
                checkpoints: .init(background: background, inline: inline)
            )
            checkpointer = try #require(store.checkpointer)
        }

        /// Bytes of the database file itself: pages reach it only through checkpoints.
        func fileBytes() throws -> Int {
            try #require(FileManager.default.attributesOfItem(atPath: directory.databaseURL.path)[.size] as? Int)
        }

        /// Pages in the WAL (its header is 32 bytes; each frame a 24-byte header and a 4 KiB page).
        func walPages() throws -> Int {
            let path = directory.databaseURL.path + "-wal"
            let bytes = try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
            return (bytes - 32) / (24 + 4096)
        }

        deinit {
            try? store.close()
            try? FileManager.default.removeItem(at: directory.url)
        }
    }

    static func posts(_ count: Int) -> [VerifiedRecord] {
        var factory = RecordFactory(authorCount: 3, seed: 41)
        return (0..<count).map { factory.post(by: $0 % 3) }
    }

    @Test("a commit past the background limit returns before any page is copied back; the checkpointer copies them")
    func checkpointedInTheBackground() async throws {
        let disk = try DiskStore(background: 16, inline: 1_000_000)
        // Held once the checkpoints the migrations asked for have run.
        let release = await disk.checkpointer.hold()
        let before = (bytes: try disk.fileBytes(), checkpoints: disk.checkpointer.checkpoints)
        let posts = Self.posts(400)
        _ = try await disk.store.ingest(posts)
        // The commit is in the WAL, past the limit, and the writer copied nothing into the file.
        #expect(try disk.walPages() > 16)
        #expect(try disk.fileBytes() == before.bytes)
        #expect(disk.checkpointer.checkpoints == before.checkpoints)
        release()
        await disk.checkpointer.settled()
        #expect(disk.checkpointer.checkpoints.background == before.checkpoints.background + 1)
        #expect(disk.checkpointer.checkpoints.inline == before.checkpoints.inline)
        #expect(try disk.fileBytes() > before.bytes)
        #expect(try await disk.store.counts().posts == posts.count)
    }

    @Test("a WAL past the inline limit is checkpointed by the writer itself, the background being held up")
    func writerCheckpointsWhenTheBackgroundLags() async throws {
        let disk = try DiskStore(background: 16, inline: 32)
        let release = await disk.checkpointer.hold()
        defer { release() }
        let before = (bytes: try disk.fileBytes(), checkpoints: disk.checkpointer.checkpoints)
        _ = try await disk.store.ingest(Self.posts(400))
        #expect(disk.checkpointer.checkpoints.inline == before.checkpoints.inline + 1)
        #expect(disk.checkpointer.checkpoints.background == before.checkpoints.background)
        #expect(try disk.fileBytes() > before.bytes)
    }

    @Test("a store closed while a checkpoint is asked and held closes once it has run, and opens again whole")
    func closesWithACheckpointPending() async throws {
        let disk = try DiskStore(background: 16, inline: 1_000_000)
        let release = await disk.checkpointer.hold()
        let posts = Self.posts(200)
        _ = try await disk.store.ingest(posts)
        release()
        try disk.store.close()
        let again = try ContinuumStore.open(disk.directory, logger: Logger(label: "test"))
        defer { try? again.close() }
        #expect(try await again.counts().posts == posts.count)
    }
}
