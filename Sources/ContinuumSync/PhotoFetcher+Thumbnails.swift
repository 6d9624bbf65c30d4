import ContinuumCore
import ContinuumMedia
import ContinuumWire
import Foundation
import Logging

/// Thumbnails: asked for ahead of photos, checked, and kept by the ``ThumbnailService``: the author's as it is, any
/// other as provisional.
extension PhotoFetcher {
    /// Asks for the thumbnails of missing photos that have none here, ahead of any photo: a session's messages go
    /// out in order, so these THUMB_WANTs precede the PHOTO_WANTs that follow.
    /// `of`: the one peer to ask (the maker of posts that just came from it, §7.8.11 *Asking*), rather than the
    /// choice among the connected peers that share each photo, which would most often ask one that lacks it yet.
    func requestThumbnails(_ missing: [MissingPhoto], engine: SyncEngine, of only: AuthorID? = nil) async {
        guard let thumbnails else { return }
        let now = ContinuousClock.now
        // A peer that does not answer in time counts as lacking the thumbnail: another is asked next.
        for (hash, want) in thumbnailWants where now - want.since >= Self.thumbnailTimeout {
            thumbLacks.lacked(hash, by: want.peer, now: now)
            endThumbnailWant(hash)
        }
        var peers: [(peer: AuthorID, groups: Set<GroupID>)]?
        let load = transferLoad()
        for photo in missing where !Task.isCancelled && thumbnailWants.count < Self.maxThumbnailWants {
            // A small photo comes whole within moments (``SmallBatches``), and is then its thumbnail's source.
            guard photo.bytes > UInt64(WireLimits.smallPhotoBytes), thumbnailWants[photo.hash] == nil,
                !thumbnails.hasThumbnail(photo.hash)
            else { continue }
            if peers == nil, only == nil { peers = await engine.connectedPeerGroups() }
            let candidates = only.map { [$0] } ?? Self.sharing(photo, peers ?? [])
            guard let peer = choose(photo.hash, among: candidates, load: load, in: &thumbLacks),
                let session = await engine.session(for: peer),
                // Asked for meanwhile: a look and posts that arrived may ask at once, each across that await.
                thumbnailWants[photo.hash] == nil
            else { continue }
            thumbnailWants[photo.hash] = (peer, now, photo.signedThumbnail)
            await session.requestThumbnail(photo.hash)
        }
    }

    /// A THUMB_DATA frame arrived: true when this node asked that peer for it and has not had it yet (others are
    /// dropped).
    func thumbnailArriving(_ hash: AssetHash, from peer: AuthorID) -> Bool {
        guard let want = thumbnailWants[hash], want.peer == peer, !keepingThumbnails.contains(hash) else {
            logger.debug(
                "a thumbnail that was not asked for; dropped",
                metadata: ["photo.sha256": "\(hash.short)", "peer.id": "\(peer.short)"]
            )
            return false
        }
        return true
    }

    /// Checks a thumbnail a peer sent, before the session's next frame is read, and has it written behind that
    /// frame (``keepThumbnail(_:of:)``): a thumbnail's write waits for the disk's sync, and the frames that follow
    /// THUMB_WANTs' answers are the photos' chunks, which would wait for every one of them in turn. Returns why it
    /// was refused, or nil.
    func receivedThumbnail(_ hash: AssetHash, _ bytes: [UInt8], from peer: AuthorID) async -> String? {
        guard let thumbnails else { return nil }
        let checked: ThumbnailService.PeerThumbnail?
        do {
            checked = try await thumbnails.check(
                peerThumbnail: bytes,
                for: hash,
                expected: thumbnailWants[hash]?.signed
            )
        } catch {
            endThumbnailWant(hash)
            guard let error = error as? MediaError else {
                logger.failure("checking a thumbnail failed", error)
                return nil
            }
            logger.warning(
                "a peer sent a thumbnail that is not a small, whole JPEG; dropped",
                metadata: ["photo.sha256": "\(hash.short)", "peer.id": "\(peer.short)", "error": "\(error)"]
            )
            distrusted.insert(LackBook.Key(peer: peer, hash: hash))
            thumbLacks.abandonProbe(hash, by: peer)
            return error.message
        }
        thumbLacks.supplied(hash, by: peer)
        guard let checked else {
            endThumbnailWant(hash)
            return nil
        }
        // One write at a time, in the order the thumbnails came; the want stays until it is written, so that no
        // look asks for the thumbnail again meanwhile.
        keepingThumbnails.insert(hash)
        let previous = thumbnailWrites
        thumbnailWrites = Task {
            await previous?.value
            await keepThumbnail(checked, of: hash)
        }
        return nil
    }

    /// Writes a checked thumbnail (``receivedThumbnail(_:_:from:)``), and tells who waits for it.
    private func keepThumbnail(_ checked: ThumbnailService.PeerThumbnail, of hash: AssetHash) async {
        defer {
            keepingThumbnails.remove(hash)
            endThumbnailWant(hash)
        }
        do {
            if try await thumbnails?.keep(checked, for: hash) == true, let engine {
                await engine.emit(.thumbnailArrived(hash))
            }
        } catch {
            logger.failure("storing a thumbnail failed", error)
        }
    }

    /// The peer has no thumbnail of the photo: ask another.
    func thumbnailMissing(_ hash: AssetHash, from peer: AuthorID) {
        // Only an answer to a THUMB_WANT outstanding to that peer counts (others could fill the lack table).
        guard thumbnailWants[hash]?.peer == peer else { return }
        thumbLacks.lacked(hash, by: peer, now: .now)
        endThumbnailWant(hash)
        wake.yield()
    }

    /// A photo arrived from `peer` with no thumbnail asked for (a look asks for at most 64 at once): when its post
    /// signs a thumbnail (`signed`) that is not here, asks `peer`, which has just sent the photo, for it; else
    /// settles.
    func askForSignedThumbnail(_ hash: AssetHash, signed: Bool, from peer: AuthorID, engine: SyncEngine) async {
        guard signed, let thumbnails, !thumbnails.hasThumbnail(hash), let session = await engine.session(for: peer)
        else { return thumbnailSettled(hash) }
        // Asked for meanwhile (a look ran during the await): that request settles it.
        guard thumbnailWants[hash] == nil else { return }
        thumbnailWants[hash] = (peer, .now, nil)
        await session.requestThumbnail(hash)
    }

    /// The thumbnail's want ends (answered, refused, written, or timed out): it is settled.
    private func endThumbnailWant(_ hash: AssetHash) {
        thumbnailWants[hash] = nil
        thumbnailSettled(hash)
    }

    /// No thumbnail of the photo is asked for any more: when the photo is here and no thumbnail of it is this
    /// node's own (the author's, kept as signed, counts as one), this node makes one in the background, which
    /// replaces a peer's provisional one. Nothing is made while the photo is not here.
    func thumbnailSettled(_ hash: AssetHash) {
        thumbnails?.prepare(hash) { [weak engine] made in
            if made { await engine?.emit(.thumbnailArrived(hash)) }
        }
    }
}
