import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation

extension PeerSession {
    /// Answers a PHOTOS_WANT: each photo that a live post of a group the session shares shows, that is here and of at
    /// most 64 KiB, whole; every other with no bytes (PROTOCOL.md §7.4.27). As many PHOTOS as needed to keep each
    /// under ``WireLimits/photosFrameBytes`` of photos, under the socket's back-pressure.
    func servePhotos(_ hashes: [AssetHash]) async {
        let given: [AssetHash: [UInt8]]
        do {
            given = try await store.givenPhotos(hashes)
        } catch {
            // None given: the peer asks another, or again later, as for photos this node does not have.
            logger.failure("reading small photos failed", error, level: .warning)
            given = [:]
        }
        var entries: [SmallPhoto] = []
        var bytes = 0
        for hash in hashes where !Task.isCancelled {
            let photo = given[hash]
            let size = photo?.count ?? 0
            if !entries.isEmpty, bytes + size > WireLimits.photosFrameBytes {
                await sendPhotos(entries, bytes: bytes)
                (entries, bytes) = ([], 0)
            }
            entries.append(SmallPhoto(hash: hash, bytes: photo))
            bytes += size
        }
        if !entries.isEmpty, !Task.isCancelled { await sendPhotos(entries, bytes: bytes) }
    }

    private func sendPhotos(_ entries: [SmallPhoto], bytes: Int) async {
        // Fault injection for tests, as for a photo's chunks; a cancelled sleep sends at once, then the loop ends.
        if let delay = configuration.photoChunkDelay { try? await Task.sleep(for: delay) }
        await outbox.waitForRoom()
        guard !closed else { return }
        machine.sentBytes(bytes)
        send(.photos(entries))
    }

    /// The bytes of a small photo the peer may have; nil when it may not, or it is not here, or it is larger.
    private func givenPhoto(_ hash: AssetHash) async -> [UInt8]? {
        guard await isShown(hash) else { return nil }
        do {
            return try await store.smallPhoto(hash)
        } catch {
            // Not given: the peer asks another, or again later, as for any photo this node does not have.
            logger.failure("reading a small photo failed", error, level: .warning)
            return nil
        }
    }

    /// Sends a photo kept in the store (not as a file) from `offset`, for a PHOTO_WANT: one PHOTO_DATA and a
    /// PHOTO_END, or PHOTO_MISSING when there is none (or the peer may not have it).
    func serveStoredPhoto(_ hash: AssetHash, from offset: UInt64) async {
        guard let photo = await givenPhoto(hash), offset <= UInt64(photo.count) else {
            send(.photoMissing(hash))
            return
        }
        let rest = Array(photo[Int(offset)...])
        if !rest.isEmpty {
            await outbox.waitForRoom()
            guard !closed else { return }
            machine.sentBytes(rest.count)
            send(.photoData(hash, offset: offset, chunk: rest))
        }
        send(.photoEnd(hash, totalBytes: UInt64(photo.count)))
    }
}
