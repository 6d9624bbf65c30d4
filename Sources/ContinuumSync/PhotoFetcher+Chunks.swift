import ContinuumCore
import ContinuumWire
import Crypto
import Foundation
import Logging

/// A transfer's frames: each PHOTO_DATA chunk written to the partial file and hashed as it comes, and at PHOTO_END
/// the whole file checked against the post's SHA-256 and handed to the ``PhotoCommitter``.
extension PhotoFetcher {
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
            // The disk starts on the chunk now: by PHOTO_END most of the photo is on it, and its sync is short.
            FileWriteback.start(transfer.handle.fileDescriptor, offset: Int64(offset), length: Int64(chunk.count))
        } catch {
            finish(hash, false)
            return
        }
        transfer.hasher.update(data: chunk)
        transfer.size += UInt64(chunk.count)
        let now = ContinuousClock.now
        transfer.lastProgress = now
        let tell = now - transfer.progressTold >= Self.progressInterval
        if tell { transfer.progressTold = now }
        transfers[hash] = transfer
        let (size, expected) = (transfer.size, transfer.expected)
        if tell, let engine { Task { await engine.emit(.photoProgress(hash, bytes: size, of: expected)) } }
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
            // The bytes are discarded anyway; a file left behind is started over (it is too long or does not
            // match) and removed after a day.
            try? transfer.handle.close()
            try? FileManager.default.removeItem(at: url)
            if transfer.resumedFrom == 0 {
                // A peer that sent bytes that do not match is not asked for this photo again.
                distrusted.insert(LackBook.Key(peer: peer, hash: hash))
                photoLacks.abandonProbe(hash, by: peer)
            } else {
                // The start came from this disk (a crash may have left a bad tail, or another peer sent it): the
                // photo starts over, from any peer.
                logger.notice(
                    "a resumed photo did not match its SHA-256; starting it over",
                    metadata: ["photo.sha256": "\(hash.short)", "photo.offset": "\(transfer.resumedFrom)"]
                )
            }
            transfer.waiter.resume(returning: false)
            return
        }
        // Written, not synced. A close error loses nothing the hash did not already cover.
        try? transfer.handle.close()
        // Committed beside the session, not in its way: the session goes on reading the peer's frames (the next
        // photo's chunks) while the committer syncs this photo with any others that arrived. A session that waited
        // here held every transfer from its peer for each photo's sync and transaction, about 2.8 ms a photo. At
        // most `parallelPhotoTransfers` photos, each one this node asked for, wait there at once.
        Task { await self.commit(transfer, url: url, from: peer) }
    }

    /// Commits a checked photo (the committer's next batch), then tells the transfer's worker and asks for its
    /// signed thumbnail.
    private func commit(_ transfer: Transfer, url: URL, from peer: AuthorID) async {
        let hash = transfer.hash
        let stored = await committer.commit(url, hash, transfer.size)
        if stored {
            photoLacks.supplied(hash, by: peer)
            photoLacks.arrived(hash)
            thumbLacks.arrived(hash)
        }
        transfer.waiter.resume(returning: stored)
        if stored, let engine {
            await engine.emit(.photoArrived(hash))
            // A thumbnail asked for (the author's, most often) is awaited, and the author's is asked for now when
            // it was not yet: this node makes its own only if that request ends without one (PROTOCOL.md §7.8.11,
            // *Signed thumbnails*).
            if thumbnailWants[hash] == nil {
                await askForSignedThumbnail(hash, signed: transfer.signsThumbnail, from: peer, engine: engine)
            }
        }
    }
}
