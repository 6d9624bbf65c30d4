import ContinuumCore
import ContinuumMedia
import ContinuumStore
import ContinuumWire
import Crypto
import Foundation
import Logging

/// Fetches photos whose posts have arrived, one at a time, from any connected peer that has them.
///
/// Bytes go to `photos/tmp/<hash>.partial` as they arrive, with a running SHA-256; each chunk was already checked
/// against its own checksum by the frame decoder. The whole file is checked against the post's SHA-256 before it
/// is renamed into place. A broken transfer leaves the partial file, and the next request resumes from its end.
///
/// Thumbnails go first: each time it looks, the fetcher asks for the thumbnail of every missing photo that has
/// none (one THUMB_WANT each, to one peer, whatever the photo's size), then fetches photos. A thumbnail received
/// is checked and kept as provisional by the ``ThumbnailService``, which makes its own once the photo arrives.
actor PhotoFetcher {
    private let store: ContinuumStore
    private let thumbnails: ThumbnailService?
    /// Thumbnails asked for and not yet answered: from which peer, since when.
    private var thumbnailWants: [AssetHash: (peer: AuthorID, since: ContinuousClock.Instant)] = [:]
    /// Peers that said they have no thumbnail of a photo, and when (asked again after a while, or when a peer
    /// joins).
    private var thumbnailLacking: [AssetHash: [AuthorID: ContinuousClock.Instant]] = [:]
    private static let askAgainForThumbnailAfter: Duration = .seconds(10)
    /// An unanswered THUMB_WANT is forgotten after this long (and asked again).
    private static let thumbnailTimeout: Duration = .seconds(30)
    /// THUMB_WANTs outstanding at once, over all peers.
    private static let maxThumbnailWants = 64
    private let configuration: SyncConfiguration
    private let logger: Logger
    private weak var engine: SyncEngine?

    private struct Transfer {
        let hash: AssetHash
        let expected: UInt64
        let peer: AuthorID
        let handle: FileHandle
        var hasher: SHA256
        var size: UInt64
        let waiter: CheckedContinuation<Bool, Never>
        var lastProgress = ContinuousClock.now
    }

    /// A transfer with no chunk for this long is abandoned (its partial file stays, to resume later).
    private static let stallTimeout: Duration = .seconds(30)

    /// Transfers under way, at most `configuration.parallelPhotoTransfers`.
    private var transfers: [AssetHash: Transfer] = [:]
    /// Peers that said they do not have a photo, and when. A peer may get it later (from someone else), so
    /// it is asked again after a while, and at once when a peer joins.
    private var lacking: [AssetHash: [AuthorID: ContinuousClock.Instant]] = [:]
    private static let askAgainAfter: Duration = .seconds(2)
    private var skipped: Set<AssetHash> = []
    /// Photos over the size limit that a person asked for (`continuum-node fetch`).
    private var onDemand: Set<AssetHash> = []

    /// Fetches a photo whatever its size, as soon as a connected peer has it.
    func fetchOnDemand(_ hash: AssetHash) {
        onDemand.insert(hash)
        wake.yield()
    }
    private let wakes: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    init(store: ContinuumStore, configuration: SyncConfiguration, thumbnails: ThumbnailService?, logger: Logger) {
        self.store = store
        self.thumbnails = thumbnails
        self.configuration = configuration
        self.logger = logger
        (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    func attach(_ engine: SyncEngine) { self.engine = engine }

    /// Something changed (a post arrived, a peer joined): look for photos to fetch.
    func poke(peerJoined: Bool = false) {
        if peerJoined {
            lacking.removeAll()
            thumbnailLacking.removeAll()
        }
        wake.yield()
    }

    /// The fetch loop; runs for the node's lifetime.
    func run() async {
        wake.yield()
        // Photos that no connected peer had are asked for again now and then.
        let retry = Task { [wake] in
            while !Task.isCancelled {
                try? await Task.sleep(for: Self.askAgainAfter)
                wake.yield()
            }
        }
        defer { retry.cancel() }
        for await _ in wakes {
            var fetched = false
            if let engine, let missing = try? await store.missingPhotos(limit: 1000) {
                await requestThumbnails(missing, engine: engine)
                var candidates: [(MissingPhoto, AuthorID)] = []
                for photo in missing where !Task.isCancelled && transfers[photo.hash] == nil {
                    if photo.bytes > configuration.maxPhotoBytes && !onDemand.contains(photo.hash) {
                        if skipped.insert(photo.hash).inserted {
                            logger.warning(
                                "photo larger than --max-photo-mb: not fetched; its post shows without it",
                                metadata: ["photo.sha256": "\(photo.hash.short)", "photo.bytes": "\(photo.bytes)"]
                            )
                            await engine.emit(.photoSkipped(photo.hash, bytes: photo.bytes))
                        }
                        continue
                    }
                    let now = ContinuousClock.now
                    let peers = await engine.connectedPeers().filter { peer in
                        guard let when = lacking[photo.hash]?[peer] else { return true }
                        return now - when > Self.askAgainAfter
                    }
                    guard let peer = peers.first else { continue }
                    candidates.append((photo, peer))
                }
                // A few at a time: each one's fsync and rename overlap the next one's bytes.
                fetched = await withTaskGroup(of: Bool.self) { group in
                    var any = false
                    var next = candidates.makeIterator()
                    for _ in 0..<configuration.parallelPhotoTransfers {
                        guard let (photo, peer) = next.next() else { break }
                        group.addTask { await self.fetch(photo, from: peer, engine: engine) }
                    }
                    while let stored = await group.next() {
                        any = any || stored
                        if let (photo, peer) = next.next(), !Task.isCancelled {
                            group.addTask { await self.fetch(photo, from: peer, engine: engine) }
                        }
                    }
                    return any
                }
            }
            if fetched { wake.yield() }
        }
    }

    // MARK: Thumbnails

    /// Asks for the thumbnails of missing photos that have none here, ahead of any photo: a session's messages go
    /// out in order, so these THUMB_WANTs precede the PHOTO_WANTs that follow.
    private func requestThumbnails(_ missing: [MissingPhoto], engine: SyncEngine) async {
        guard let thumbnails else { return }
        let now = ContinuousClock.now
        thumbnailWants = thumbnailWants.filter { now - $0.value.since < Self.thumbnailTimeout }
        var peers: [AuthorID]?
        for photo in missing where !Task.isCancelled && thumbnailWants.count < Self.maxThumbnailWants {
            guard thumbnailWants[photo.hash] == nil, !thumbnails.hasThumbnail(photo.hash) else { continue }
            if peers == nil { peers = await engine.connectedPeers() }
            let candidates = (peers ?? []).filter { peer in
                guard let when = thumbnailLacking[photo.hash]?[peer] else { return true }
                return now - when > Self.askAgainForThumbnailAfter
            }
            guard let peer = candidates.first, let session = await engine.session(for: peer) else { continue }
            thumbnailWants[photo.hash] = (peer, now)
            await session.requestThumbnail(photo.hash)
        }
    }

    /// A THUMB_DATA frame arrived: true when this node asked that peer for it (others are dropped).
    func thumbnailArriving(_ hash: AssetHash, from peer: AuthorID) -> Bool {
        guard let want = thumbnailWants[hash], want.peer == peer else {
            logger.debug(
                "a thumbnail that was not asked for; dropped",
                metadata: ["photo.sha256": "\(hash.short)", "peer.id": "\(peer.short)"]
            )
            return false
        }
        return true
    }

    /// Checks and stores a thumbnail a peer sent. Returns why it was refused, or nil.
    func receivedThumbnail(_ hash: AssetHash, _ bytes: [UInt8], from peer: AuthorID) async -> String? {
        guard let thumbnails else { return nil }
        defer { thumbnailWants[hash] = nil }
        do {
            if try await thumbnails.storeFromPeer(bytes, for: hash), let engine {
                await engine.emit(.thumbnailArrived(hash))
            }
            return nil
        } catch let error as MediaError {
            logger.warning(
                "a peer sent a thumbnail that is not a small, whole JPEG; dropped",
                metadata: ["photo.sha256": "\(hash.short)", "peer.id": "\(peer.short)", "error": "\(error)"]
            )
            thumbnailLacking[hash, default: [:]][peer] = .now + .seconds(365 * 86_400)
            return error.message
        } catch {
            logger.error("storing a thumbnail failed", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// The peer has no thumbnail of the photo: ask another.
    func thumbnailMissing(_ hash: AssetHash, from peer: AuthorID) {
        thumbnailLacking[hash, default: [:]][peer] = .now
        if thumbnailWants[hash]?.peer == peer { thumbnailWants[hash] = nil }
        wake.yield()
    }

    private func partialURL(_ hash: AssetHash) -> URL {
        store.assets.temporaryDirectory.appendingPathComponent("\(hash.hex).partial")
    }

    /// One photo from one peer; true when it was stored.
    private func fetch(_ photo: MissingPhoto, from peer: AuthorID, engine: SyncEngine) async -> Bool {
        let url = partialURL(photo.hash)
        let manager = FileManager.default
        try? manager.createDirectory(at: store.assets.temporaryDirectory, withIntermediateDirectories: true)
        if !manager.fileExists(atPath: url.path) { _ = manager.createFile(atPath: url.path, contents: nil) }
        guard let handle = try? FileHandle(forUpdating: url) else { return false }
        // Resume: hash what is already here, then ask for the rest.
        var hasher = SHA256()
        var size: UInt64 = 0
        do {
            while let data = try handle.read(upToCount: 1 << 20), !data.isEmpty {
                hasher.update(data: data)
                size += UInt64(data.count)
            }
        } catch {
            try? handle.close()
            return false
        }
        if size > photo.bytes {
            try? handle.close()
            try? manager.removeItem(at: url)
            return false
        }
        if size > 0 {
            logger.info(
                "resuming a photo",
                metadata: ["photo.sha256": "\(photo.hash.short)", "photo.offset": "\(size)"]
            )
        }
        let stored = await withCheckedContinuation { (waiter: CheckedContinuation<Bool, Never>) in
            transfers[photo.hash] = Transfer(
                hash: photo.hash,
                expected: photo.bytes,
                peer: peer,
                handle: handle,
                hasher: hasher,
                size: size,
                waiter: waiter
            )
            let offset = size
            let hash = photo.hash
            Task {
                guard let session = await engine.session(for: peer) else {
                    // The peer left in the meantime.
                    self.abandon(hash)
                    return
                }
                await session.requestPhoto(hash, from: offset)
                // Watchdog: a request that goes unanswered does not block the fetcher.
                while self.isCurrent(hash) {
                    try? await Task.sleep(for: .seconds(5))
                    self.abandonIfStalled(hash)
                }
            }
        }
        return stored
    }

    private func isCurrent(_ hash: AssetHash) -> Bool { transfers[hash] != nil }

    private func abandon(_ hash: AssetHash) { finish(hash, false) }

    private func abandonIfStalled(_ hash: AssetHash) {
        guard let transfer = transfers[hash], ContinuousClock.now - transfer.lastProgress > Self.stallTimeout
        else { return }
        logger.warning("a photo transfer stalled; will try again", metadata: ["photo.sha256": "\(hash.short)"])
        // Another peer goes first next time.
        lacking[hash, default: [:]][transfer.peer] = .now
        finish(hash, false)
    }

    private func finish(_ hash: AssetHash, _ stored: Bool) {
        guard let transfer = transfers.removeValue(forKey: hash) else { return }
        try? transfer.handle.close()
        transfer.waiter.resume(returning: stored)
    }

    /// A chunk arrived.
    func received(_ hash: AssetHash, offset: UInt64, chunk: [UInt8], from peer: AuthorID) throws(WireError) {
        // A chunk of a transfer abandoned a moment ago may still arrive: ignore it.
        guard var transfer = transfers[hash], transfer.peer == peer else { return }
        // Posts only declare a size; the hash decides. The hard limit bounds what a peer can make us write.
        guard offset == transfer.size, transfer.size + UInt64(chunk.count) <= Limits.photoBytes else {
            finish(hash, false)
            throw WireError(.malformedFrame, "PHOTO_DATA at the wrong offset or past the photo's size")
        }
        do {
            try transfer.handle.write(contentsOf: chunk)
        } catch {
            finish(hash, false)
            return
        }
        transfer.hasher.update(data: chunk)
        transfer.size += UInt64(chunk.count)
        transfer.lastProgress = .now
        transfers[hash] = transfer
        let (size, expected) = (transfer.size, transfer.expected)
        if let engine { Task { await engine.emit(.photoProgress(hash, bytes: size, of: expected)) } }
    }

    /// The peer sent everything: check the whole file and commit it.
    func ended(_ hash: AssetHash, total: UInt64, from peer: AuthorID) async {
        guard let transfer = transfers[hash], transfer.peer == peer else { return }
        transfers[hash] = nil
        let url = partialURL(hash)
        let digest = AssetHash(unchecked: Data(transfer.hasher.finalize()))
        guard digest == hash else {
            logger.warning(
                "a photo did not match its post's SHA-256; discarded",
                metadata: ["photo.sha256": "\(hash.short)", "peer.id": "\(peer.short)"]
            )
            try? transfer.handle.close()
            try? FileManager.default.removeItem(at: url)
            // A peer that sent bytes that do not match is not asked for this photo again.
            lacking[hash, default: [:]][peer] = .now + .seconds(365 * 86_400)
            transfer.waiter.resume(returning: false)
            return
        }
        // The fsyncs happen off the actor, so that other transfers' chunks keep flowing meanwhile.
        let stored = await Self.commit(transfer.handle, url, hash, transfer.size, store, logger)
        transfer.waiter.resume(returning: stored)
        if stored, let engine {
            await engine.emit(.photoArrived(hash))
            // This node's own thumbnail, in the background; it replaces a peer's.
            thumbnails?.prepare(hash) { [weak engine] made in
                if made { await engine?.emit(.thumbnailArrived(hash)) }
            }
        }
    }

    private nonisolated static func commit(
        _ handle: FileHandle,
        _ url: URL,
        _ hash: AssetHash,
        _ size: UInt64,
        _ store: ContinuumStore,
        _ logger: Logger
    ) async -> Bool {
        defer { try? handle.close() }
        do {
            try handle.synchronize()
            try store.assets.commit(url, as: hash)
            try await store.markPhotoAvailable(hash, bytes: Int64(size))
            return true
        } catch {
            logger.error("storing a photo failed", metadata: ["error": "\(error)"])
            return false
        }
    }

    /// The peer does not have it: try another, at once (in a mesh, a post often arrives through a peer that is
    /// still fetching its photo; waiting for the next periodic look cost up to 2 s).
    func missing(_ hash: AssetHash, from peer: AuthorID) {
        lacking[hash, default: [:]][peer] = .now
        if transfers[hash]?.peer == peer { finish(hash, false) }
        wake.yield()
    }

    /// A session ended: a transfer from it stops, keeping its partial file for the next attempt.
    func peerLeft(_ peer: AuthorID) {
        for (hash, transfer) in transfers where transfer.peer == peer { finish(hash, false) }
        thumbnailWants = thumbnailWants.filter { $0.value.peer != peer }
    }
}
