import ContinuumCore
import Foundation

/// Which peer is asked for a photo or thumbnail: only peers that share a group of a post that shows it, and among
/// them the least loaded, in an order that differs from photo to photo; and the lacks that hold some back, as they
/// are kept between runs.
extension PhotoFetcher {
    /// The peers whose sessions share a group of a post that shows the photo: the only ones asked for it or its
    /// thumbnail (another peer would learn the photo's hash, and could not send it anyway).
    static func sharing(_ photo: MissingPhoto, _ peers: [(peer: AuthorID, groups: Set<GroupID>)]) -> [AuthorID] {
        peers.filter { !$0.groups.isDisjoint(with: photo.groups) }.map(\.peer)
    }

    /// The first of `peers` that is `ready`, not distrusted for `hash`, and that `book` lets this node ask now.
    ///
    /// The load is spread: of the peers that may be asked, the one with the fewest of this node's transfers under way
    /// (`load`), and among those, an order that differs from photo to photo (the photo's hash mixed with the peer's
    /// id), so that a crowd's fetches of many photos do not all go to the same neighbour.
    static func choose(
        _ hash: AssetHash,
        among peers: [AuthorID],
        load: [AuthorID: Int],
        ready: Set<AuthorID>,
        distrusted: Set<LackBook.Key>,
        in book: inout LackBook,
        now: ContinuousClock.Instant
    ) -> AuthorID? {
        let order = { (peer: AuthorID) -> (Int, UInt64) in
            (load[peer] ?? 0, mix(hash.bytes, peer.bytes))
        }
        for peer in peers.sorted(by: { order($0) < order($1) })
        where ready.contains(peer) && !distrusted.contains(LackBook.Key(peer: peer, hash: hash)) {
            if book.mayAsk(hash, of: peer, now: now) { return peer }
        }
        return nil
    }

    /// A number that depends on both ids, the same in every run (FNV-1a over their bytes interleaved).
    static func mix(_ a: Data, _ b: Data) -> UInt64 {
        var value: UInt64 = 0xcbf2_9ce4_8422_2325
        for (x, y) in zip(a, b) {
            value = (value ^ UInt64(x)) &* 0x100_0000_01b3
            value = (value ^ UInt64(y)) &* 0x100_0000_01b3
        }
        return value
    }

    /// The saved lacks of one kind, as ``LackBook`` entries that come due on this run's clock (`now`, when the wall
    /// clock says `nowWall`): at most the longest back-off away, whatever the wall clock did meanwhile.
    static func entries(
        _ saved: [PeerLack],
        _ kind: PeerLack.Kind,
        nowWall: Int64,
        now: ContinuousClock.Instant
    ) -> [AssetHash: LackBook.Entry] {
        var result: [AssetHash: LackBook.Entry] = [:]
        for lack in saved where lack.kind == kind {
            let wait = Duration.milliseconds(
                min(max(0, lack.retryAt.milliseconds - nowWall), LackBook.maxRetry.nanoseconds / 1_000_000)
            )
            result[lack.hash] = LackBook.Entry(retryAt: now + wait, attempts: lack.attempts)
        }
        return result
    }

    /// A lack book's changes, as lacks of one kind to save (on the wall clock); an entry removed is saved with 0
    /// attempts, which removes it.
    static func lacks(
        _ changes: [(peer: AuthorID, hash: AssetHash, entry: LackBook.Entry?)],
        _ kind: PeerLack.Kind,
        nowWall: Int64,
        now: ContinuousClock.Instant
    ) -> [PeerLack] {
        changes.map { change in
            let wait = change.entry.map { $0.retryAt - now } ?? .zero
            return PeerLack(
                peer: change.peer,
                hash: change.hash,
                kind: kind,
                retryAt: Timestamp(milliseconds: nowWall + max(0, wait.nanoseconds / 1_000_000)),
                attempts: change.entry?.attempts ?? 0
            )
        }
    }
}
