import ContinuumCore

/// Which peers said they could not supply which photos (or thumbnails), and when to ask them again. Pure: the
/// caller passes the time, and saves what ``takeChanges()`` returns so that a restart keeps the book.
///
/// The rules, so that a reconnect costs bytes in proportion to what changed, not to what is missing:
/// - A peer with no entry for a photo is asked at once (a new peer, or a photo new to the book).
/// - A peer that lacked a photo is asked again after a back-off: 2 s, then doubling, at most 30 min.
/// - Re-asks go to a peer one at a time first (a **probe**, the newest due photo): only when the peer supplies it
///   are its other due photos asked for; when it lacks the probe too, all its due entries wait for the probe's next
///   back-off. So thousands of photos that a peer still lacks cost one request per back-off, not thousands.
/// - A peer's clock moving (news: it holds new records) makes its entries due at once, still through one probe.
public struct LackBook: Sendable {
    public struct Entry: Sendable, Hashable {
        /// When the peer may be asked again.
        public var retryAt: ContinuousClock.Instant
        /// How many times it answered that it lacks the photo.
        public var attempts: Int

        public init(retryAt: ContinuousClock.Instant, attempts: Int) {
            self.retryAt = retryAt
            self.attempts = attempts
        }
    }

    enum Probe: Hashable {
        /// A re-ask of this photo is out; others wait for its answer.
        case probing(AssetHash)
        /// The last probe was answered with the photo: due entries may all be asked.
        case open
    }

    public static let firstRetry: Duration = .seconds(2)
    public static let maxRetry: Duration = .seconds(30 * 60)

    private(set) var entries: [AuthorID: [AssetHash: Entry]] = [:]
    private var probes: [AuthorID: Probe] = [:]
    private var changed: Set<Key> = []

    public struct Key: Hashable, Sendable {
        public let peer: AuthorID
        public let hash: AssetHash

        public init(peer: AuthorID, hash: AssetHash) {
            self.peer = peer
            self.hash = hash
        }
    }

    public init() {}

    /// The back-off after `attempts` answers of "lacking".
    public static func backoff(attempts: Int) -> Duration {
        let doublings = max(0, min(attempts - 1, 20))
        return min(maxRetry, firstRetry * (1 << doublings))
    }

    /// Whether `peer` may be asked for `hash` now; a re-ask that becomes the peer's probe is recorded as such.
    public mutating func mayAsk(_ hash: AssetHash, of peer: AuthorID, now: ContinuousClock.Instant) -> Bool {
        guard let entry = entries[peer]?[hash] else { return true }
        guard entry.retryAt <= now else { return false }
        switch probes[peer] {
        case .open?: return true
        case .probing(let other)?: return other == hash
        case nil:
            probes[peer] = .probing(hash)
            return true
        }
    }

    /// The peer answered that it lacks `hash`.
    public mutating func lacked(_ hash: AssetHash, by peer: AuthorID, now: ContinuousClock.Instant) {
        let attempts = (entries[peer]?[hash]?.attempts ?? 0) + 1
        let retryAt = now + Self.backoff(attempts: attempts)
        entries[peer, default: [:]][hash] = Entry(retryAt: retryAt, attempts: attempts)
        changed.insert(Key(peer: peer, hash: hash))
        switch probes[peer] {
        case .probing(hash)?, .open?:
            // The probe failed (or an open peer lacks one again): its other due entries wait with it.
            probes[peer] = nil
            for (other, entry) in entries[peer] ?? [:] where other != hash && entry.retryAt <= now {
                entries[peer]?[other]?.retryAt = retryAt
                changed.insert(Key(peer: peer, hash: other))
            }
        default:
            break
        }
    }

    /// The peer sent `hash` (or the photo arrived from anyone): no more lack of it from that peer.
    public mutating func supplied(_ hash: AssetHash, by peer: AuthorID) {
        if case .probing(hash)? = probes[peer] { probes[peer] = .open }
        if entries[peer]?.removeValue(forKey: hash) != nil { changed.insert(Key(peer: peer, hash: hash)) }
    }

    /// The photo is here now: forget every peer's lack of it (and a probe of it, which will not be answered).
    public mutating func arrived(_ hash: AssetHash) {
        for peer in entries.keys where entries[peer]?.removeValue(forKey: hash) != nil {
            changed.insert(Key(peer: peer, hash: hash))
        }
        for (peer, probe) in probes where probe == .probing(hash) { probes[peer] = nil }
    }

    /// `peer` will not be asked for `hash` again (it sent bytes that failed their check): a probe of it ends.
    public mutating func abandonProbe(_ hash: AssetHash, by peer: AuthorID) {
        if probes[peer] == .probing(hash) { probes[peer] = nil }
    }

    /// Changes taken by ``takeChanges()`` that could not be saved: they come out again next time.
    public mutating func remark(_ keys: [Key]) {
        changed.formUnion(keys)
    }

    /// News from `peer` (its clock moved): its entries are due now, through one probe.
    public mutating func news(from peer: AuthorID, now: ContinuousClock.Instant) {
        guard let book = entries[peer] else { return }
        for (hash, entry) in book where entry.retryAt > now {
            entries[peer]?[hash]?.retryAt = now
            changed.insert(Key(peer: peer, hash: hash))
        }
        probes[peer] = nil
    }

    /// A session with the peer ended: an open probe closes (the next session probes again).
    public mutating func left(_ peer: AuthorID) {
        probes[peer] = nil
    }

    /// Entries read back from the store for `peer` (they never replace newer ones in memory).
    public mutating func load(_ loaded: [AssetHash: Entry], for peer: AuthorID) {
        for (hash, entry) in loaded where entries[peer]?[hash] == nil {
            entries[peer, default: [:]][hash] = entry
        }
    }

    /// What changed since the last call: entries to save (nil: delete).
    public mutating func takeChanges() -> [(peer: AuthorID, hash: AssetHash, entry: Entry?)] {
        defer { changed.removeAll() }
        return changed.map { ($0.peer, $0.hash, entries[$0.peer]?[$0.hash]) }
    }
}
