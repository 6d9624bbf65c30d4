import ContinuumCore
import ContinuumWire
import Crypto
import Foundation
import Logging

/// Small photos (at most 64 KiB) asked for many at once, PHOTOS_WANT, and taken whole from PHOTOS (PROTOCOL.md
/// §7.4.26–27): no transfer, partial file or file of their own; each answer is checked and recorded in one
/// transaction of the store (``PhotoStorage/commitSmallPhotos(_:)``). A peer that leaves a PHOTOS_WANT unanswered
/// (a node that does not know the message ignores it) is asked with PHOTO_WANT for the rest of its session.
struct SmallBatches {
    /// Per peer, the small photos the last look gave it, in order; sent as they fit ``maxWantsInFlight``.
    var queued: [AuthorID: [MissingPhoto]] = [:]
    /// Small photos asked for and not yet answered: of which peer, since when, and whether a post signs a thumbnail.
    var wanted: [AssetHash: (peer: AuthorID, since: ContinuousClock.Instant, signsThumbnail: Bool)] = [:]
    /// Peers that answered a PHOTOS_WANT in this session.
    var answering: Set<AuthorID> = []
    /// Peers that left one unanswered for ``silenceTimeout``: asked with PHOTO_WANT instead, until they leave.
    var silent: Set<AuthorID> = []

    /// PHOTOS_WANTs in flight to one peer, at most.
    static let maxWantsInFlight = 4
    /// How long a peer that never answered may leave a PHOTOS_WANT unanswered before it counts as not knowing it.
    static let silenceTimeout: Duration = .seconds(10)
    /// How long an answering peer may take (as a THUMB_WANT's): the photo is then asked again, of any peer.
    static let answerTimeout: Duration = .seconds(30)

    func outstanding(_ peer: AuthorID) -> Int { wanted.values.count { $0.peer == peer } }
}

extension PhotoFetcher {
    /// Whether a photo goes in a batch to `peer`: small, and the peer not known to leave PHOTOS_WANT unanswered.
    func batches(_ photo: MissingPhoto, to peer: AuthorID) -> Bool {
        photo.bytes > 0 && photo.bytes <= UInt64(WireLimits.smallPhotoBytes) && !batches.silent.contains(peer)
    }

    /// Sends PHOTOS_WANTs for the queued small photos, up to ``SmallBatches/maxWantsInFlight`` of them a peer.
    func sendBatches(_ engine: SyncEngine) async {
        expireBatchWants()
        for peer in Array(batches.queued.keys) where !Task.isCancelled {
            let perWant = configuration.photosPerWant
            var room = SmallBatches.maxWantsInFlight * perWant - batches.outstanding(peer)
            while room > 0, var queue = batches.queued[peer], !queue.isEmpty {
                var take: [MissingPhoto] = []
                while take.count < min(room, perWant), !queue.isEmpty {
                    let photo = queue.removeFirst()
                    if fetching.insert(photo.hash).inserted { take.append(photo) }
                }
                batches.queued[peer] = queue.isEmpty ? nil : queue
                guard !take.isEmpty else { continue }
                guard let session = await engine.session(for: peer) else {
                    for photo in take { fetching.remove(photo.hash) }
                    batches.queued[peer] = nil
                    break
                }
                let now = ContinuousClock.now
                for photo in take { batches.wanted[photo.hash] = (peer, now, photo.signsThumbnail) }
                room -= take.count
                await session.requestPhotos(take.map(\.hash))
            }
        }
    }

    /// Forgets wants unanswered for too long: a peer that never answered one is marked silent (it does not know
    /// PHOTOS_WANT, and is asked with PHOTO_WANT from now on); any other counts as lacking the photo for now.
    private func expireBatchWants() {
        let now = ContinuousClock.now
        for (hash, want) in batches.wanted {
            let answers = batches.answering.contains(want.peer)
            guard now - want.since >= (answers ? SmallBatches.answerTimeout : SmallBatches.silenceTimeout) else {
                continue
            }
            if !answers, batches.silent.insert(want.peer).inserted {
                logger.notice(
                    "a peer left PHOTOS_WANT unanswered; asking it for photos one by one",
                    metadata: ["peer.id": "\(want.peer.short)"]
                )
            }
            if answers { photoLacks.lacked(hash, by: want.peer, now: now) }
            batches.wanted[hash] = nil
            fetching.remove(hash)
        }
    }

    /// A PHOTOS from `peer`: each photo checked against its hash, those that match recorded in one transaction.
    func receivedPhotos(_ photos: [SmallPhoto], from peer: AuthorID) async {
        batches.answering.insert(peer)
        var good: [(hash: AssetHash, bytes: [UInt8])] = []
        var signs: [AssetHash: Bool] = [:]
        for photo in photos {
            guard let want = batches.wanted[photo.hash], want.peer == peer else { continue }
            batches.wanted[photo.hash] = nil
            guard let bytes = photo.bytes else {
                photoLacks.lacked(photo.hash, by: peer, now: .now)
                fetching.remove(photo.hash)
                continue
            }
            guard AssetHash(unchecked: Data(SHA256.hash(data: bytes))) == photo.hash else {
                logger.warning(
                    "a photo did not match its post's SHA-256; discarded",
                    metadata: ["photo.sha256": "\(photo.hash.short)", "peer.id": "\(peer.short)"]
                )
                distrusted.insert(LackBook.Key(peer: peer, hash: photo.hash))
                photoLacks.abandonProbe(photo.hash, by: peer)
                fetching.remove(photo.hash)
                continue
            }
            good.append((photo.hash, bytes))
            signs[photo.hash] = want.signsThumbnail
        }
        await commitBatch(good, signs: signs, from: peer)
        if let engine { await sendBatches(engine) }
        if batches.queued[peer] == nil, batches.outstanding(peer) == 0 { wake.yield() }
    }

    /// Records checked small photos in one transaction, then tells of each one kept and settles its thumbnail.
    private func commitBatch(
        _ good: [(hash: AssetHash, bytes: [UInt8])],
        signs: [AssetHash: Bool],
        from peer: AuthorID
    ) async {
        guard !good.isEmpty else { return }
        var kept = Array(repeating: false, count: good.count)
        do {
            kept = try await store.commitSmallPhotos(good)
        } catch {
            // Nothing recorded: the photos are asked for again at the next look.
            logger.failure("storing small photos failed", error)
        }
        for ((hash, _), stored) in zip(good, kept) {
            fetching.remove(hash)
            guard stored else { continue }
            photoLacks.supplied(hash, by: peer)
            photoLacks.arrived(hash)
            thumbLacks.arrived(hash)
            guard let engine else { continue }
            await engine.emit(.photoArrived(hash))
            if thumbnailWants[hash] == nil {
                await askForSignedThumbnail(hash, signed: signs[hash] ?? false, from: peer, engine: engine)
            }
        }
    }

    /// A session ended: its peer's small photos are asked again of any peer, and its silence is forgotten.
    func batchPeerLeft(_ peer: AuthorID) {
        for (hash, want) in batches.wanted where want.peer == peer {
            batches.wanted[hash] = nil
            fetching.remove(hash)
        }
        batches.queued[peer] = nil
        batches.answering.remove(peer)
        batches.silent.remove(peer)
    }
}
