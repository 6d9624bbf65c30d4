import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Logging

/// A store for one test: its database in memory (the default: the store's rules need no file), or on disk in a
/// fresh temporary directory for tests of what reaches the files (durability, erasure from the file's bytes). Photo
/// files go to the temporary directory either way; it is removed when the test ends.
final class TemporaryStore: Sendable {
    let directory: DataDirectory
    let store: ContinuumStore

    init(onDisk: Bool = false) throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("continuum-test-\(UUID().uuidString)")
        directory = DataDirectory(url: url)
        if onDisk {
            store = try ContinuumStore.open(directory, logger: Logger(label: "test"))
        } else {
            try directory.create()
            store = try Self.template.get().inMemoryCopy(
                assets: AssetStore(root: directory.photosURL),
                logger: Logger(label: "test")
            )
        }
    }

    /// An empty store in memory, migrated once for the whole test run: each in-memory store is a copy of it (a
    /// thousand stores of the property tests spent 22 ms each on the migrations; a copy takes about one).
    private static let template = Result {
        try ContinuumStore.inMemory(
            assets: AssetStore(
                root: FileManager.default.temporaryDirectory.appendingPathComponent("continuum-template")
            ),
            logger: Logger(label: "test")
        )
    }

    deinit {
        try? store.close()
        try? FileManager.default.removeItem(at: directory.url)
    }
}

/// Everything a person can see in a store, for comparing stores.
struct VisibleState: Equatable {
    var feed: [PostSummary] = []
    var comments: [PostID: [CommentSummary]] = [:]
    var clock = VectorClock()

    static func of(_ store: ContinuumStore, pageSize: Int = 37) async throws -> VisibleState {
        var state = VisibleState()
        var cursor: FeedCursor?
        repeat {
            let page = try await store.feed(FeedQuery(limit: pageSize, cursor: cursor))
            state.feed += page.posts
            cursor = try page.nextCursor.map { try FeedCursor(token: $0) }
        } while cursor != nil
        for post in state.feed { state.comments[post.id] = try await store.post(post.id)?.comments }
        state.clock = try await store.clock()
        return state
    }
}

extension Array {
    func chunked(by sizes: inout SplitMix64, max: Int) -> [[Element]] {
        var result: [[Element]] = []
        var index = 0
        while index < count {
            let size = Int.random(in: 1...max, using: &sizes)
            result.append(Array(self[index..<Swift.min(index + size, count)]))
            index += size
        }
        return result
    }
}

extension VerifiedRecord {
    /// The caption of a Post record.
    var caption: String? {
        if case .post(let caption, _, _) = body { caption } else { nil }
    }
}
