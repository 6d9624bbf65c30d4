import ContinuumCore
import Foundation
import Logging

/// Photos of posts that arrive live (gossip or push) from the node that made them, asked of that peer as soon as the
/// posts are verified (beside their commit) or stored, beside the looks rather than at the next one (PROTOCOL.md
/// §7.8.11, *Asking*). A look reads every live post of the store (about 70 ms at 27,000 of them), and one may be under
/// way when a post arrives: the photo of a post that just arrived would wait for it, and for the next look after it.
extension PhotoFetcher {
    /// Arrived posts read at once, at most: more, and the rest wait for the next look.
    static let maxArrivedPosts = 64

    /// What a session hands over: posts stored, or the photos of posts being stored.
    enum Arrival {
        /// Posts stored: their missing photos are read from the store.
        case posts([PostID])
        /// Photos of verified posts being stored.
        case photos([MissingPhoto])
        /// The store of the posts of photos handed over as `.photos` ended (committed or failed).
        case stored([AssetHash])
    }

    /// Posts that `peer` made came live from it and were stored: their photos missing here are asked of it at once.
    nonisolated func postsArrived(_ posts: [PostID], from peer: AuthorID) {
        arrival.yield((.posts(Array(posts.prefix(Self.maxArrivedPosts))), peer))
    }

    /// Posts that `peer` made came live from it, verified, and are being stored: their photos not here as files are
    /// asked of it at once, beside the posts' commit.
    nonisolated func photosArriving(_ photos: [MissingPhoto], from peer: AuthorID) {
        arrival.yield((.photos(Array(photos.prefix(Self.maxArrivedPosts))), peer))
    }

    /// The store of the posts whose `photos` ``photosArriving(_:from:)`` handed over ended: committed (a live post
    /// shows them now) or failed (none does). Comes after them, down the same stream.
    nonisolated func photosStored(_ photos: [MissingPhoto], from peer: AuthorID) {
        arrival.yield((.stored(photos.prefix(Self.maxArrivedPosts).map(\.hash)), peer))
    }

    /// Fetches arrived posts' photos, as they come, until the fetcher stops: small ones in a PHOTOS_WANT, the others
    /// each in a transfer of its own, counted with the queue's workers.
    func fetchArrivals() async {
        await withDiscardingTaskGroup { group in
            for await (arrival, peer) in arrivals {
                // Heard whatever else is: each hand-over's count goes as it came (``photosArriving(_:from:)``).
                if case .photos(let photos) = arrival { for photo in photos { arriving[photo.hash, default: 0] += 1 } }
                if case .stored(let hashes) = arrival {
                    postsStored(hashes)
                    continue
                }
                guard let engine else { continue }
                let missing: [MissingPhoto]
                switch arrival {
                case .posts(let posts): missing = await missingPhotos(shownBy: posts)
                case .photos(let photos):
                    // A file at the photo's name is a photo here (or one placed and about to be recorded).
                    missing = photos.filter { !FileManager.default.fileExists(atPath: store.photoURL($0.hash).path) }
                case .stored: continue
                }
                for photo in await startArrived(missing, from: peer, engine: engine) {
                    group.addTask { await self.fetchArrived(photo, from: peer, engine: engine) }
                }
            }
        }
    }

    /// The posts of arriving photos were stored (or not): the watchdog goes by what the store says again, and a
    /// transfer's stall is timed from now, its frames having waited behind the store (PHOTO_DATA read after it).
    private func postsStored(_ hashes: [AssetHash]) {
        for hash in hashes {
            guard let count = arriving[hash] else { continue }
            arriving[hash] = count > 1 ? count - 1 : nil
            transfers[hash]?.lastProgress = .now
        }
    }

    /// The photos missing here that `posts` show; none when the store cannot say (the look finds them).
    private func missingPhotos(shownBy posts: [PostID]) async -> [MissingPhoto] {
        do {
            return try await store.missingPhotos(shownBy: posts)
        } catch {
            // The look that the same batch wakes finds them.
            logger.failure("reading the photos of posts that arrived failed", error, level: .warning)
            return []
        }
    }

    /// Of the `missing` photos of posts that came from `peer`, asks it for those it may be asked for now (by the
    /// rules a look follows: not distrusted, not known to lack it, not over the size limit, not being fetched): a
    /// THUMB_WANT first where one is due, small photos in a PHOTOS_WANT, and returns the others, each marked as
    /// being fetched and counted as a worker, for a transfer of its own; those for which no worker is free are left
    /// to the look.
    private func startArrived(
        _ missing: [MissingPhoto],
        from peer: AuthorID,
        engine: SyncEngine
    ) async -> [MissingPhoto] {
        let load = transferLoad()
        var chosen: [MissingPhoto] = []
        for photo in missing where !fetching.contains(photo.hash) {
            guard photo.bytes <= configuration.maxPhotoBytes || onDemand.contains(photo.hash),
                choose(photo.hash, among: [peer], load: load, in: &photoLacks) == peer
            else { continue }
            chosen.append(photo)
        }
        guard !chosen.isEmpty else { return [] }
        await requestThumbnails(chosen, engine: engine, of: peer)
        var ownTransfers: [MissingPhoto] = []
        for photo in chosen where !fetching.contains(photo.hash) {
            if batches(photo, to: peer) {
                batches.queued[peer, default: []].insert(photo, at: 0)
            } else if workers < configuration.parallelPhotoTransfers {
                fetching.insert(photo.hash)
                workers += 1
                ownTransfers.append(photo)
            }
        }
        await sendBatches(engine)
        return ownTransfers
    }

    /// One arrived post's photo, from the peer that sent the post.
    private func fetchArrived(_ photo: MissingPhoto, from peer: AuthorID, engine: SyncEngine) async {
        defer { workers -= 1 }
        _ = await fetch(photo, from: peer, engine: engine)
        fetching.remove(photo.hash)
    }
}
